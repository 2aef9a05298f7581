"""Test-wide guards: no real home, no network, a fresh provider runtime for every test."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.activation.startup import stop_configured_mode
from openprogram.providers.registry import reset_provider_runtime
from openprogram.recording.writer import close_recording_writers


def _leave_the_users_configuration() -> None:
    """The suite never runs under its user's configured record/replay mode: openprogram's
    start-up hook started this process in it before this file loaded, so it is taken off
    here; and every process the suite starts before a test sets its own home (a server of a
    module's fixture, pytest-xdist's workers) gets an empty home of the suite's, and no
    ``OPENPROGRAM_…`` variable of the user's."""
    stop_configured_mode()
    for name in list(os.environ):
        if name.upper().startswith("OPENPROGRAM_") or name.startswith("_OPENPROGRAM_EXEC_"):
            del os.environ[name]
    home = tempfile.mkdtemp(prefix="openprogram-suite-home-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    os.environ["OPENPROGRAM_HOME"] = home


_leave_the_users_configuration()


def _no_deadlines() -> None:
    """No property test has a deadline: a test's speed depends on how busy the machine is,
    and a wall-clock limit made a sound test fail when CI ran beside other work. Examples
    stay bounded by each test's own ``max_examples``. (CI's previous-SDK environment runs
    the SDK tests without hypothesis.)"""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("openprogram", deadline=None)
    settings.load_profile("openprogram")


_no_deadlines()

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


class NetworkAccessError(AssertionError):
    """A test tried to reach a host that is not this machine."""


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # an AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else None
    return isinstance(host, str) and (host in LOOPBACK_HOSTS or host.startswith("127."))


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            raise NetworkAccessError(f"test tried to connect to {address!r}")
        real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            raise NetworkAccessError(f"test tried to connect to {address!r}")
        return real_connect_ex(self, address)

    real_sendto = socket.socket.sendto
    real_sendmsg = socket.socket.sendmsg

    def guarded_sendto(self: socket.socket, data: Any, *rest: Any) -> int:
        # sendto(data, address) or sendto(data, flags, address)
        if rest and not _is_loopback(rest[-1]):
            raise NetworkAccessError(f"test tried to send a datagram to {rest[-1]!r}")
        return real_sendto(self, data, *rest)  # type: ignore[arg-type]

    def guarded_sendmsg(self: socket.socket, *args: Any) -> int:
        # sendmsg(buffers[, ancdata[, flags[, address]]]), positional only
        if len(args) > 3 and not _is_loopback(args[3]):
            raise NetworkAccessError(f"test tried to send a datagram to {args[3]!r}")
        return real_sendmsg(self, *args)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket.socket, "sendto", guarded_sendto)
    monkeypatch.setattr(socket.socket, "sendmsg", guarded_sendmsg)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("OPENPROGRAM_HOME", str(tmp_path / "openprogram-home"))
    monkeypatch.delenv("OPENPROGRAM_CONFIG", raising=False)
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "OPENPROGRAM_DEBUG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    return home


@pytest.fixture(autouse=True)
def _fresh_runtime() -> Iterator[None]:
    reset_provider_runtime()
    yield
    close_recording_writers()
    reset_provider_runtime()
