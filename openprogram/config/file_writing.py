"""Writing the configuration file without ever leaving it half-written, and keeping a copy
of a broken one before it is repaired.

A new version goes to a temporary file in the same folder, is flushed and synced to disk,
takes the permission bits it should have, and replaces the file in one ``os.replace``; the
folder is then synced so the rename itself survives a crash. If anything fails first, the
temporary file is removed and the original is untouched.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from datetime import datetime
from pathlib import Path

from openprogram.private_files import PRIVATE_FILE_MODE


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


def write_backup(path: Path, data: bytes, *, now: datetime) -> Path:
    """Write ``data`` beside ``path`` as ``<name>.broken-YYYYMMDD-HHMMSS`` (``0600``); if that
    name is taken, ``…-2``, ``…-3`` and so on: an existing backup is never overwritten."""
    stem = f"{path.name}.broken-{now:%Y%m%d-%H%M%S}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for number in itertools.count(1):
        backup = path.with_name(stem if number == 1 else f"{stem}-{number}")
        try:
            descriptor = os.open(backup, flags, PRIVATE_FILE_MODE)
        except FileExistsError:
            continue
        try:
            with os.fdopen(descriptor, "wb") as stream:
                os.fchmod(stream.fileno(), PRIVATE_FILE_MODE)
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(backup)
            raise
        sync_folder(path.parent)
        return backup
    raise AssertionError("unreachable")  # itertools.count never ends


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
