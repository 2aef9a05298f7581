"""``recordings scan``: the secrets a recording still holds, found by the rules replay applies.

A recording is redacted as it is written, by the rules of its time. :func:`scan_recording`
redacts every row again, exactly as the recorder redacts it today — the request as
configuration and conversation, events as model output, an HTTP response's headers as
configuration, an error's message as text; by the built-in rules, the credentials this
process knows (its environment's keys) and the user redaction given — and reports every
value that would change: ``file:line: call N, field PATH: kind``. It then joins the pieces
of each streamed block (:func:`~openprogram.vendors.streamed_blocks`) and redacts the
text they make together, which finds a credential a model streamed cut across deltas
(``field event[3..5].delta``). Tape entries (what taped functions and agent tools took and
gave) are redacted as the tapes write them — arguments as configuration, results and error
messages as content — and reported as ``file:line: tape NAME[i], field PATH: kind``.

With ``fix=True`` the recording is rewritten through
:func:`~openprogram.recording.rewriting.rewrite_recording` (atomically, refused if another writer
appended meanwhile) with every finding replaced: each row as the recorder would write it now, and
each streamed block's pieces holding the block's redacted text (a credential cut across deltas: the
placeholder in the piece where it started, the rest of it gone from the pieces after;
:func:`respread`: what did not change stays in the piece it was in, so the pieces still make exactly
the redacted text). The header then says ``redaction_version`` of today and, when a user redaction
was used, its ``redaction_fingerprint``. Only rules replay applies are used — it redacts both sides
of every comparison with them — so a fixed recording still replays (with the same user redaction).

A finding names a field by the path of its *redacted* form, so nothing printed holds the
secret. Kinds: the token shapes' (``github-token``, ``jwt``, … see
:mod:`~openprogram.recording.token_shapes`), ``known-credential`` (a value of this process's
credential variables), ``secret-field`` (a secret-named field of configuration),
``user-pattern`` and ``user-redactor``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.errors import RecordingFileError
from openprogram.http_boundary.codec import without_stale_raw
from openprogram.http_boundary.eventstream import with_agreeing_bytes
from openprogram.provider_boundary.codec import read_for_replay
from openprogram.recording.difference import join_field_path
from openprogram.recording.format import RecordedCall, RecordedError, TapeEntry
from openprogram.recording.redaction import REDACTION_VERSION, SecretRedactor, is_secret_field_name
from openprogram.recording.rewriting import rewrite_recording
from openprogram.recording.token_shapes import TOKEN_SHAPES
from openprogram.recording.user_redaction import substitute_pattern
from openprogram.store.names import is_path_argument, resolve_recording
from openprogram.vendors import streamed_blocks
from openprogram.vendors.openprogram_events import DELTA_EVENTS
from openprogram.vendors.reply import Piece

if TYPE_CHECKING:
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "DEFAULT_FOLDER",
    "Finding",
    "RecordingScan",
    "ScanReport",
    "Stretch",
    "redacted_call",
    "respread",
    "scan_recording",
    "scan_recordings",
    "scan_targets",
]

DEFAULT_FOLDER = Path("tests") / "recordings"
"""What is scanned without a path, when it exists under the current folder (else the
store): where the pytest fixture keeps its recordings."""

# A stretch of unchanged text shorter than this between two changed ones joins them: the
# placeholder's letters can line up with single letters of what it replaced.
_JOIN_GAP = 4
_HEADER_STRUCTURE = frozenset({"type", "format_version", "features", "redaction_version"})


@dataclass(frozen=True)
class Finding:
    """One secret: where it is (file, line, call, field) and what kind it is."""

    path: Path
    line: int
    call_index: int | None
    """None: in the header, or in a tape entry."""
    field: str
    kind: str
    tape: str | None = None
    """The tape entry it is in (``clock[3]``), or None for the header and calls."""

    def __str__(self) -> str:
        if self.tape is not None:
            where = f"tape {self.tape}"
        else:
            where = "header" if self.call_index is None else f"call {self.call_index}"
        return f"{self.path}:{self.line}: {where}, field {self.field}: {self.kind}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "line": self.line,
            "call": self.call_index,
            "tape": self.tape,
            "field": self.field,
            "kind": self.kind,
        }


@dataclass
class RecordingScan:
    """What the scan of one recording found, and whether it was fixed."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    fixed: bool = False


