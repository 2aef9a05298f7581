"""Files and directories openprogram creates are private: ``0600`` files, ``0700`` folders.

Recordings may hold prompts, replies, tool results and personal data, so nothing openprogram
creates is readable by other users. Files it did not create keep their mode.
"""

from __future__ import annotations

import os
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


def open_private_append(path: Path) -> int:
    """Open ``path`` for reading and appending, creating it ``0600``; returns the descriptor."""
    make_private_dirs(path.parent)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags, PRIVATE_FILE_MODE)
