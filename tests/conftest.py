"""Test-wide guards: no real home, no network, a fresh provider runtime for every test."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.providers.registry import reset_provider_runtime
from openprogram.recording.writer import close_recording_writers

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

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


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