@dataclass
class ScanReport:
    """The scan of several recordings: what was found (and replaced), what could not be read."""

    scanned: list[Path]
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    """Findings replaced in place (``fix``)."""
    unreadable: list[RecordingFileError] = field(default_factory=list)
    """One error for each recording that could not be read (or rewritten)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "scanned": [str(path) for path in self.scanned],
            "findings": [finding.to_json() for finding in self.findings],
            "fixed": self.fixed > 0,
            "unreadable": len(self.unreadable),
        }


def scan_recordings(
    paths: list[Path], *, user: UserRedaction | None = None, fix: bool = False
) -> ScanReport:
    """:func:`scan_recording` for each of ``paths``; a recording that cannot be read is
    reported in :attr:`ScanReport.unreadable` and the others are still scanned."""
    report = ScanReport(list(paths))
    for path in paths:
        try:
            result = scan_recording(path, user=user, fix=fix)
        except RecordingFileError as error:
            report.unreadable.append(error)
            continue
        report.findings.extend(result.findings)
        report.fixed += len(result.findings) if result.fixed else 0
    return report


@dataclass(frozen=True)
class _Spot:
    """A finding before its line is known: the row (request, an event, the end)."""

    call_index: int | None
    row: str
    """``header``, ``request``, ``event`` or ``end``."""
    event: int
    field: str
    kind: str


def scan_recording(
    path: Path, *, user: UserRedaction | None = None, fix: bool = False
) -> RecordingScan:
    """Scan the recording at ``path`` (see the module's docstring); ``user``: the user
    redaction to apply too. Raises :class:`~openprogram.errors.RecordingFileError` for a
    file that cannot be read as a recording, or (``fix``) rewritten."""
    try:
        before = os.stat(path)  # before reading: a call appended after it stops the fix
    except OSError as error:
        raise RecordingFileError(
            str(path),
            f"cannot read it ({error.strerror or error})",
            advice="check the path names a recording",
        ) from None
    recording = read_for_replay(path)  # refused as every other command refuses it
    redactor = SecretRedactor(user=user)
    spots: list[_Spot] = []
    header = _scan_header(recording.header, redactor, spots)
    calls = [_scan_call(call, redactor, spots) for call in recording.calls]
    tape_findings: list[Finding] = []
    tapes = [_scan_tape_entry(path, entry, redactor, tape_findings) for entry in recording.tapes]
    result = RecordingScan(path)
    if not spots and not tape_findings:
        return result
    findings = _located(path, spots) + tape_findings
    findings.sort(key=lambda finding: finding.line)
    result.findings = findings
    if fix:
        header["redaction_version"] = REDACTION_VERSION
        if user is not None:
            header["redaction_fingerprint"] = user.fingerprint
        rewrite_recording(
            path, header, calls, tapes=tapes, not_recorded=recording.not_recorded, expected=before
        )
        result.fixed = True
    return result


def scan_targets(arguments: list[str], *, cwd: Path, store: Path) -> list[Path]:
    """The recordings to scan: each argument a recording file, a folder (every ``*.jsonl`` under it,
    at any depth, hidden ones left out) or a recording name in the store; none: every recording
    under ``tests/recordings`` of ``cwd`` when that folder exists (named relative to ``cwd``), else
    in the store. Files and folders keep the spelling they were given, so findings name them as the
    user (or pre-commit) did. Raises ``RecordingNameError`` for an invalid name."""
    if not arguments:
        folder = cwd / DEFAULT_FOLDER
        if folder.is_dir():
            return [path.relative_to(cwd) for path in _recordings_under(folder)]
        return _recordings_under(store)
    targets: list[Path] = []
    for argument in arguments:
        candidate = Path(argument).expanduser()
        if candidate.is_dir():
            targets.extend(_recordings_under(candidate))
        elif is_path_argument(argument):
            targets.append(candidate)
        else:
            targets.append(resolve_recording(argument, store).path)
    return list(dict.fromkeys(targets))


def _recordings_under(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        path
        for path in folder.rglob("*.jsonl")
        if path.is_file()
        and not path.is_symlink()
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    )


def _scan_header(header: dict[str, Any], redactor: SecretRedactor, spots: list[_Spot]) -> Any:
    metadata = {key: value for key, value in header.items() if key not in _HEADER_STRUCTURE}
    redacted = redactor.redact(metadata)
    _note(None, "header", 0, "", metadata, redacted, redactor, spots)
    return {**header, **redacted}


def redacted_call(call: RecordedCall, redactor: SecretRedactor) -> RecordedCall:
    """A copy of ``call`` as the recorder would write it now with ``redactor``: every value
    :func:`scan_recording` would report replaced (a call redacted so already is unchanged)."""
    return _scan_call(call, redactor, [])


def _scan_call(call: RecordedCall, redactor: SecretRedactor, spots: list[_Spot]) -> RecordedCall:
    """The call with every finding replaced (its findings noted in ``spots``)."""
    index = call.call_index
    if call.boundary == "http":
        request = redactor.redact_http_request(call.request)
    else:
        request = redactor.redact_request(call.request)
    _note(index, "request", 0, "", call.request, request, redactor, spots)
    rows: list[dict[str, Any]] = []
    for position, row in enumerate(call.event_rows):
        redacted = _redacted_event(row, redactor)
        _note(index, "event", position, f"event[{position}]", row, redacted, redactor, spots)
        rows.append(redacted)
    fixed = replace(call, request=request, event_rows=rows, events=[])
    for block in streamed_blocks(fixed):
        _scan_block(fixed, block, redactor, spots)
    fixed.event_rows = [  # an AWS event-stream message: its bytes hold what its data holds;
        # an event's raw text is dropped where anything of it was redacted (replay then
        # serves the redacted value re-serialized)
        with_agreeing_bytes(row)
        if row.get("type") == "eventstream"
        else without_stale_raw(recorded, row)
        for recorded, row in zip(call.event_rows, fixed.event_rows, strict=True)
    ]
    error = call.error
    if error is not None:
        message = redactor.redact_text(error.message)
        _note(index, "end", 0, "error.message", error.message, message, redactor, spots)
        reason = error.reason
        if reason is not None:
            reason = redactor.redact_text(error.reason or "")
            _note(index, "end", 0, "error.reason", error.reason, reason, redactor, spots)
        fixed.error = RecordedError(error.type, message, reason)
    return fixed


def _scan_tape_entry(
    path: Path, entry: TapeEntry, redactor: SecretRedactor, findings: list[Finding]
) -> TapeEntry:
    """The entry redacted as a tape writes it today (its findings added to ``findings``):
    its arguments as configuration, its result and error message as content."""
    spots: list[_Spot] = []
    args = redactor.redact(entry.args)
    _note(None, "tape", 0, "args", entry.args, args, redactor, spots)
    fixed = replace(entry, args=args)
    if entry.error is not None:
        message = redactor.redact_text(entry.error.message)
        _note(None, "tape", 0, "error.message", entry.error.message, message, redactor, spots)
        fixed = replace(fixed, error=RecordedError(entry.error.type, message))
    else:
        result = redactor.redact_model_output(entry.result)
        _note(None, "tape", 0, "result", entry.result, result, redactor, spots)
        fixed = replace(fixed, result=result)
    findings.extend(
        dict.fromkeys(
            Finding(path, entry.line, None, spot.field, spot.kind, tape=entry.label)
            for spot in spots
        )
    )
    return fixed


def _redacted_event(row: dict[str, Any], redactor: SecretRedactor) -> dict[str, Any]:
    """An event row as the recorder writes it now: an HTTP response's headers as
    configuration, a binary body as it is, anything else as model output."""
    kind = row.get("type")
    if kind in DELTA_EVENTS and isinstance(row.get("delta"), str) and len(row) == 3:
        return {**row, "delta": redactor.redact_text(row["delta"])}  # the recorder's short path
    if kind == "http_response":
        return {**row, "headers": redactor.redact(row.get("headers"))}
    if kind == "http_body" and "base64" in row:
        return row
    if kind == "eventstream":  # its bytes follow its data (see _scan_call)
        return {**row, "data": redactor.redact_model_output(row["data"])} if "data" in row else row
    redacted: dict[str, Any] = redactor.redact_model_output(row)
    return redacted


def _scan_block(
    call: RecordedCall, block: list[Piece], redactor: SecretRedactor, spots: list[_Spot]
) -> None:
    """Find what the joined pieces of one streamed block hold, and put the block's redacted
    text back into the call's rows."""
    texts = [piece.text for piece in block]
    whole = "".join(texts)
    redacted = redactor.redact_text(whole)
    if redacted == whole:
        return
    new_texts, stretches = respread(texts, redacted)
    for stretch in stretches:
        first, last = block[stretch.first], block[stretch.last]
        span = f"{first.event}" if first.event == last.event else f"{first.event}..{last.event}"
        where = _path_text(f"event[{span}]", first.path)
        for kind in _kinds(whole, redactor, around=(stretch.start, stretch.end)):
            spots.append(_Spot(call.call_index, "event", first.event, where, kind))
    for piece, text in zip(block, new_texts, strict=True):
        if text != piece.text:
            call.event_rows[piece.event] = _with_text(
                call.event_rows[piece.event], piece.path, text
            )


def _with_text(row: dict[str, Any], path: tuple[str | int, ...], text: str) -> dict[str, Any]:
    """A copy of ``row`` with the string at ``path`` replaced by ``text``."""
    copied: Any = orjson.loads(orjson.dumps(row))
    target = copied
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = text
    result: dict[str, Any] = copied
    return result


def _path_text(base: str, path: tuple[str | int, ...]) -> str:
    text = base
    for part in path:
        text = join_field_path(text, part)
    return text


def _note(
    call_index: int | None,
    row: str,
    event: int,
    path: str,
    original: Any,
    redacted: Any,
    redactor: SecretRedactor,
    spots: list[_Spot],
) -> None:
    """Note every value ``redacted`` changed in ``original`` (at ``path``)."""
    for where, value, key in _changes(original, redacted, path):
        for kind in _kinds(value, redactor, key=key):
            spots.append(_Spot(call_index, row, event, where or "(row)", kind))


def _changes(
    original: Any, redacted: Any, path: str, key: Any = None
) -> Iterator[tuple[str, Any, Any]]:
    """(field path, original value, its key) for every value or dict key that differs, the
    path made of the redacted keys."""
    if original is redacted or original == redacted:  # most of a recording: at C speed
        return
    if isinstance(original, dict) and isinstance(redacted, dict):
        if len(original) != len(redacted):  # two keys redacted alike became one
            yield path, original, key
            return
        for (name, value), (new_name, new_value) in zip(
            original.items(), redacted.items(), strict=True
        ):
            child = join_field_path(path, new_name) if isinstance(new_name, str) else path
            if name != new_name:
                yield child, name, None
            yield from _changes(value, new_value, child, name)
    elif isinstance(original, list) and isinstance(redacted, list):
        for number, (value, new_value) in enumerate(zip(original, redacted, strict=True)):
            yield from _changes(value, new_value, join_field_path(path, number), None)
    elif original != redacted:
        yield path, original, key


def _kinds(
    value: Any, redactor: SecretRedactor, *, key: Any = None, around: tuple[int, int] | None = None
) -> list[str]:
    """The kinds of secret ``value`` holds (within ``around``, a stretch of it, if given)."""
    if not isinstance(value, str):
        return (
            ["secret-field"] if isinstance(key, str) and is_secret_field_name(key) else ["secret"]
        )
    kinds: list[str] = []
    lower = value.lower()
    for shape in TOKEN_SHAPES:
        if shape.may_match(value, lower) and any(
            _touches(match.span(), around) and shape.replace(match) != match.group(0)
            for match in shape.matches(value)
        ):
            kinds.append(shape.kind)
    if any(_occurs(secret, value, around) for secret in redactor.known_values):
        kinds.append("known-credential")
    user = redactor.user
    if user is not None:
        if any(substitute_pattern(pattern, value) != value for pattern in user.patterns):
            kinds.append("user-pattern")
        if not kinds and user.functions:
            kinds.append("user-redactor")
    if not kinds:
        secret_named = isinstance(key, str) and is_secret_field_name(key)
        kinds.append("secret-field" if secret_named else "secret")
    return kinds


def _touches(span: tuple[int, int], around: tuple[int, int] | None) -> bool:
    return around is None or (span[0] < around[1] and around[0] < span[1])


def _occurs(secret: str, text: str, around: tuple[int, int] | None) -> bool:
    start = text.find(secret)
    while start >= 0:
        if _touches((start, start + len(secret)), around):
            return True
        start = text.find(secret, start + 1)
    return False


def _located(path: Path, spots: list[_Spot]) -> list[Finding]:
    """The spots as findings, each with the line of its row (read from the file)."""
    lines = _row_lines(path)
    findings = []
    for spot in spots:
        line = lines.get((spot.row, spot.call_index, spot.event), 1)
        findings.append(Finding(path, line, spot.call_index, spot.field, spot.kind))
    return list(dict.fromkeys(findings))  # the caller sorts them by line


def _row_lines(path: Path) -> dict[tuple[str, int | None, int], int]:
    """The line of each row: (``request``/``event``/``end``, call, event index) to line."""
    lines: dict[tuple[str, int | None, int], int] = {("header", None, 0): 1}
    with open(path, "rb") as stream:
        for number, line in enumerate(stream, start=1):
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(row, dict):
                continue
            kind, call = row.get("type"), row.get("call_index")
            if kind == "request":
                lines[("request", call, 0)] = number
            elif kind == "event":
                lines[("event", call, row.get("event_index", 0))] = number
            elif kind == "call_end":
                lines[("end", call, 0)] = number
    return lines


@dataclass(frozen=True)
class Stretch:
    """A changed stretch of a block's text: the pieces it spans (positions in the block)."""

    first: int
    last: int
    start: int
    """Where it starts in the block's text."""
    end: int


def respread(texts: list[str], redacted: str) -> tuple[list[str], list[Stretch]]:
    """``texts`` (a block's pieces) made to hold ``redacted`` (the redaction of their
    joined text) instead, and the changed stretches; the new pieces join to ``redacted``."""
    whole = "".join(texts)
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text)
    out: list[list[str]] = [[] for _ in texts]
    stretches: list[Stretch] = []
    for tag, i1, i2, j1, j2 in _joined_opcodes(whole, redacted):
        if tag == "equal":
            for index in range(_piece_at(starts, i1), len(texts)):
                start = max(i1, starts[index])
                end = min(i2, starts[index] + len(texts[index]))
                if start >= i2:
                    break
                if end > start:
                    out[index].append(redacted[j1 + start - i1 : j1 + end - i1])
            continue
        first = _piece_at(starts, i1 if i1 < i2 or i1 == 0 else i1 - 1)
        last = _piece_at(starts, max(i1, i2 - 1))
        out[first].append(redacted[j1:j2])
        stretches.append(Stretch(first, last, i1, i2))
    return ["".join(parts) for parts in out], stretches


