"""An inner pytest project for the plugin's tests: agent test files on the echo model.

The inner runs use the plugin as a user gets it (loaded through its entry point), with
pytest-asyncio in auto mode, without unrelated plugins, ``OPENPROGRAM_HOME`` inside the project,
``CI`` unset, and every socket refused.
"""

from __future__ import annotations

import contextlib
import importlib
import stat
import sys
from pathlib import Path
from textwrap import dedent

import pytest

# An in-process inner run ends by removing every module it imported (and the import hooks it
# added). A module first imported inside one would be imported afresh by a later test: a second
# httpcore whose errors the first httpx no longer maps, or a second HTTP boundary state the
# patched client classes never see. Everything an inner run may import first is imported here.
KEPT_LOADED = (
    "httpcore",
    "httpx",
    "httpcore2",
    "httpx2",
    "openai",
    "anthropic",
    "openprogram.activation.boundaries",
    "openprogram.http_boundary.boundary",
    "openprogram.http_boundary.patching",
    "openprogram.testing.recording_session",
)
for _name in KEPT_LOADED:
    # A library this environment lacks (httpx2 beside the previous SDKs) is simply skipped.
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)

INNER_INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""

LIVE_MODEL = """\
from openprogram.providers import EchoProvider, register_api_provider

LIVE_CALLS = []


class LiveModel(EchoProvider):
    \"\"\"Stands for a vendor's model: every call it answers is a live one.\"\"\"

    def stream_simple(self, model, context, options=None):
        LIVE_CALLS.append(model.api)
        return super().stream_simple(model, context, options)


register_api_provider("live", LiveModel())
"""
"""Inner-test source registering the provider API ``live``, an echo model that stands for a
vendor's: ``LIVE_CALLS`` lists the api of every call it answered live (empty under replay)."""

NO_SOCKETS_CONFTEST = """\
import socket

import pytest


@pytest.fixture(autouse=True)
def _no_sockets(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("sockets are disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
"""

AGENT_HELPERS = """\
import asyncio

import pytest

from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple


async def ask(text):
    reply = await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=text)]))
    return reply.text

"""


# Plugins this machine may have that the inner runs do not need: they only cost start-up
# time (hypothesis's alone takes seconds) or, like pytest-benchmark, interfere.
UNRELATED_PLUGINS_OFF = (
    *("-p", "no:benchmark"),
    *("-p", "no:hypothesispytest"),
    *("-p", "no:anyio"),
    *("-p", "no:platformdirs"),
)


class InnerProject:
    """A pytest project in ``pytester.path`` whose tests live in ``tests/``."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.root = pytester.path
        self.home = self.root / "openprogram-home"
        (self.root / "pytest.ini").write_text(INNER_INI)
        self.write("conftest.py", NO_SOCKETS_CONFTEST)

    def write(self, name: str, source: str) -> Path:
        path = self.root / "tests" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        return path

    def write_tests(self, source: str, name: str = "test_agent.py") -> Path:
        """A test module: the ``ask(text)`` helper, then ``source``."""
        return self.write(name, AGENT_HELPERS + dedent(source))

    def recording(self, module: str, test: str) -> Path:
        return self.root / "tests" / "recordings" / module / f"{test}.jsonl"

    def run(self, *args: str, subprocess: bool = False) -> pytest.RunResult:
        arguments = (*UNRELATED_PLUGINS_OFF, *args)
        if subprocess:
            return self.pytester.runpytest_subprocess(*arguments, timeout=300)
        return self.pytester.runpytest(*arguments)


ENVIRONMENT_CLEARED = (
    "CI",
    "OPENPROGRAM_ALLOW_RECORD_ON_CI",
    "OPENPROGRAM_CONFIG",
    "OPENPROGRAM_RECORD_REPLAY__MODE",
    "OPENPROGRAM_RECORD_REPLAY__FILE",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
)
"""Variables the outer run may have set that would change how the inner runs behave."""


def isolated_inner_project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> InnerProject:
    """An inner project with ``OPENPROGRAM_HOME`` inside it, none of
    :data:`ENVIRONMENT_CLEARED` set, and no cached bytecode standing in for test files
    rewritten between runs (sometimes within a second at the same size)."""
    inner = InnerProject(pytester)
    monkeypatch.setenv("OPENPROGRAM_HOME", str(inner.home))
    for name in ENVIRONMENT_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return inner


def file_mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def literal(text: str) -> str:
    """``text`` as an ``fnmatch`` pattern matching itself (``[`` opens a set there)."""
    return text.replace("[", "[[]")
