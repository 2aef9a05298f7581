"""The recording core both boundaries share: it works on JSON values, and imports no provider
type and no HTTP client. Replay has one door, ``replay_session``: a mismatch is debugged from
there (its docstring follows one request through the modules below).

    replay_session    the door to replay: ``ReplaySession``, serving a recording's calls and
                      tape entries to every boundary; ``content`` and ``order`` matching and
                      what they share; the claim a session may be given (exec's)
    content_matching  what a request is paired with a recorded call by (the incoming
                      request redacted, its comparison rules, the calls served so far), and
                      its equal among recorded calls by digest, else the nearest for the report
    tape_replay       the recording's tape entries served under replay, and the agent tools'
                      policies
    mismatch          what replay raises when a run drifts from its recording, and its wording
    report            ``FirstDifference`` and ``format_report``: the one way a drift is written
    difference        the first difference between two JSON values, the ignore rules (the
                      fields that change from run to run by default), how a value or a path is
                      shown on a report line, the names of the matchings
    multipart_bodies  where two bodies stored whole first differ: the part of a multipart
                      body that differs, or the bytes decoded
    format            the rows, the header, the format version and features; the parsed
                      form (``Recording``, ``RecordedCall``, ``RecordedError``, ``TapeEntry``);
                      what a row can hold (no inf/NaN, bounded nesting), checked before writing
    http_rows         the HTTP boundary's rows, checked field by field for the reader
    tape_rows         the tape rows, checked for the reader, and which tape covers the code
                      running now (the ``within`` of a row)
    not_recorded      the ``not_recorded`` row: connections a recorded session opened that no
                      boundary captured
    request_delta     requests stored against an earlier one: the reader's rebuild, the
                      writer's bases
    shared_lists      the lists a request shares with the ones before it, told apart by
                      their JSON text, and what replay remembers of the requests it served
    reader            the strict reader (``read_recording``, ``parse_recording``) and the one
                      door a recording's bytes are read through
    writer            ``RecordingWriter``, one per file per process: appending calls safely
                      (threads, processes, a replaced file); ``CallWriter`` for one call's rows
    open_recording    one open recording file: the header checked, a line appended under
                      the file lock, a tail a crashed writer cut off repaired, the next call
                      index read from what others appended
    rewriting         a whole recording written anew and replaced atomically (the one way
                      a recording changes other than by appending); the merged recording of
                      a run that replays what it can and records the rest
    call_digest       what of a call is compared (the fields that change from run to run
                      left out), and its digest, as the writer stores it and the transcript
                      hash takes it
    url_comparison    how an HTTP call's URL is compared: a loopback port left out, the
                      parts ``ignore_fields`` may name
    minted_ids        ids a server makes up, compared up to consistent renaming: named within
                      a call, linked across calls to the response that made each up
    redaction         credentials removed from everything written
    token_shapes      the shapes of credentials redaction finds in text, each with its kind
    wire_rules        what the core must know of the model APIs' wire (key headers and
                      shapes, conversation keys, signed tokens, per-run fields), handed down
                      as data by openprogram's package: the core never imports the vendors
    user_redaction    the user's own patterns and functions, and their fingerprint

Each boundary keeps its own codec above this package: the provider registry's
(``openprogram.provider_boundary.recorder``, ``openprogram.provider_boundary.replay``) and
HTTP's. Names are exported lazily, so importing this package imports nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
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
    "RecordingWriter": "openprogram.recording.writer",
    "ReplaySession": "openprogram.recording.replay_session",
    "SecretRedactor": "openprogram.recording.redaction",
    "encode_row": "openprogram.recording.format",
    "new_header": "openprogram.recording.format",
    "parse_recording": "openprogram.recording.reader",
    "read_recording": "openprogram.recording.reader",
}
__all__ = [*_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
