"""The HTTP boundary's switch: what the capture does, process-wide, while it is active.

The interface the ways in (``openprogram exec``, the pytest fixture, ``record_replay()``)
build on::

    from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary

    deactivate = activate_http_boundary(HttpBoundary("record", writer=writer_for(path)))
    try:
        ...  # every request sent through httpx, httpx2, urllib3 or aiohttp is recorded
    finally:
        deactivate()

* :class:`HttpBoundary` says what happens to each request sent through an httpx or httpx2
  ``Client`` / ``AsyncClient`` (or anything built on them: the ``openai`` and ``anthropic``
  SDKs) or a urllib3 connection pool (``requests``, botocore): ``record`` sends it and
  writes the exchange with ``writer`` (the one
  :func:`~openprogram.recording.writer.writer_for` the path, shared with the provider
  boundary, so both form one call sequence); ``replay`` answers it from ``session`` (a
  :class:`~openprogram.recording.replay_session.ReplaySession`, shared with the
  ``ReplayProvider``) without touching the network; ``replay_or_record`` answers it from
  ``merge``'s recording when that holds an equal unconsumed call, else sends it and records
  the exchange with ``merge``'s writer (a
  :class:`~openprogram.recording.rewriting.RecordingMerge`, shared with the provider
  registry); ``blocked`` refuses it, naming ``blocked_reason``. ``passthrough_hosts`` are
  hosts (``api.internal`` or, for one port only, ``api.internal:8443``) whose requests are
  sent as they are, in every mode;
  ``extra_headers`` are request headers stored and compared besides the ones that always are
  (``content-type``, ``anthropic-version``, ``anthropic-beta``, ``openai-beta``).
* :func:`activate_http_boundary` makes a boundary the active one for the whole process —
  every thread and every task sees it, since SDK clients often send from worker threads —
  installing the capture first if needed (:mod:`openprogram.http_boundary.patching`); it returns the
  function that deactivates it. Activations nest: the last one activated is in force, and
  they must be deactivated in the reverse order (deactivating another one raises
  ``RuntimeError``; deactivating one twice does nothing).

The configured mode (``openprogram recordings record|replay``) covers the *model layer* only: its
boundary's mode is ``model_traffic``, and its :class:`ModelLayer` says which requests are model
traffic (``covers``, asked with each request read whole) and gives the boundary that records,
replays or refuses them (``boundary``: prepared when the first one is sent, so a process that sends
none never opens its recording). Every other request is sent as it is: not recorded, not refused.

Left alone in every mode: transports that never touch the network (``MockTransport``,
``ASGITransport``, ``WSGITransport``), the passthrough hosts, and the clients of
openprogram's own vendor providers (marked with :data:`PROVIDER_CLIENT_MARK`): their calls
are recorded once, at the provider registry.

Where the boundary must stop a run — a request that differs from the recording, a blocked
boundary, a recording that cannot be written — it raises
:class:`~openprogram.recording.mismatch.RecordReplayEscape`, a ``BaseException`` carrying the
openprogram error as ``.error``, so no SDK retry loop can catch, retry or rewrap it. A replay
mismatch is also kept in the session's ``mismatches``.

Importing this module imports no HTTP client.

**One request, one call, however the client libraries stack.** A client library may send through
another one the boundary also captures: litellm's and the SDKs' aiohttp transports are httpx (or
httpx2) over aiohttp, an adapter of ``requests`` may relay through a second urllib3 pool, a
connection of urllib3 may hold an ``http.client`` one, an httpx2 transport may send with an httpx
client. Each such request is one call: the outermost library captured records, replays or refuses
it, and the layers beneath pass it through.

While a capture sends a request live (recording it, or sending what ``replay_or_record`` has not
recorded), :func:`sending_beneath` marks the context it sends from; a library's capture asked about
a request from a context so marked leaves it alone
(:func:`~openprogram.http_boundary.exchange.captures` asks :func:`handled_above`). Under replay the
outer capture answers from the recording, so the layers beneath are never reached.

The mark is a :class:`~contextvars.ContextVar`: it holds for the thread and the task that
send, and for the tasks they start while sending (asyncio copies the context into a new
task, which keeps it) — never for a request another task or thread sends meanwhile. A layer
that hands the request to a worker thread keeps the mark when it hands the context over too,
as ``asyncio.to_thread``, anyio's worker threads and ``contextvars.copy_context().run`` do;
a thread started bare (``threading.Thread``, ``ThreadPoolExecutor.submit``,
``loop.run_in_executor``) starts without it, and a captured library it sends through there
records the request again. ``requests``, urllib3 and ``http.client`` send in the calling
thread, and the transports of httpx, httpx2 and aiohttp in the calling task."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from openprogram.http_boundary.clients.interface import CapturedRequest
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.rewriting import RecordingMerge
    from openprogram.recording.user_redaction import UserRedaction
    from openprogram.recording.writer import RecordingWriter

__all__ = [
    "PROVIDER_CLIENT_MARK",
    "HttpBoundary",
    "ModelLayer",
    "activate_http_boundary",
    "active_http_boundary",
    "handled_above",
    "sending_beneath",
]

PROVIDER_CLIENT_MARK = "_openprogram_provider_client"
"""The attribute (set to True) that marks an httpx client of openprogram's own vendor
providers: the HTTP boundary leaves its requests alone."""


BoundaryMode = Literal["record", "replay", "replay_or_record", "blocked", "model_traffic"]
MODES: tuple[BoundaryMode, ...] = (
    "record",
    "replay",
    "replay_or_record",
    "blocked",
    "model_traffic",
)


@dataclass(frozen=True)
class ModelLayer:
    """The configured mode's part of the HTTP boundary: which requests are model traffic, and
    the boundary that handles them."""

    mode: Literal["record", "replay", "blocked"]
    """What the configured mode does with model traffic."""
    covers: Callable[[CapturedRequest], bool]
    """Whether a request (its body read) is model traffic."""
    boundary: Callable[[], HttpBoundary]
    """The boundary that records, replays or refuses model traffic (record, replay or
    blocked), made when the first model request is sent."""


@dataclass(frozen=True)
class HttpBoundary:
    """What the HTTP boundary does with each request while it is active."""

    mode: BoundaryMode
    writer: RecordingWriter | None = None
    """record: where the exchanges are written (replay_or_record: ``merge``'s writer)."""
    session: ReplaySession | None = None
    """replay: what requests are answered from (shared with the ``ReplayProvider``;
    replay_or_record: ``merge``'s session)."""
    merge: RecordingMerge | None = None
    """replay_or_record: what requests are answered from, or recorded into."""
    blocked_reason: str | None = None
    """blocked: why every request is refused."""
    passthrough_hosts: frozenset[str] = frozenset()
    """Hosts (``host`` or ``host:port``) whose requests are sent as they are, uncaptured."""
    extra_headers: frozenset[str] = frozenset()
    """Request headers stored and compared besides the semantic ones (never credentials)."""
    model_layer: ModelLayer | None = None
    """model_traffic: which requests are model traffic, and what handles them."""
    relays: bool = False
    """The boundary's client relays each response to a client of its own (``openprogram
    serve``), reading every byte it is given: a recorded call whose client stopped reading is
    replayed as far as it was recorded, then cut (whether the client behind would have read
    on is the client's to show), where a client of its own would be told of a mismatch."""
    destinations: set[tuple[str, int]] = field(default_factory=set, compare=False, repr=False)
    """record: the ``(host, port)`` every request the boundary saw went to — captured, or
    left to another boundary (a vendor provider's, a taped function's) or passed through —
    so that a connection to any other is reported as not recorded."""

    def __post_init__(self) -> None:
        if self.mode == "replay_or_record":
            if self.merge is None:
                raise ValueError("an HttpBoundary in replay_or_record mode needs a merge")
            object.__setattr__(self, "writer", self.merge.writer)
            object.__setattr__(self, "session", self.merge.session)
        if self.mode == "record" and self.writer is None:
            raise ValueError("an HttpBoundary in record mode needs a writer")
        if self.mode == "replay" and self.session is None:
            raise ValueError("an HttpBoundary in replay mode needs a session")
        if self.mode == "blocked" and not self.blocked_reason:
            raise ValueError("an HttpBoundary in blocked mode needs a blocked_reason")
        if self.mode == "model_traffic" and self.model_layer is None:
            raise ValueError("an HttpBoundary in model_traffic mode needs a model_layer")
        if self.mode not in MODES:
            raise ValueError(f"unknown HttpBoundary mode {self.mode!r}")
        object.__setattr__(
            self, "passthrough_hosts", frozenset(h.lower() for h in self.passthrough_hosts)
        )
        object.__setattr__(self, "extra_headers", frozenset(h.lower() for h in self.extra_headers))

    @property
    def records(self) -> bool:
        """Whether what it captures may be sent live and recorded (a request a taped
        function sends is then its tape's)."""
        layer = self.model_layer
        return self.mode == "record" or (layer is not None and layer.mode == "record")

    def saw(self, host: str, port: int | None, scheme: str) -> None:
        """Note that a request went to ``host`` on ``port`` (None: ``scheme``'s default)."""
        if self.mode != "replay":
            default = 443 if scheme in ("https", "wss") else 80
            self.destinations.add((host.lower(), port if port is not None else default))

    def passes_through(self, host: str, port: int | None) -> bool:
        """Whether a request to ``host`` (lower-case) on ``port`` (as its URL names it, None
        for the scheme's default) is sent as it is."""
        hosts = self.passthrough_hosts
        return bool(hosts) and (host in hosts or f"{host}:{port}" in hosts)

    @property
    def user_redaction(self) -> UserRedaction | None:
        """The user redaction of its recording: the writer's, or the replay session's."""
        if self.writer is not None:
            return self.writer.user_redaction
        if self.session is not None:
            return self.session.user_redaction
        return None


class _Activations:
    """The process's active boundaries, innermost last; ``current`` is read on every
    request without a lock (one attribute read)."""

    __slots__ = ("current", "lock", "stack")

    def __init__(self) -> None:
        self.current: HttpBoundary | None = None
        self.stack: list[tuple[object, HttpBoundary]] = []
        self.lock = threading.Lock()


ACTIVATIONS = _Activations()


def active_http_boundary() -> HttpBoundary | None:
    """The boundary in force, or None."""
    return ACTIVATIONS.current


def activate_http_boundary(boundary: HttpBoundary) -> Callable[[], None]:
    """Make ``boundary`` the active one for the whole process (every thread and task),
    installing the capture of the client libraries if needed; returns the function that
    deactivates it (activations are undone last first: undoing another one raises
    ``RuntimeError``, undoing one twice does nothing)."""
    from openprogram.http_boundary.patching import install_http_capture

    install_http_capture()
    token = object()
    with ACTIVATIONS.lock:
        ACTIVATIONS.stack.append((token, boundary))
        ACTIVATIONS.current = boundary

    def deactivate() -> None:
        with ACTIVATIONS.lock:
            stack = ACTIVATIONS.stack
            position = next((i for i, (t, _) in enumerate(stack) if t is token), None)
            if position is None:
                return  # already deactivated
            if position != len(stack) - 1:
                raise RuntimeError(
                    "HTTP boundaries must be deactivated in the reverse order of their "
                    f"activation: {len(stack) - 1 - position} activated later is still active"
                )
            stack.pop()
            ACTIVATIONS.current = stack[-1][1] if stack else None

    return deactivate


_SENDING: ContextVar[bool] = ContextVar("openprogram_http_sending_beneath", default=False)
"""True while a capture sends a request live through the layers beneath it."""


@contextmanager
def sending_beneath() -> Iterator[None]:
    """Mark the block as a captured request being sent live: a captured library reached
    inside it passes its request through (see :func:`handled_above`)."""
    token = _SENDING.set(True)
    try:
        yield
    finally:
        _SENDING.reset(token)


def handled_above() -> bool:
    """Whether a request sent now is one a capture above is already sending (so it is the
    layers beneath that send it, uncaptured)."""
    return _SENDING.get()
