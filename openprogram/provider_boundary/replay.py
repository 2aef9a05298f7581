"""Replay: a provider that answers from a recording, offline.

:class:`ReplayProvider` wraps nothing and holds no HTTP client, so an agent loop driven by it
cannot reach the network. It serves provider calls from a
:class:`~openprogram.recording.replay_session.ReplaySession`: each incoming request is
redacted with the same rules as the recording (the recorded request redacted again when the
recording's rules are older), then paired with a recorded call — by default the earliest unconsumed
provider call whose request equals it (``match="content"``), or strictly the call of the
next ``call_index`` (``match="order"``) — comparing model, then context, then options. With
no equal request it raises :class:`ReplayMismatch` naming the first difference from the
nearest unconsumed call; a mismatch consumes no call. A matched call yields the recorded
events; a recorded provider error is raised again after them, as an equivalent exception.

A session may be shared with the HTTP boundary (``ReplayProvider(path, session=session)``):
both then take their calls from one recording.

**The request as replay compares it, dumped only as far as needed.** Every request of an
agent session carries the whole conversation so far, and dumping it
(``model_dump(mode="json")``) costs more than anything else replay does with a request that
repeats a served one. :class:`PendingProviderRequest` lets replay first read the *state* of
the context's lists as JSON text: orjson walks the models' fields (each model's
``__dict__``), which costs a fraction of a dump and changes whenever any item does, a
message edited in place after it was sent included. Only when that text shows the lists
extend a served request's is the request dumped, without the items they repeat.

The state text is defined for openprogram's own message, content and tool models (their
JSON dump is exactly their fields, the field names told apart by class) and for values
orjson encodes itself; anything else (a subclass, a ``datetime``, a dataclass, a ``str``
subclass in a tool's arguments) has no state text, and the request is dumped whole."""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from openprogram.errors import RecordedProviderError, RecordingTruncatedError, ReplayMismatch
from openprogram.provider_boundary.codec import dump_request, read_recording
from openprogram.providers.events import AssistantMessageEvent
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamingProvider,
    StreamMethod,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openprogram.recording.difference import DEFAULT_MATCHING
from openprogram.recording.format import RecordedCall, RecordedError, Recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.user_redaction import UserRedaction


