"""A drift snapshot: the live answers of a drift check, kept as a recording-shaped file.

``recordings drift NAME --save FILE`` writes one: each call's recorded request with the answer it
got live (a call that was not sent, or got no answer, keeps its recorded answer), so ``show FILE``
reads the live answers and ``diff NAME FILE`` shows the first one that differs from the recording.
Its header marks it — the feature ``drift_snapshot`` and a ``drift_snapshot`` object naming the
recording it was taken of, when, and which calls hold live answers — and replay refuses it
(:func:`~openprogram.recording.format.snapshot_refusal`): each recorded request of a session carries
the recorded reply before it, so live answers spliced in would not replay a session anyone ran. A
snapshot is written like any recording: atomically, private (``0600``), redacted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.recording.format import SNAPSHOT_FEATURE, RecordedCall, new_header

if TYPE_CHECKING:
    from openprogram.drift.check import DriftReport
    from openprogram.recording.format import Recording

__all__ = ["write_snapshot"]


def write_snapshot(path: Path, recording: Recording, report: DriftReport) -> None:
    """Write the snapshot of ``report``'s live answers to ``path`` (replacing it)."""
    from openprogram.recording.rewriting import rewrite_recording

    live = {call.call_index: call.live_rows for call in report.calls if call.live_rows is not None}
    header = new_header(recording.header.get("recording_id"))
    header["features"] = [*header.get("features", []), SNAPSHOT_FEATURE]
    header[SNAPSHOT_FEATURE] = {
        "recording": str(recording.path),
        "taken_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "live_calls": sorted(live),
    }
    calls = [_with_live(call, live.get(call.call_index)) for call in recording.calls]
    rewrite_recording(path, header, calls)


def _with_live(call: RecordedCall, rows: list[dict[str, Any]] | None) -> RecordedCall:
    if rows is None:
        return call
    return RecordedCall(
        call_index=call.call_index,
        line=call.line,
        request=call.request,
        event_rows=rows,
        outcome="complete",
        boundary=call.boundary,
        within=call.within,
    )
