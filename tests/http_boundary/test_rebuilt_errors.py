"""A recorded transport error replays as the class of its name in the client's library (each
argument its constructor requires the one the adapter names, else the message), as the
built-in of its name (an ``OSError`` keeping the errno its message names), or else as
``RecordedProviderError`` naming the recorded type; always with the recorded text. Every
adapter asks the one ``rebuilt_error``."""

from __future__ import annotations

import http.client
import socket
from types import SimpleNamespace

import pytest

from openprogram.errors import RecordedProviderError
from openprogram.http_boundary.clients.interface import rebuilt_error
from openprogram.recording.format import RecordedError


class PoolFailed(Exception):
    """A library's error whose constructor wants its pool before the message."""

    def __init__(self, pool: object, message: str) -> None:
        super().__init__(pool, message)
        self.pool = pool


@pytest.mark.parametrize("name", ["ConnectionRefusedError", "socket.gaierror"])
def test_an_os_error_keeps_the_errno_its_message_names(name: str) -> None:
    recorded = RecordedError(name, "[Errno 111] Connection refused")
    error = rebuilt_error(recorded, socket if "." in name else None)
    assert type(error).__name__ == name.rpartition(".")[2]
    assert isinstance(error, OSError)
    assert (error.errno, error.strerror) == (111, "Connection refused")
    assert str(error) == "[Errno 111] Connection refused"


def test_each_required_argument_is_the_one_the_adapter_names_else_the_message() -> None:
    library = SimpleNamespace(PoolFailed=PoolFailed)
    recorded = RecordedError("lib.errors.PoolFailed", "the pool is gone")
    error = rebuilt_error(recorded, library, pool="the pool")
    assert isinstance(error, PoolFailed)
    assert error.pool == "the pool"
    assert str(error) == "the pool is gone"


def test_http_clients_incomplete_read_is_rebuilt_with_no_bytes_read() -> None:
    recorded = RecordedError("http.client.IncompleteRead", "IncompleteRead(7 bytes read)")
    error = rebuilt_error(recorded, http.client, partial=b"")
    assert isinstance(error, http.client.IncompleteRead)
    assert error.partial == b""


@pytest.mark.parametrize(
    ("name", "classes"),
    [("other.Failure", None), ("lib.errors.Missing", SimpleNamespace()), ("NoSuchBuiltin", None)],
)
def test_a_type_the_library_does_not_hold_is_a_recorded_provider_error(
    name: str, classes: object
) -> None:
    error = rebuilt_error(RecordedError(name, "it failed"), classes)
    assert isinstance(error, RecordedProviderError)
    assert (error.original_type, str(error)) == (name, "it failed")


def test_a_builder_of_the_library_is_asked_for_its_own_classes_only() -> None:
    built: list[type[Exception]] = []

    def build(cls: type[Exception], message: str) -> BaseException:
        built.append(cls)
        return cls(f"built: {message}")

    library = SimpleNamespace(PoolFailed=ValueError)
    own = rebuilt_error(RecordedError("lib.PoolFailed", "m"), library, build)
    builtin = rebuilt_error(RecordedError("KeyError", "'k'"), library, build)
    assert (type(own), str(own)) == (ValueError, "built: m")
    assert type(builtin) is KeyError
    assert built == [ValueError]
