"""Files and directories openprogram creates are private: ``0600`` files, ``0700`` folders.

Recordings may hold prompts, replies, tool results and personal data, so nothing openprogram
creates is readable by other users. Files it did not create keep their mode.

:func:`replace_file` is how a whole file (the configuration, the summary cache) is rewritten
without ever being left half-written: a temporary file in the same folder, flushed and synced,
given its permission bits, then ``os.replace``; the folder is synced so the rename survives a
crash. If anything fails first, the temporary file is removed and the original is untouched."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and any missing parents, each ``0700``; existing ones are kept."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # another process made it in the meantime
        os.chmod(folder, PRIVATE_DIR_MODE)  # mkdir's mode is narrowed by the umask only


def replace_file(path: Path, data: bytes, *, mode: int) -> None:
    """Make ``path`` hold exactly ``data`` with permission bits ``mode``, atomically."""
    folder = path.parent
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fchmod(stream.fileno(), mode)
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sync_folder(folder)


def sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename, a new file) to disk, where the platform allows."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the data itself is synced
    finally:
        os.close(descriptor)
