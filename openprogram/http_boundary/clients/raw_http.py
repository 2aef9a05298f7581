"""What ``http.client`` and urllib3 share on the wire, for their two adapters: where a
request goes (:class:`TargetURL`), its whole body (:func:`whole_body`), a replayed response
(:func:`replayed_response`) and the tee of a live one (:class:`BodyTee`).

urllib3 sends and reads with ``http.client``, so a replayed response of either library is an
``http.client.HTTPResponse`` parsed from the recorded status, headers and body, no connection made:
framed by its ``content-length`` when it is served with one (a call that completed), else read as a
chunked body, so that every recorded chunk reaches the client before a recorded error."""

from __future__ import annotations

import functools
import http.client
import io
import itertools
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Protocol, TypeVar, cast

from openprogram.http_boundary.clients.interface import BodyRecorder, reason_phrase

__all__ = ["BodyTee", "TargetURL", "replayed_response", "whole_body"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TargetURL:
    """Where a urllib3 or ``http.client`` request goes: its connection's scheme, host and
    port (the tunnelled ones through a proxy), and the request target (a path, or a whole
    URL sent to a proxy)."""

    scheme: str
    host: str
    connection_port: int | None
    target: str

    @property
    def port(self) -> int | None:
        """The port, None for the scheme's default."""
        port = self.connection_port
        return None if port == _DEFAULT_PORTS.get(self.scheme) else port

    def __str__(self) -> str:
        if "://" in self.target.partition("?")[0]:
            return self.target
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None else f":{self.port}"
        target = self.target if self.target.startswith("/") else f"/{self.target}"
        return f"{self.scheme}://{host}{port}{target}"


def whole_body(body: object, text_encoding: str = "utf-8") -> bytes:
    """The bytes a client sends for ``body``: bytes as they are, a file or an iterable read
    to its end (a file up to its first empty read), text encoded as the library encodes it
    (urllib3: UTF-8; ``http.client``: ISO-8859-1)."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode(text_encoding)
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    read = getattr(body, "read", None)
    pieces: Iterable[object] = (
        itertools.takewhile(bool, iter(functools.partial(read, 65536), None))
        if callable(read)
        else cast(Iterable[object], body)
    )
    return b"".join(
        piece.encode(text_encoding) if isinstance(piece, str) else bytes(cast(bytes, piece))
        for piece in pieces
    )


def replayed_response(
    status: int,
    headers: list[tuple[str, str]],
    body: Iterator[bytes],
    *,
    method: str,
    debuglevel: int = 0,
) -> http.client.HTTPResponse:
    """The ``http.client.HTTPResponse`` that reads ``status``, ``headers`` and the chunks of
    ``body`` as a server's answer to ``method`` (with ``transfer-encoding: chunked`` added
    when no ``content-length`` frames it)."""
    chunked = all(name != "content-length" for name, _ in headers)
    lines = [f"HTTP/1.1 {status} {reason_phrase(status)}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    if chunked:
        lines.append("transfer-encoding: chunked")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    source = io.BufferedReader(_ReplayBody(head, body, chunked=chunked))
    connection = SimpleNamespace(makefile=lambda mode: source)  # all the response reads of it
    response = http.client.HTTPResponse(
        cast(socket.socket, connection), debuglevel=debuglevel, method=method
    )
    response.begin()
    return response


class _ReplayBody(io.RawIOBase):
    """A replayed response as the bytes ``http.client`` reads (under an
    ``io.BufferedReader``): ``head``, then each recorded chunk — in chunked transfer
    encoding (``chunked``), else as it is — then the end of the body, or whatever ending the
    walk of the recording raises, once the chunks before it have been read: a recorded
    ``IncompleteRead`` stops the body without its end, as the connection left it."""

    def __init__(self, head: bytes, chunks: Iterator[bytes], *, chunked: bool) -> None:
        self._chunks = chunks
        self._pending = head
        self._done = False
        self._chunked = chunked

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            try:
                piece = next(self._chunks, None)
            except http.client.IncompleteRead:
                self._done = True
                break
            if piece is None:
                self._done = True
                self._pending = b"0\r\n\r\n" if self._chunked else b""
            elif piece:
                self._pending = b"%x\r\n%s\r\n" % (len(piece), piece) if self._chunked else piece
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count


class _Closable(Protocol):
    def close(self) -> None: ...


class BodyTee:
    """The wrappers a tee puts on one response's methods: what each outermost read returns
    (when ``feeds``; else its library's inner reads feed the recorder) or raises is
    reported, the end of the body once :meth:`_ending` names one, and the client's own
    close (a read calls another; a close inside a read is that read's)."""

    feeds = True

    def __init__(self, raw: _Closable, recorder: BodyRecorder) -> None:
        self._raw = raw
        self._recorder = recorder
        self._reading = 0

    def _ending(self) -> BaseException | None:
        """What ended the body once the response is read to its end, else None."""
        raise NotImplementedError

    def reported(self, call: Callable[[], T]) -> T:
        """``call()``, one read of the body, reported when it is the outermost."""
        outermost = not self._reading
        self._reading += 1
        try:
            data = call()
        except BaseException as exc:
            if outermost:
                partial = getattr(exc, "partial", None)  # http.client's IncompleteRead
                if isinstance(exc, http.client.IncompleteRead) and isinstance(partial, bytes):
                    self._recorder.feed(partial)
                self._recorder.ended_by(exc)
            raise
        finally:
            self._reading -= 1
        if outermost:
            if self.feeds and isinstance(data, bytes) and data:
                self._recorder.feed(data)
            ending = self._ending()
            if ending is not None:
                self._recorder.ended_by(ending)
        return data

    def install(self, reads: Iterable[str], wrappers: dict[str, Callable[..., object]]) -> None:
        """Put on the response: each of its ``reads`` :meth:`reported`, ``wrappers`` (by
        method name), and the close."""
        methods = vars(self._raw)
        for name in reads:
            methods[name] = self._reporting(getattr(self._raw, name))
        methods.update(wrappers)
        close = self._raw.close

        @functools.wraps(close)
        def close_body() -> None:
            try:
                close()
            finally:
                if not self._reading:
                    self._recorder.closed()

        methods["close"] = close_body

    def _reporting(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        @functools.wraps(read)
        def read_body(*args: object, **kwargs: object) -> bytes:
            return self.reported(lambda: read(*args, **kwargs))

        return read_body
