"""Putting a test's new recording in place once the test passed, and saying what changed.

* :func:`save_recording` — a recording made afresh (``once`` for a missing recording,
  ``all``, ``rewrite``, ``new_episodes`` without one): the private temporary file is synced
  and renamed over the recording, atomically.
* :func:`merge_recording` — ``new_episodes`` with a recording: the run's calls in the order
  it made them, each replayed call as it was recorded and each live call as it was just
  recorded (:mod:`~openprogram.recording.rewriting`), are written with
  :func:`~openprogram.recording.rewriting.rewrite_recording`, atomically, and only if that
  changes anything: a run that replayed every recorded call, made no live call and taped
  what the recording holds leaves the file byte for byte as it was. Taped functions and
  tools run live under ``new_episodes`` and their entries are recorded afresh, so a run
  whose tape entries differ from the recording's is written even when every call replayed.
  So is a run whose user redaction is not the one the recording was made with (its
  header's ``redaction_fingerprint``): the replayed calls are redacted again with this
  run's, so the merged recording holds no match of a pattern its header names.

Either says what it did in a :class:`SavedRecording`, with the first difference between the
old recording and the new one (:func:`~openprogram.store.comparison.first_difference`,
the sides called ``old`` and ``new``)."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openprogram.errors import OpenProgramError, RecordingFileError
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.report import ReportSides, format_report
from openprogram.recording.rewriting import rewrite_recording
from openprogram.store.comparison import compare_recordings
from openprogram.store.hashing import tape_entry_digest
from openprogram.store.scan import redacted_call

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, Recording
    from openprogram.recording.rewriting import RecordingMerge
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["SavedRecording", "merge_recording", "save_recording"]


@dataclass(frozen=True, slots=True)
class SavedRecording:
    """What finishing a test's recording did."""

    changed: bool
    """Whether the recording was written (False: left byte for byte as it was)."""
    live_calls: int = 0
    """Calls made live and recorded."""
    dropped_calls: int = 0
    """Recorded calls the run never requested, left out of a merged recording."""
    difference: str | None = None
    """The first difference from the old recording (None when there was none, or the two
    hold the same calls)."""
    differences: list[str] = field(default_factory=list)
    """Every difference from the old recording (the first :data:`DIFFERENCES_KEPT`), each a
    report as ``recordings diff`` writes it: what the summary page shows of a re-recording."""


def save_recording(
    write_path: Path, path: Path, display_path: str, *, replaced: bool
) -> SavedRecording:
    """Move the new recording at ``write_path`` over ``path``; ``replaced``: a recording was
    there, to compare with."""
    old = _read_or_none(path) if replaced else None
    try:
        _flush_to_disk(write_path)
        os.replace(write_path, path)
    except OSError as exc:
        raise RecordingFileError(
            display_path,
            f"cannot save the new recording ({exc.strerror or exc})",
            advice="check the recordings folder is writable and the disk has space",
        ) from None
    new = _read_or_none(path)
    if new is None:  # saved all the same: only what the summary says of it is lost
        return SavedRecording(True, difference="the new recording could not be read back")
    found = [] if old is None else _differences(old, new)
    difference = found[0] if found else None
    if replaced and old is None:
        difference = "the old recording could not be read, so it is not compared"
    return SavedRecording(True, live_calls=len(new.calls), difference=difference, differences=found)


def merge_recording(
    merge: RecordingMerge, write_path: Path, path: Path, *, expected: os.stat_result | None
) -> SavedRecording:
    """Write the run's calls (the new file at ``write_path`` holds them, the replayed ones
    as placeholders) over the recording at ``path``, when they differ from it; ``expected``
    is the ``stat`` of the recording as it was read (a recording changed since is not
    overwritten: :class:`~openprogram.errors.RecordingFileError`)."""

    old = merge.session.recording
    written = read_recording(write_path)
    live = merge.live_calls(written)
    dropped = len(merge.session.unconsumed_calls)
    user = merge.writer.user_redaction
    redaction_changed = old.header.get("redaction_fingerprint") != (
        None if user is None else user.fingerprint
    )
    if live == 0 and dropped == 0 and not redaction_changed and _same_tapes(old, written):
        return SavedRecording(False)
    header = dict(written.header)
    _keep_older_redaction(header, old.header)
    calls = merge.merged_calls(written)
    if redaction_changed and user is not None:
        calls = _redacted_again(calls, user)
    rewrite_recording(
        path,
        header,
        calls,
        tapes=written.tapes,
        not_recorded=written.not_recorded,
        expected=expected,
    )
    new = _read_or_none(path)
    found = [] if new is None else _differences(old, new)
    difference = "the merged recording could not be read back" if new is None else None
    return SavedRecording(
        True,
        live_calls=live,
        dropped_calls=dropped,
        difference=difference or (found[0] if found else None),
        differences=found,
    )


def _keep_older_redaction(header: dict[str, object], old: dict[str, object]) -> None:
    """The merged header claims the rules of the older calls' redaction: replay then redacts every
    recorded request again with the current rules, the new ones changing not at all."""
    if old.get("redaction_version") == header.get("redaction_version"):
        return
    if "redaction_version" in old:
        header["redaction_version"] = old["redaction_version"]
    else:
        header.pop("redaction_version", None)


def _redacted_again(calls: list[RecordedCall], user: UserRedaction) -> list[RecordedCall]:
    """``calls`` redacted with the user redaction of this run: the replayed ones were
    recorded with another (or none), and the merged header names this one."""

    redactor = SecretRedactor(user=user)
    return [redacted_call(call, redactor) for call in calls]


def _same_tapes(old: Recording, new: Recording) -> bool:
    """Whether the run taped what the recording holds: each tape the same multiset of
    entries, as ``recordings diff`` compares them (the values of the clock and random draws
    left out). The run records its tapes afresh, so entries that differ are kept only by
    writing the merged recording."""
    return Counter(map(tape_entry_digest, old.tapes)) == Counter(map(tape_entry_digest, new.tapes))


def _read_or_none(path: Path) -> Recording | None:

    try:
        return read_recording(path)
    except OpenProgramError:
        return None


DIFFERENCES_KEPT = 50
"""The differences from the old recording a re-recorded test's outcome keeps."""


def _differences(old: Recording, new: Recording) -> list[str]:
    """Every difference between ``old`` and ``new`` (the first :data:`DIFFERENCES_KEPT`),
    each a report with the sides named old and new, in ``recordings diff``'s order."""
    try:
        found = compare_recordings(old, new).differences
    except OpenProgramError as error:  # a value the comparison cannot carry
        return [f"the old and new recordings could not be compared ({error})"]
    sides = ReportSides("difference", "old", "new")
    return [
        format_report(dataclasses.replace(item.difference, sides=sides))
        for item in found[:DIFFERENCES_KEPT]
    ]


def _flush_to_disk(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
