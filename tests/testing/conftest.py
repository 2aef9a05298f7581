"""The ``project`` fixture: an isolated inner pytest project (see ``inner_project.py``)."""

from __future__ import annotations

import sys

import pytest

from tests.support.inner_project import InnerProject


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    inner = InnerProject(pytester)
    monkeypatch.setenv("OPENPROGRAM_HOME", str(inner.home))
    for name in (
        "CI",
        "OPENPROGRAM_ALLOW_RECORD_ON_CI",
        "OPENPROGRAM_CONFIG",
        "OPENPROGRAM_RECORD_REPLAY__MODE",
        "OPENPROGRAM_RECORD_REPLAY__FILE",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(name, raising=False)
    # Test files are rewritten between runs, sometimes within a second at the same size:
    # no cached bytecode may stand in for the new source.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return inner
