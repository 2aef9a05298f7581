"""The one door through which openprogram reads a recording's bytes.

Only a regular file is read. The path is opened non-blocking (opening a FIFO that has no
writer would otherwise wait for one) and checked with ``fstat`` before a byte is read, so a
FIFO, a device (``/dev/zero``) or a folder is refused at once instead of blocking or filling
memory. The strict parser reads through here, and so should anything else that reads a
recording's bytes (summaries, ``show``, ``diff``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from openprogram.errors import RecordingFileError

__all__ = ["read_recording_bytes", "read_recording_file"]


def read_recording_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the recording at ``path``; the one way openprogram reads a recording.

    Only a regular file is read: a FIFO, a device (``/dev/zero``) or a folder is refused
    with :class:`RecordingFileError` ("not a regular file") without blocking or reading from
    it, as is a file that is missing or unreadable.
    """
    return read_recording_file(path)[0]


def read_recording_file(path: str | os.PathLike[str]) -> tuple[bytes, os.stat_result]:
    """:func:`read_recording_bytes`, with the ``fstat`` of the file that was read (its size
    and modification time, for callers that list recordings)."""
    file = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one.
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise RecordingFileError(
            str(file), "no such recording", advice="check the name or path"
        ) from None
    except OSError as exc:
        raise _unreadable(file, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordingFileError(
                str(file),
                f"not a regular file (a {_file_kind(info.st_mode)})",
                advice="name a recording file",
            )
        with open(fd, "rb", buffering=0, closefd=False) as stream:
            data = stream.readall()
    except OSError as exc:
        raise _unreadable(file, exc) from None
    finally:
        os.close(fd)
    return data, info


def _unreadable(file: Path, exc: OSError) -> RecordingFileError:
    return RecordingFileError(
        str(file), f"cannot read it ({exc.strerror or exc})", advice="check its permissions"
    )


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"
