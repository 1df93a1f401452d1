"""app.core.mxnet.kubeenv: a container's environment as the kubelet gives it to the process."""

from typing import Any

import pytest

from app.core.model.errors import EnvError
from app.core.mxnet.kubeenv import expand, resolve

# The cases of kubelet v1.32's own test of its expansion
# (third_party/forked/golang/expansion/expand_test.go, doExpansionTest), run here against
# both of its mappings: one context, and the same variables split over two.
CONTEXT = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}
SPLIT = (
    {"VAR_A": "A", "VAR_EMPTY": ""},
    {"VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)"},
)
KUBELET_CASES = [
    pytest.param("$(VAR_A)", "A", id="whole-string"),
    pytest.param("$(VAR_A)-$(VAR_A)", "A-A", id="repeat"),
    pytest.param("$(VAR_A)-1", "A-1", id="beginning"),
    pytest.param("___$(VAR_B)___", "___B___", id="middle"),
    pytest.param("___$(VAR_C)", "___C", id="end"),
    pytest.param("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C", id="compound"),
    pytest.param("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A", id="escape-expand"),
    pytest.param("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)", id="compound-escape"),
    pytest.param("f000-$$VAR_A", "f000-$VAR_A", id="mixed-in-escapes"),
    pytest.param("foo\\$(VAR_C)bar", "foo\\Cbar", id="backslash-escape-ignored"),
    pytest.param("foo\\\\$(VAR_C)bar", "foo\\\\Cbar", id="backslash-escape-ignored-2"),
    pytest.param("foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar", id="lots-of-backslashes"),
    pytest.param("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))", id="nested-var-references"),
    pytest.param("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)", id="nested-var-references-second-type"),
    pytest.param("$(VAR_REF)", "$(VAR_A)", id="value-is-a-reference"),
    # Same shape, different facts: one case a pytest.param, kept apart for readable failures.
    pytest.param(
        "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%", id="value-is-a-reference-x-2"
    ),
    pytest.param("foo$(VAR_EMPTY)bar", "foobar", id="empty-var"),
    pytest.param("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!", id="unterminated-expression"),
    pytest.param("f00__(VAR_A)__", "f00__(VAR_A)__", id="expression-without-operator"),
    pytest.param("$?_boo_$!", "$?_boo_$!", id="shell-special-vars-pass-through"),
    pytest.param("$VAR_A", "$VAR_A", id="bare-operators-are-ignored"),
    pytest.param("$(VAR_DNE)", "$(VAR_DNE)", id="undefined-vars-are-passed-through"),
    pytest.param("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)", id="multiple-even-operators-var-undefined"),
    pytest.param("$$$$$$(VAR_A)", "$$$(VAR_A)", id="multiple-even-operators-var-defined"),
    pytest.param(
        "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)", id="multiple-odd-operators-var-undefined"
    ),
    pytest.param("$$$$$$$(VAR_A)", "$$$A", id="multiple-odd-operators-var-defined"),
    pytest.param("$VAR_A)", "$VAR_A)", id="missing-open-expression"),
    pytest.param("${VAR_A}", "${VAR_A}", id="shell-syntax-ignored"),
    pytest.param(
        "$(VAR_B)_______$(A", "B_______$(A", id="trailing-incomplete-expression-not-consumed"
    ),
    pytest.param(
        "$(VAR_C)_______$(",
        "C_______$(",
        id="trailing-incomplete-expression-no-content-is-not-consumed",
    ),
    pytest.param(
        "$(VAR_A)foobarzab$", "Afoobarzab$", id="operator-at-end-of-input-string-is-preserved"
    ),
    pytest.param("foo-\\$(VAR_A", "foo-\\$(VAR_A", id="shell-escaped-incomplete-expr"),
    pytest.param("--$($($($($--", "--$($($($($--", id="lots-of-in-middle"),
    pytest.param("$($($($($--foo$(", "$($($($($--foo$(", id="lots-of-in-beginning"),
    pytest.param("foo0--$($($($(", "foo0--$($($($(", id="lots-of-at-end"),
    pytest.param(
        "$(foo$$var)", "$(foo$$var)", id="escaped-operators-in-variable-names-are-not-escaped"
    ),
    pytest.param("\n", "\n", id="newline-not-expanded"),
]


@pytest.mark.parametrize(("value", "expected"), KUBELET_CASES)
def test_expansion_as_the_kubelet_does_it(value: str, expected: str) -> None:
    assert expand(value, CONTEXT) == expected
    assert expand(value, *SPLIT) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("$(NAMÉ)", "é", id="non-ascii-name"),
        pytest.param("a$(VAR_A)é", "aAé", id="non-ascii-around"),
        # Go copies the byte after a lone `$` as a code point: 0xC3 becomes U+00C3.
        pytest.param("$é", "$\u00c3\udca9", id="go-byte-quirk"),
    ],
)
def test_expansion_of_utf8(value: str, expected: str) -> None:
    assert expand(value, {"NAMÉ": "é", "VAR_A": "A"}) == expected


