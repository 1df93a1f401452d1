"""Golden request/response pairs: each answer compared as a whole document."""

import json

import pytest

from tests.support.golden_cases import CASES, paths, times
from tests.support.hooked import sync

NOW = times()


@pytest.mark.parametrize("name", sorted(CASES))
def test_answer_matches_golden_response(name: str) -> None:
    request_path, response_path = paths(name)
    request = json.loads(request_path.read_text())
    assert sync(request, NOW[name]) == json.loads(response_path.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_request_is_what_its_case_builds(name: str) -> None:
    request, at = CASES[name]()
    assert json.loads(paths(name)[0].read_text()) == request
    assert NOW[name] == at


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_status_is_a_fixed_point(name: str) -> None:
    request = json.loads(paths(name)[0].read_text())
    first = sync(request, NOW[name])
    request["parent"]["status"] = first["status"]
    assert sync(request, NOW[name])["status"] == first["status"]
