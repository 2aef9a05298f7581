"""The built-in tools a coding agent needs, safe to run while a session is replayed.

Both only read, and only inside one root folder (the current working directory unless told
otherwise): ``read_file`` and ``list_directory``. A path must be relative to the root; an
absolute path, a path that climbs out with ``..``, or a symbolic link that resolves outside
the root is refused. Refusals and missing files raise :class:`ToolInputError`, which the
agent loop hands back to the model as an error result (``ToolInputError: …``).

What they return depends only on the files, never on where the root is, so a session
recorded in one folder replays in another holding the same files."""

from __future__ import annotations

import codecs
import os
from pathlib import Path, PurePath

from openprogram.agent.tools import AgentTool
from openprogram.errors import ToolInputError

READ_FILE_MAX_BYTES = 100_000
"""How much of a file ``read_file`` returns by default; the model may ask for less."""
READ_FILE_LIMIT_BYTES = 1_000_000
"""The most ``read_file`` ever returns, whatever the model asks for."""
LIST_DIRECTORY_MAX_ENTRIES = 1_000


def builtin_tools(root: Path | None = None) -> list[AgentTool]:
    """``read_file`` and ``list_directory``, confined to ``root`` (default: the current
    working directory, taken now)."""
    folder = (root if root is not None else Path.cwd()).resolve()

    def read_file(path: str, max_bytes: int = READ_FILE_MAX_BYTES) -> str:
        return read_text(folder, path, max_bytes=max_bytes)

    def list_directory(path: str = ".") -> str:
        return list_entries(folder, path)

    return [
        AgentTool(
            name="list_directory",
            description=(
                "List a folder of the working directory: one entry a line, sorted, folders "
                "marked with a trailing '/'."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Folder relative to the working directory; default '.'.",
                    }
                },
            },
            function=list_directory,
        ),
        AgentTool(
            name="read_file",
            description=(
                "Read a text file of the working directory (UTF-8). Long files are cut, "
                "with a note saying so."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path relative to the working directory.",
                    },
                    "max_bytes": {
                        "type": "integer",
                        "description": (
                            f"Read at most this many bytes (default {READ_FILE_MAX_BYTES})."
                        ),
                    },
                },
                "required": ["path"],
            },
            function=read_file,
        ),
    ]


def confined_path(root: Path, path: object) -> Path:
    """``path`` resolved inside ``root`` (itself resolved); raises :class:`ToolInputError`
    for anything that is not a relative path staying inside it."""
    if not isinstance(path, str) or not path:
        raise ToolInputError(f"path must be a non-empty string, got {path!r}")
    if "\0" in path:
        raise ToolInputError(f"path {path!r} holds a NUL character")
    if PurePath(path).is_absolute():
        raise ToolInputError(
            f"path {path!r} is absolute; give a path relative to the working directory"
        )
    try:
        resolved = (root / path).resolve()
    except (OSError, RuntimeError):  # a symbolic link loop, say; the error names the root
        raise ToolInputError(f"cannot resolve path {path!r} (a symbolic link loop?)") from None
    if not resolved.is_relative_to(root):
        raise ToolInputError(f"path {path!r} is outside the working directory")
    return resolved


def read_text(root: Path, path: str, *, max_bytes: int = READ_FILE_MAX_BYTES) -> str:
    """The text of the file at ``path`` under ``root``: UTF-8, undecodable bytes replaced,
    cut after ``max_bytes`` bytes with a note giving the file's size."""
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ToolInputError(f"max_bytes must be a positive integer, got {max_bytes!r}")
    limit = min(max_bytes, READ_FILE_LIMIT_BYTES)
    file = confined_path(root, path)
    try:
        with file.open("rb") as stream:
            data = stream.read(limit + 1)
            size = os.fstat(stream.fileno()).st_size
    except FileNotFoundError:
        raise ToolInputError(f"no such file: {path!r}") from None
    except IsADirectoryError:
        raise ToolInputError(f"{path!r} is a folder; use list_directory") from None
    except OSError as exc:
        raise ToolInputError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace")
    # Cut at the limit without leaving half a character behind.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data[:limit], final=False)
    return f"{text}\n[cut: showing the first {limit} of {max(size, len(data))} bytes]"


def list_entries(root: Path, path: str = ".") -> str:
    """The entries of the folder at ``path`` under ``root``, one a line, sorted by name,
    folders with a trailing ``/``."""
    folder = confined_path(root, path)
    try:
        with os.scandir(folder) as scan:
            entries = [
                entry.name + ("/" if entry.is_dir() else "")
                for entry in sorted(scan, key=lambda entry: entry.name)
            ]
    except FileNotFoundError:
        raise ToolInputError(f"no such folder: {path!r}") from None
    except NotADirectoryError:
        raise ToolInputError(f"{path!r} is a file; use read_file") from None
    except OSError as exc:
        raise ToolInputError(f"cannot list {path!r}: {exc.strerror or exc}") from None
    if not entries:
        return "(empty folder)"
    if len(entries) > LIST_DIRECTORY_MAX_ENTRIES:
        shown = entries[:LIST_DIRECTORY_MAX_ENTRIES]
        note = f"[cut: showing {LIST_DIRECTORY_MAX_ENTRIES} of {len(entries)} entries]"
        return "\n".join([*shown, note])
    return "\n".join(entries)
