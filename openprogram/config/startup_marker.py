"""The start-up marker: what the configuration decides, kept beside it for the start-up hook.

Every Python process of an environment where openprogram is installed runs the start-up hook
(``_openprogram_startup``), which must tell in a few system calls whether record/replay is
off — reading the TOML file, let alone validating it, costs more than Python's whole start.
So whoever has just read the configuration in full writes down what it decided, beside the
file (``.config.toml.startup``): the mode, the file's ``st_mtime_ns``, ``st_size`` and
``st_ino`` (``absent`` when there is no file), and a digest of the ``OPENPROGRAM_…``
variables it was read with (never their values: they may be secrets). The hook trusts an
``off`` line only for that very file and those very variables; anything else — an edit by
hand, another variable — sends it to the full reading again. The line's form is the hook's
(:func:`_openprogram_startup.marker_line`): one copy of the rule.

Written by the commands that switch the mode (``openprogram recordings record|replay|off``)
and by a starting process that read the configuration in full and found the mode off. A
marker holds a few lines, one per set of variables, for the same file (a shell and an editor
starting processes with different variables do not undo each other's); a line for an older
state of the file is dropped. Writing is atomic and never fails loudly: without a marker,
the next process reads the configuration in full, which decides the same."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from _openprogram_startup import MARKER_HEADER, marker_line, marker_path, setting_digest

__all__ = ["MAX_LINES", "file_state", "write_startup_marker"]

MAX_LINES = 8
"""The most lines a marker keeps (sets of variables, for one state of the file)."""


def file_state(path: Path) -> os.stat_result | None:
    """The configuration file's ``stat`` as the marker records it (None: there is none).
    Raises ``OSError`` when it cannot be told."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def same_state(first: os.stat_result | None, second: os.stat_result | None) -> bool:
    """Whether two ``stat`` results (or two absences) name the same state of the file."""
    if first is None or second is None:
        return first is second
    fields = ("st_mtime_ns", "st_size", "st_ino", "st_dev")
    return all(getattr(first, name) == getattr(second, name) for name in fields)


def write_startup_marker(
    config: Path, mode: str, state: os.stat_result | None, environ: Mapping[str, str]
) -> None:
    """Write down that the configuration file ``config``, in ``state`` (its ``stat`` when it
    was read; None: no file), with ``environ``'s variables, decides ``mode``. Nothing is
    written when its folder does not exist; a failure to write is ignored."""
    line = marker_line(mode, state, setting_digest(environ))
    target = marker_path(str(config))
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        return
    file_part = line.split(" ")[3:-1]  # the file's state, between the mode and the digest
    try:
        with open(target, encoding="utf-8") as existing:
            kept = [
                old
                for old in existing.read(64 * 1024).splitlines(keepends=True)
                if old.startswith(MARKER_HEADER + " ")
                and old.endswith("\n")
                and old.split(" ")[3:-1] == file_part
                and old.split(" ")[-1] != line.split(" ")[-1]
            ]
    except (OSError, ValueError):
        kept = []
    text = "".join([line, *kept[: MAX_LINES - 1]])
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=".startup-", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
