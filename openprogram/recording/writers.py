"""One writer per recording per process: every boundary writing to a path shares it, so all
calls made in one process form one call sequence in one file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from openprogram.recording.writer import RecordingWriter

__all__ = ["close_recording_writers", "forget_writer", "writer_for"]

_writers: dict[str, RecordingWriter] = {}
_writers_lock = threading.Lock()


def writer_for(path: str | os.PathLike[str]) -> RecordingWriter:
    """The one writer this process uses for ``path``."""
    resolved = Path(path).resolve()
    with _writers_lock:
        writer = _writers.get(str(resolved))
        if writer is None:
            writer = _writers[str(resolved)] = RecordingWriter(resolved)
        return writer


def forget_writer(path: str | os.PathLike[str]) -> None:
    """Close and drop the writer for ``path`` (a harness done with one recording)."""
    resolved = str(Path(path).resolve())
    with _writers_lock:
        writer = _writers.pop(resolved, None)
    if writer is not None:
        writer.close()


def close_recording_writers() -> None:
    """Close every writer (tests; a process that exits needs not call it)."""
    with _writers_lock:
        for writer in _writers.values():
            writer.close()
        _writers.clear()
