"""The recording core both boundaries share: it works on JSON values, and imports no provider
type and no HTTP client.

    format            the rows, the header, the format version and features; the parsed
                      form (``Recording``, ``RecordedCall``, ``RecordedError``)
    reader            the strict reader (``read_recording``, ``parse_recording``)
    request_delta     requests stored against an earlier one: what a request adds to its
                      conversation (the reader's rebuild, the writer's bases)
    call_digest       a call's digest, as the writer stores it and the transcript hash takes it
    http_rows         the HTTP boundary's rows, checked field by field for the reader
    file_door         the one door a recording's bytes are read through
    writer            ``RecordingWriter``: appending calls safely (threads, processes, a
                      replaced file); ``CallWriter`` for one call's rows
    open_recording    one open recording file: the header checked, a line appended under
                      the file lock, a tail a crashed writer cut off repaired
    next_call_index   the call index the next call takes, read from what others appended
    rewriting         a whole recording written anew and replaced atomically (the one way
                      a recording changes other than by appending)
    recordable        what a row can hold (no inf/NaN, bounded nesting), checked before writing
    redaction         credentials removed from everything written
    token_shapes      the shapes of credentials redaction finds in text, each with its kind
    user_redaction    the user's own patterns and functions, and their fingerprint
    redaction_state   whether a recording was redacted by the rules in force (compared as stored)
    difference        the first difference between two JSON values, and how a value or a path
                      is shown on a report line
    nondeterministic  the fields that change from run to run, left out of comparisons
    report            ``FirstDifference`` and ``format_report``: the one way a drift is written
    mismatch          what replay raises when a run drifts from its recording
    replay_session    ``ReplaySession``: one replay, serving calls to any boundary
    matching          how replay pairs a request with a recorded call: by content or order
    content_matching  the call a request is paired with by content: by digest, else nearest
    served_calls      which recorded calls a replay has served, and which are still open
    request_index     recorded calls by the digest of their comparable request
    served_conversations  what replay remembers of the requests it served: a conversation
                      walked once
    nearest           the nearest recorded request, for reports of requests equal to none

Each boundary keeps its own codec above this package: the provider registry's
(``openprogram.provider_boundary.recorder``, ``openprogram.provider_boundary.replay``) and HTTP's. Names are
exported lazily, so importing this package imports nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.errors import RecordingTruncatedError, ReplayMismatch, UnconsumedCallsError
    from openprogram.recording.format import (
        RECORDING_FORMAT_VERSION,
        RecordedCall,
        RecordedError,
        Recording,
        encode_row,
        new_header,
    )
    from openprogram.recording.reader import parse_recording, read_recording
    from openprogram.recording.redaction import SecretRedactor
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.writer import CallWriter, RecordingWriter

_EXPORTS: dict[str, str] = {
    "RECORDING_FORMAT_VERSION": "openprogram.recording.format",
    "CallWriter": "openprogram.recording.writer",
    "RecordedCall": "openprogram.recording.format",
    "RecordedError": "openprogram.recording.format",
    "Recording": "openprogram.recording.format",
    "RecordingTruncatedError": "openprogram.errors",
    "RecordingWriter": "openprogram.recording.writer",
    "ReplayMismatch": "openprogram.errors",
    "ReplaySession": "openprogram.recording.replay_session",
    "SecretRedactor": "openprogram.recording.redaction",
    "UnconsumedCallsError": "openprogram.errors",
    "encode_row": "openprogram.recording.format",
    "new_header": "openprogram.recording.format",
    "parse_recording": "openprogram.recording.reader",
    "read_recording": "openprogram.recording.reader",
}

__all__ = [
    "RECORDING_FORMAT_VERSION",
    "CallWriter",
    "RecordedCall",
    "RecordedError",
    "Recording",
    "RecordingTruncatedError",
    "RecordingWriter",
    "ReplayMismatch",
    "ReplaySession",
    "SecretRedactor",
    "UnconsumedCallsError",
    "encode_row",
    "new_header",
    "parse_recording",
    "read_recording",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
