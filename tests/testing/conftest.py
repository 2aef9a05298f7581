"""The ``project`` fixture: an isolated inner pytest project (see ``inner_project.py``)."""

from __future__ import annotations

import pytest

from tests.support.inner_project import InnerProject, isolated_inner_project


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    return isolated_inner_project(pytester, monkeypatch)
