"""What replay adds to a mismatch, and the carrier that takes an error out of an HTTP client.

The mismatch itself, :class:`~openprogram.errors.ReplayMismatch`, is defined with every other
error in :mod:`openprogram.errors`; its report (two lines, written by
:func:`openprogram.recording.report.format_report`) reads::

    replay mismatch at call 1, field context.messages[2].content[0].text:
    recorded 'echo:hi', incoming 'echo:bye'

This module writes what replay tells it beyond the first difference. When the incoming conversation
holds a tool call that received the redaction placeholder in its arguments — the recording removed a
secret-shaped value the model produced, so replay handed the tool the placeholder — a third line
says so (:func:`removed_secret_note`), as it does when the replay's user redaction is not the one
the recording was made with (:func:`other_redaction_note`). A mismatch in an HTTP call's URL says
where the request went and where the recorded one did, and what the difference suggests
(:func:`moved_url_note`): another scheme, host or port, or another start of the path before the same
endpoint, is a base URL that changed (point the client at the recorded one); another query, a
parameter to ignore or a request to re-record. A call recorded at another boundary than the incoming
one is named in a few words on both sides (:func:`other_boundary`, :func:`describe_call`), and a run
making more calls than the recording holds is a mismatch at field ``call_index``
(:func:`more_calls_than_recorded`).

At the HTTP boundary errors travel inside a :class:`RecordReplayEscape`, which derives from
:class:`BaseException` only: an SDK's retry loop (``except Exception``) would otherwise catch
the mismatch, retry the request and finally raise its own "Connection error."."""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from openprogram.errors import OpenProgramError, ReplayMismatch
from openprogram.recording.report import REPORT_LIMIT, plural
from openprogram.recording.token_shapes import PLACEHOLDER

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "RecordReplayEscape",
    "describe_call",
    "is_library_file",
    "more_calls_than_recorded",
    "moved_url_note",
    "other_boundary",
    "other_redaction_note",
    "removed_secret_note",
]


def is_library_file(filename: str) -> bool:
    """Whether a traceback frame's file is the standard library's, an installed package's
    or openprogram's own — not the program's: an error of openprogram's own (a mismatch, a
    refused connection) is shown with the program's frames only, since the dozens of frames
    of the SDK, the HTTP client and openprogram it passed through say nothing of the drift."""
    if filename.startswith("<"):
        return True
    path = os.path.realpath(filename)
    return any(path.startswith(place) for place in _library_places())


@cache
def _library_places() -> tuple[str, ...]:
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    places = {sysconfig.get_path(name) for name in names}
    places.add(str(Path(__file__).resolve().parents[1]))  # openprogram itself
    return tuple(os.path.realpath(place) + os.sep for place in places if place)


class RecordReplayEscape(BaseException):
    """Carries an openprogram error (``error``) out of code that catches :class:`Exception`.

    The HTTP boundary raises it from inside the HTTP client, where the SDKs' retry loops catch every
    ``Exception``, retry the request with back-off and wrap what they caught in their own connection
    error. Deriving from :class:`BaseException` only, this carrier passes every such loop at once
    and unchanged; its message is ``error``'s. ``error`` is a :class:`ReplayMismatch` (the run
    drifted), a ``RecordReplayBlockedError`` (record/replay is configured but could not start: no
    request may leave the machine), a ``RecordingFileError`` (the recording cannot be written) or,
    raised from ``socket.connect`` under the pytest plugin's network block, a
    ``NetworkBlockedError``. Whoever activated the boundary turns it back into ``error`` (the
    ``record_replay()`` block re-raises it, the pytest fixture fails the test with it). It is
    deliberately not an ``OpenProgramError``: that would make it an ``Exception``."""

    def __init__(self, error: OpenProgramError) -> None:
        self.error = error
        super().__init__(str(error))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.error,))


def removed_secret_note(
    incoming: dict[str, Any], earlier_calls: Sequence[RecordedCall]
) -> str | None:
    """The note for a mismatch whose conversation holds a tool call that received the
    redaction placeholder in its arguments (the first such call), or None.

    ``earlier_calls`` are the recorded calls before the mismatched one; the one whose events
    produced that tool call is named when found."""
    context = incoming.get("context")
    messages = context.get("messages") if isinstance(context, dict) else None
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if (
                isinstance(block, dict)
                and block.get("type") == "toolCall"
                and _holds_placeholder(block.get("arguments"))
            ):
                name, tool_call_id = block.get("name"), block.get("id")
                producer = _producing_call(tool_call_id, earlier_calls)
                call = "" if producer is None else f", call {producer}"
                return (
                    f"tool call {name} (id {tool_call_id}{call}) received {PLACEHOLDER!r} in "
                    "its arguments: the recording removed a secret-shaped value the model "
                    "produced"
                )
    return None


