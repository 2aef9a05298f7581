"""Recordings no collected test uses any more: the orphans the suite summary lists.

A recording under the recordings folder is an orphan when no collected test that uses the
fixture would replay it (a test's own recording path, or the one its
``@pytest.mark.openprogram(name=...)`` gives it). That can only be told when the run collected
the whole test tree, so the orphans are looked for only then (:class:`CollectionScope`):
pytest was started with no file, folder or node id (or with exactly its ``testpaths``), from
its rootdir, with no ``-k`` / ``-m``, no ``--lf`` (which skips whole files), nothing ignored
or deselected (``--deselect``, ``--sw``) and no collection error. Otherwise the summary says
why it did not look.

Under pytest-xdist each worker collects the whole tree: a worker sends what it collected to
the controller, which decides (:func:`orphans_skipped_because`) with its own command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram.store.names import RECORDING_SUFFIX
from openprogram.testing.recording_paths import TEMPORARY_FOLDER_PREFIX

__all__ = ["CollectionScope", "find_orphans", "orphans_skipped_because"]


@dataclass(slots=True)
class CollectionScope:
    """What one process collected: the recordings its fixture tests use, and whether
    anything narrowed the collection."""

    recordings: set[str] = field(default_factory=set)
    """Absolute paths of the recordings the collected fixture tests use."""
    deselected: int = 0
    collection_errors: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "recordings": sorted(self.recordings),
            "deselected": self.deselected,
            "collection_errors": self.collection_errors,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollectionScope:
        return cls(
            set(data.get("recordings", [])),
            int(data.get("deselected", 0)),
            int(data.get("collection_errors", 0)),
        )


def orphans_skipped_because(
    scope: CollectionScope,
    *,
    explicit_args: bool,
    started_in_rootdir: bool,
    keyword: str,
    markers: str,
    ignored: bool,
    last_failed: bool = False,
) -> str | None:
    """Why the run cannot tell orphans (a reason in a few words), or None when it can."""
    if explicit_args:
        return "tests were selected by path or node id"
    if not started_in_rootdir:
        return "pytest was not started from its rootdir"
    if keyword:
        return "tests were selected with -k"
    if markers:
        return "tests were selected with -m"
    if ignored:
        return "paths were ignored (--ignore)"
    if last_failed:
        return "only the tests that failed last were run (--lf)"
    if scope.deselected:
        return "tests were deselected"
    if scope.collection_errors:
        return "some test files could not be collected"
    return None


def find_orphans(recordings_dir: Path, used: set[str]) -> list[Path]:
    """The recordings under ``recordings_dir`` whose path is not in ``used``, sorted (the
    temporary folders of recordings being made are skipped)."""
    if not recordings_dir.is_dir():
        return []
    found = []
    for path in recordings_dir.rglob(f"*{RECORDING_SUFFIX}"):
        relative = path.relative_to(recordings_dir)
        if any(part.startswith(TEMPORARY_FOLDER_PREFIX) for part in relative.parts):
            continue
        if path.is_file() and str(path) not in used:
            found.append(path)
    return sorted(found)
