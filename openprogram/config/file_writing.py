"""Keeping a copy of a broken configuration before it is repaired.

The configuration itself is replaced atomically by
:func:`openprogram.private_files.replace_file`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from datetime import datetime
from pathlib import Path

from openprogram.private_files import PRIVATE_FILE_MODE, sync_folder


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
