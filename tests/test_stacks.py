"""The one way tests ask for an optional stack (tests/stacks.py) holds: it skips, fails when CI requires all, and
no test file goes around it with pytest's own skip-on-import helper."""

import pathlib

import pytest
from stacks import REQUIRE_ALL_VARIABLE, needs

TESTS = pathlib.Path(__file__).resolve().parent
MISSING = "doors_gym_no_such_stack"


def test_no_test_file_skips_a_stack_around_needs():
    spelled = "importor" + "skip"  # split so that this file does not match itself
    offenders = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if path.name != "stacks.py" and spelled in path.read_text()
    ]
    assert offenders == [], f"use `from stacks import needs` instead of pytest.{spelled} in {offenders}"


def test_a_missing_stack_skips_naming_the_extra(monkeypatch):
    monkeypatch.delenv(REQUIRE_ALL_VARIABLE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=rf"{MISSING} is not installed .*pip install 'doors-gym\[test\]'"):
        needs(MISSING)


def test_a_missing_stack_fails_when_ci_requires_all(monkeypatch):
    monkeypatch.setenv(REQUIRE_ALL_VARIABLE, "1")
    with pytest.raises(pytest.fail.Exception, match=rf"{REQUIRE_ALL_VARIABLE}=1 requires every optional stack"):
        needs(MISSING)


def test_an_installed_stack_is_returned():
    assert needs("numpy").__name__ == "numpy"
