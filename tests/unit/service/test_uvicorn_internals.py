"""The uvicorn internals app/service/server.py builds its connection deadlines on (its
UVICORN_METHODS and UVICORN_ATTRIBUTES), checked against the uvicorn installed: an upgrade that
renames, removes or re-signs any of them fails here, not in production."""

import inspect

import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.service import server


@pytest.mark.parametrize(
    ("owner", "name", "parameters"),
    [
        pytest.param(owner, name, params, id=f"{owner.__name__}.{name}")
        for owner, methods in server.UVICORN_METHODS.items()
        for name, params in methods.items()
    ],
)
def test_each_method_relied_on_is_there_with_its_parameters(
    owner: type, name: str, parameters: tuple[str, ...]
) -> None:
    method = getattr(owner, name, None)
    assert callable(method), f"uvicorn's {owner.__name__} has no {name}"
    found = tuple(inspect.signature(method).parameters)[1:]
    assert found == parameters, f"{owner.__name__}.{name}{found}"


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        pytest.param(owner, name, id=f"{owner.__name__}.{name}")
        for owner, names in server.UVICORN_ATTRIBUTES.items()
        for name in names
    ],
)
def test_each_attribute_relied_on_is_set_by_uvicorn(owner: type, name: str) -> None:
    """An instance attribute: the class's own code assigns it (a rename would not)."""
    source = "".join(
        inspect.getsource(c) for c in owner.__mro__ if c.__module__.startswith("uvicorn")
    )
    assert f"self.{name} = " in source or f"self.{name}: " in source, f"{owner.__name__}.{name}"


def test_the_deadline_classes_override_only_what_is_listed() -> None:
    """What the two protocols of server.py override from uvicorn is all in the list."""
    for ours, theirs in ((server.HttpToolsDeadlines, HttpToolsProtocol),
                         (server.H11Deadlines, H11Protocol)):  # fmt: skip
        overridden = {
            name for klass in (ours, server.Deadlines) for name in vars(klass)
            if callable(vars(klass)[name]) and hasattr(theirs, name) and not name.startswith("__")
        }  # fmt: skip
        assert overridden <= set(server.UVICORN_METHODS[theirs]), overridden