def _holds_placeholder(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if PLACEHOLDER in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _producing_call(tool_call_id: Any, calls: Sequence[RecordedCall]) -> int | None:
    """The recorded call whose ``toolcall_end`` event carries ``tool_call_id``."""
    for call in reversed(calls):
        for row in call.event_rows:
            tool_call = row.get("tool_call") if row.get("type") == "toolcall_end" else None
            if isinstance(tool_call, dict) and tool_call.get("id") == tool_call_id:
                return call.call_index
    return None


def other_redaction_note(header: dict[str, Any], user: UserRedaction | None) -> str | None:
    """The note for a mismatch in a replay whose user redaction, ``user``, is not the one
    the recording with ``header`` was made with (its ``redaction_fingerprint``), or None."""
    recorded = header.get("redaction_fingerprint")
    current = None if user is None else user.fingerprint
    if recorded == current:
        return None
    made = f"user redaction {recorded}" if recorded else "no user redaction"
    now = f"user redaction {current} ({', '.join(user.names)})" if user else "none"
    return (
        f"the recording was made with {made} and this replay has {now}: replay with "
        "the redaction patterns and functions it was recorded with"
    )


def describe_call(boundary: str, request: dict[str, Any]) -> str:
    """A call in a few words for a report: ``an HTTP call (POST https://…)`` or ``a provider
    call (openai-completions:gpt-4o)``."""
    if boundary == "http":
        target = f"{request.get('method')} {request.get('url')}"
        return f"an HTTP call ({_short(target)})"
    model = request.get("model")
    model = model if isinstance(model, dict) else {}
    label = f"{model.get('api')}:{model.get('id')}"
    return f"a provider call ({_short(label)})"


def _short(text: str) -> str:
    """``text`` on one line, cut after the report's limit."""
    line = " ".join(text.split())
    return line if len(line) <= REPORT_LIMIT else line[:REPORT_LIMIT] + "…"


def more_calls_than_recorded(index: int, recorded: int) -> ReplayMismatch:
    """The mismatch for incoming call ``index`` of a run that makes more calls than the
    ``recorded`` ones the recording holds."""
    return ReplayMismatch(
        index,
        "call_index",
        recorded,
        index,
        detail=(
            f"recorded {plural(recorded, 'call')} (0..{recorded - 1}), incoming call "
            f"{index}: the run makes more calls than the recording holds"
            if recorded
            else f"the recording holds no calls, incoming call {index}"
        ),
    )


def other_boundary(call: RecordedCall, boundary: str, incoming: dict[str, Any]) -> ReplayMismatch:
    """The mismatch for a request of ``boundary`` (``incoming``, redacted) paired with
    ``call``, recorded at another boundary: both named in a few words."""
    return ReplayMismatch(
        call.call_index,
        "boundary",
        call.boundary,
        boundary,
        detail=(
            f"recorded {describe_call(call.boundary, call.request)}, incoming "
            f"{describe_call(boundary, incoming)}: the run reaches the model through "
            "another boundary than the recorded run did"
        ),
    )


def moved_url_note(recorded: Any, incoming: Any, *, compare_loopback_ports: bool = False) -> str:
    """The note for a mismatch in the URL of an HTTP call that went to ``incoming`` where
    the recorded one went to ``recorded`` (both redacted): the two URLs, and the fix their
    difference suggests (see the module's docstring). ``compare_loopback_ports``: replay
    compares a loopback server's port, so the note names that setting when a local server
    that moved to another port is the cause."""
    went = f"the request went to {_short(str(incoming))}, the recording has {_short(str(recorded))}"
    if not isinstance(recorded, str) or not isinstance(incoming, str):
        return f"{went}: if the change is intended, re-record"
    old, new = urlsplit(recorded), urlsplit(incoming)
    old_base, new_base = _bases(old.path, new.path)
    if (old.scheme, old.netloc) != (new.scheme, new.netloc) or old_base != new_base:
        recorded_base = f"{old.scheme}://{old.netloc}{'' if old_base is None else old_base}"
        advice = (
            f"{went}: the base URL changed; point the client at the recorded base URL "
            f'({_short(recorded_base)}), replay with ignore_fields=["url"] (or "url.port", '
            '"url.host") if only the server moved, or re-record'
        )
        if compare_loopback_ports and (old.scheme, old.hostname) == (new.scheme, new.hostname):
            advice += "; compare_loopback_ports is set, so a local server's port is compared"
        return advice
    if old.path == new.path:
        return (
            f"{went}: the query changed; replay with a parameter that changes from run to "
            'run ignored (ignore_fields=["url.query.<name>"]), or re-record'
        )
    return f"{went}: another endpoint; if the change is intended, re-record"


def _bases(recorded_path: str, incoming_path: str) -> tuple[str | None, str | None]:
    """Each path without the last segments both end with (the endpoint a client appends to
    its base URL); (None, None) when they end differently: no base URL to tell apart."""
    old, new = recorded_path.split("/"), incoming_path.split("/")
    shared = 0
    while shared < min(len(old), len(new)) and old[-1 - shared] == new[-1 - shared]:
        shared += 1
    if shared == 0:
        return None, None
    return "/".join(old[: len(old) - shared]), "/".join(new[: len(new) - shared])
