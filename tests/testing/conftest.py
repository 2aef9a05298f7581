"""The ``project`` fixture: an isolated inner pytest project (see ``inner_project.py``)."""

from __future__ import annotations

# Imported here, before any inner run: pytester removes the modules an in-process run
# imported (and the import hooks it added) when it ends, so a module imported afresh by a
# later run would hold a second state (the HTTP boundary's activations) that the patched
# httpx classes never see, or be an httpx the capture never patched.
import httpx  # noqa: F401
import pytest

import openprogram.activation.boundaries
import openprogram.http.boundary
import openprogram.http.patching
import openprogram.testing.recording_session  # noqa: F401
from tests.support.inner_project import InnerProject, isolated_inner_project


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    return isolated_inner_project(pytester, monkeypatch)