def _piece_at(starts: list[int], position: int) -> int:
    """The piece holding ``position`` of the joined text (the last piece for its end)."""
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= position:
            low = middle
        else:
            high = middle - 1
    return low


def _joined_opcodes(whole: str, redacted: str) -> list[tuple[str, int, int, int, int]]:
    """The opcodes turning ``whole`` into ``redacted``, changed ones separated by fewer than
    a few unchanged characters joined into one."""
    # Only the middle, between what both share at the start and the end, is compared.
    limit = min(len(whole), len(redacted))
    prefix = 0
    while prefix < limit and whole[prefix] == redacted[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and whole[-1 - suffix] == redacted[-1 - suffix]:
        suffix += 1
    middle = SequenceMatcher(
        None, whole[prefix : len(whole) - suffix], redacted[prefix : len(redacted) - suffix]
    ).get_opcodes()
    opcodes = [("equal", 0, prefix, 0, prefix)] if prefix else []
    opcodes += [
        (t, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix) for t, i1, i2, j1, j2 in middle
    ]
    if suffix:
        end_a, end_b = len(whole), len(redacted)
        opcodes.append(("equal", end_a - suffix, end_a, end_b - suffix, end_b))
    joined: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal" and joined and joined[-1][0] != "equal":
            previous = joined.pop()
            joined.append(("replace", previous[1], i2, previous[3], j2))
            continue
        if (
            tag == "equal"
            and i2 - i1 < _JOIN_GAP
            and joined
            and joined[-1][0] != "equal"
            and (i2, j2) != (len(whole), len(redacted))
        ):
            previous = joined.pop()
            joined.append(("replace", previous[1], i2, previous[3], j2))
            continue
        joined.append((tag, i1, i2, j1, j2))
    return joined