def ref(config_map: str, key: str, optional: bool | None = None) -> dict[str, Any]:
    selector: dict[str, Any] = {"name": config_map, "key": key}
    if optional is not None:
        selector["optional"] = optional
    return {"valueFrom": {"configMapKeyRef": selector}}


CONFIG_MAPS = {"job-config": {"data": {"cluster": '{"a":1}', "raw": "$(A)"}}}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(
            [{"name": "C", **ref("job-config", "cluster")}, {"name": "X", "value": "{$(C)}"}],
            {"C": '{"a":1}', "X": '{{"a":1}}'},
            id="configmap-then-reference",
        ),
        pytest.param(
            [{"name": "X", "value": "$(C)"}, {"name": "C", **ref("job-config", "cluster")}],
            {"X": "$(C)", "C": '{"a":1}'},
            id="reference-before-definition-is-kept",
        ),
        pytest.param(
            [{"name": "A", "value": "1"}, {"name": "R", **ref("job-config", "raw")}],
            {"A": "1", "R": "$(A)"},
            id="configmap-values-are-not-expanded",
        ),
        pytest.param(
            [{"name": "A", "value": "1"}, {"name": "A", "value": "$(A)2"}],
            {"A": "12"},
            id="redefinition-sees-the-earlier-value",
        ),
        pytest.param(
            [{"name": "E"}, {"name": "F", "value": ""}],
            {"E": "", "F": ""},
            id="empty",
        ),
        pytest.param(
            [{"name": "O", **ref("absent", "k", optional=True)}],
            {},
            id="optional-missing-configmap-is-skipped",
        ),
        pytest.param(
            [{"name": "O", **ref("job-config", "absent", optional=True)}],
            {},
            id="optional-missing-key-is-skipped",
        ),
        pytest.param(
            [{"name": "S", "value": "$(SVC_PORT)"}],
            {"S": "80", "SVC_PORT": "80"},
            id="service-variables-expand-and-follow",
        ),
    ],
)
def test_resolve(env: list[dict[str, Any]], expected: dict[str, str]) -> None:
    resolved = resolve({"env": env}, CONFIG_MAPS, {"SVC_PORT": "80"} if "S" in expected else {})
    assert resolved == expected
    assert list(resolved) == list(expected)


def test_env_from_comes_first_and_env_wins() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "job-config"}, "prefix": "P_"}],
        "env": [{"name": "P_raw", "value": "mine"}],
    }
    assert resolve(container, CONFIG_MAPS) == {"P_cluster": '{"a":1}', "P_raw": "mine"}


def test_env_from_a_later_source_wins_and_env_refers_to_any() -> None:
    maps = {
        "first": {"data": {"A": "1", "B": "1"}},
        "second": {"data": {"B": "2", "C": "$(A)"}},
    }
    container = {
        "envFrom": [{"configMapRef": {"name": "first"}}, {"configMapRef": {"name": "second"}}],
        "env": [{"name": "D", "value": "$(A)$(B)$(C)"}, {"name": "A", "value": "env"}],
    }
    # Values from a ConfigMap are not expanded; `env` reads what envFrom defined before it.
    assert resolve(container, maps) == {"A": "env", "B": "2", "C": "$(A)", "D": "12$(A)"}


def test_env_from_skips_keys_that_are_not_variable_names_and_optional_missing_maps() -> None:
    maps = {"m": {"data": {"ok": "1", "has=equals": "2", "tab\tkey": "3", "é": "4"}}}
    container = {
        "envFrom": [
            {"configMapRef": {"name": "m"}, "prefix": "P_"},
            {"configMapRef": {"name": "absent", "optional": True}},
        ]
    }
    assert resolve(container, maps) == {"P_ok": "1"}


@pytest.mark.parametrize(
    ("container", "message"),
    [
        pytest.param(
            {"env": [{"name": "C", **ref("absent", "cluster")}]},
            'env C: configmap "absent" not found',
            id="missing-configmap",
        ),
        pytest.param(
            {"env": [{"name": "C", **ref("job-config", "nope")}]},
            "env C: couldn't find key nope in ConfigMap job-config",
            id="missing-key",
        ),
        pytest.param(
            {"env": [{"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]},
            "env P: only configMapKeyRef sources are modelled",
            id="field-ref-not-modelled",
        ),
        pytest.param(
            {"envFrom": [{"configMapRef": {"name": "absent"}}]},
            'envFrom: configmap "absent" not found',
            id="missing-env-from",
        ),
        pytest.param(
            {"envFrom": [{"secretRef": {"name": "s"}}]},
            "envFrom: only configMapRef sources are modelled",
            id="secret-not-modelled",
        ),
    ],
)
def test_resolve_refuses(container: dict[str, Any], message: str) -> None:
    with pytest.raises(EnvError, match=message.replace("(", r"\(")):
        resolve(container, CONFIG_MAPS)