def rebuild_error(recorded: RecordedError) -> BaseException:
    """An exception equivalent to the recorded one: the same built-in type, or a
    :class:`RecordedProviderError` carrying the recorded type name."""
    cls = getattr(builtins, recorded.type, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(recorded.message)
        except Exception:  # a built-in whose constructor wants other arguments
            pass
    return RecordedProviderError(recorded.type, recorded.message)


class ReplayProvider(StreamingProvider):
    """Serves the provider calls of the recording at ``path``.

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields left out of the comparison. ``match``:
    ``"content"`` (default) serves each request the earliest unconsumed call whose request
    equals it; ``"order"`` the next recorded call."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        ignore_fields: Iterable[str] = (),
        match: str = DEFAULT_MATCHING,
        recording: Recording | None = None,
        session: ReplaySession | None = None,
        redaction: UserRedaction | None = None,
        tools: Mapping[str, str] | None = None,
        compare_loopback_ports: bool = False,
    ) -> None:
        """``recording``: the file as the caller already read it with ``read_recording(path)``
        (events validated), so it is not read twice. ``session``: a replay session to share
        with other boundaries (its recording read with the provider events decoded; ``path``,
        ``recording``, ``ignore_fields``, ``compare_loopback_ports``, ``match``, ``redaction``
        and ``tools`` are then the session's). ``redaction``: the user redaction applied to
        both sides of every comparison, as the recording was redacted with it. ``tools``: how
        the session's tapes treat each agent tool, by name or ``"*"`` (see
        :mod:`openprogram.recording.tape_replay`). ``compare_loopback_ports``: the session
        compares the port of an HTTP call's URL whose host is a loopback one."""
        if session is None:
            if path is None:
                raise TypeError("ReplayProvider needs the path of a recording, or a session")
            if recording is None:
                recording = read_recording(path)
            session = ReplaySession(
                recording,
                ignore_fields=ignore_fields,
                match=match,
                tools=tools,
                user_redaction=redaction,
                compare_loopback_ports=compare_loopback_ports,
            )
        elif not session.recording.events_decoded:
            raise ValueError(
                "ReplayProvider needs a session whose recording was read with its provider "
                "events decoded: openprogram.provider_boundary.codec.read_recording(path)"
            )
        self.session = session
        self.path = Path(path) if path is not None else session.path

    @property
    def recording(self) -> Recording:
        return self.session.recording

    @property
    def ignore_fields(self) -> frozenset[str]:
        """What a provider request is compared without."""
        return self.session.ignore_fields_for("provider")

    @property
    def match(self) -> str:
        """How requests are paired with recorded calls: ``content`` or ``order``."""
        return self.session.matching

    @property
    def mismatches(self) -> list[ReplayMismatch]:
        """Every mismatch raised, kept so a harness can fail a test that swallowed one."""
        return self.session.mismatches

    @property
    def calls_consumed(self) -> int:
        return self.session.calls_consumed

    @property
    def unconsumed_calls(self) -> list[int]:
        return self.session.unconsumed_calls

    def assert_consumed(self) -> None:
        """Raise :class:`UnconsumedCallsError` if recorded calls were never requested."""
        self.session.assert_consumed()

    async def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        __tracebackhide__ = True  # pytest: show the test's line, not replay's internals
        redactor = SecretRedactor.for_request(options.api_key, user=self.session.user_redaction)
        call = self.session.take(
            "provider",
            PendingProviderRequest(model, context, options),
            redactor=redactor.redact_request,
            redaction=redactor.rules,
        )
        async for event in self.serve(call):
            yield event

    async def serve(self, call: RecordedCall) -> AsyncGenerator[AssistantMessageEvent, None]:
        """The recorded events of ``call`` (a provider call of this provider's session, already
        taken), then its recorded ending: an error raised again, a cancellation, or a
        mismatch for reading past where the recorded consumer stopped."""
        __tracebackhide__ = True
        for event in call.events:
            yield event
        if call.outcome is None:
            raise self.session.keep(
                RecordingTruncatedError(str(self.path), call.call_index, len(call.events))
            )
        if call.outcome == "error" and call.error is not None:
            raise rebuild_error(call.error)
        if call.outcome == "cancelled":
            raise asyncio.CancelledError()
        if call.outcome == "abandoned":
            # The recorded consumer stopped here; this one wants more than was recorded.
            raise self.session.keep(
                ReplayMismatch(
                    call.call_index,
                    "event_index",
                    len(call.events),
                    len(call.events) + 1,
                    event_index=len(call.events),
                    detail=(
                        f"the recorded consumer stopped reading after {len(call.events)} "
                        "events; this run reads further"
                    ),
                )
            )


# --- the request as replay compares it ------------------------------------------------------


STATE_TYPES = frozenset(
    {
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        TextContent,
        ThinkingContent,
        ImageContent,
        ToolCall,
        Usage,
        Tool,
    }
)
"""The models whose state is their fields: no alias, serializer or excluded field, and no
two with the same field names, so the text of their fields tells them apart."""


_STATE_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""Values orjson would encode its own way (pydantic may dump them otherwise) go to
:func:`_fields`, which has no text for them."""


def _fields(value: object) -> dict[str, Any]:
    if type(value) in STATE_TYPES:
        return value.__dict__
    raise TypeError(f"no state text for {type(value).__name__}")


def state_text(items: list[Any]) -> bytes | None:
    """The JSON text of ``items``' state, or None when an item holds a value that has none."""
    try:
        return orjson.dumps(items, default=_fields, option=_STATE_OPTIONS)
    except TypeError:
        return None


class PendingProviderRequest:
    """One provider call's arguments, for :meth:`ReplaySession.take
    <openprogram.recording.replay_session.ReplaySession.take>`: a
    :class:`~openprogram.recording.shared_lists.DumpableRequest`."""

    __slots__ = ("context", "model", "options")

    def __init__(self, model: Model, context: Context, options: StreamOptions) -> None:
        self.model = model
        self.context = context
        self.options = options

    def list_texts(self) -> dict[str, tuple[bytes, int]] | None:
        context = self.context
        if type(context) is not Context:
            return None
        texts: dict[str, tuple[bytes, int]] = {}
        for key in ("messages", "tools"):
            items = getattr(context, key)
            if type(items) is list:
                text = state_text(items)
                if text is None:
                    return None
                texts[key] = (text, len(items))
        return texts

    def whole(self) -> dict[str, Any]:
        return dump_request(self.model, self.context, self.options)

    def without_first(self, counts: dict[str, int]) -> dict[str, Any]:
        # A shallow copy holding the lists' later items, dumped by the same schema: the
        # dump is a function of the fields' values (an ``exclude`` of the first indexes
        # would still walk every item).
        context = self.context
        later = {key: getattr(context, key)[count:] for key, count in counts.items()}
        return dump_request(self.model, context.model_copy(update=later), self.options)
