"""Recording names, and where a ``NAME|PATH`` argument points.

A name is letters, digits, ``.``, ``_`` and ``-``, not starting with ``.`` or ``-``, 1 to 128
characters; the recording it names is ``<store>/<name>.jsonl``. An argument holding a path
separator or ending in ``.jsonl`` is a path instead.

The store folder may be a symbolic link (to another disk, a shared folder): it is resolved
once (:func:`resolve_store`), and listing, deleting and pruning act inside the folder it
resolved to, never following a link found inside it.

These are the store's naming rules; they import nothing of the configuration, which reads
them (``record_replay.file`` names a recording by them: see
``openprogram.config.paths.configured_recording_path``)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from openprogram.errors import RecordingFileError, RecordingNameError

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_TEST_PART_LENGTH",
    "RECORDING_SUFFIX",
    "STORE_ADVICE",
    "RecordingRef",
    "default_name",
    "file_setting_problem",
    "is_path_argument",
    "is_same_file",
    "recording_files",
    "refuse_links_below",
    "resolve_recording",
    "resolve_store",
    "safe_file_name",
    "suggested_name",
    "validate_name",
]

MAX_NAME_LENGTH = 128
"""Longest recording name the store accepts (``recordings record NAME``, a
``record_replay.file`` name)."""
MAX_TEST_PART_LENGTH = 120
"""Longest ``<module>`` or ``<test>`` part of a test's recording path that the pytest plugin
keeps whole; a longer part is cut and ends in ``-`` and an 8-hex hash. Shorter than
:data:`MAX_NAME_LENGTH` on purpose, so that each part is a name the store accepts too, and it
stays 120: raising it to 128 would move the committed recording of every test whose name is
121 to 128 characters long."""

RECORDING_SUFFIX = ".jsonl"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")

_ALLOWED = "use letters, digits, '.', '_' and '-', not starting with '.' or '-'"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_HASH_LENGTH = 8


def safe_file_name(text: str) -> str:
    """``text`` if it is already a safe, short file name; else a safe name with a hash suffix."""
    safe = _UNSAFE.sub("_", text)
    if safe[:1] in ("", ".", "-"):
        safe = "_" + safe[1:]
    if safe == text and 0 < len(text) <= MAX_TEST_PART_LENGTH:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]
    return f"{safe[: MAX_TEST_PART_LENGTH - _HASH_LENGTH - 1]}-{digest}"


def validate_name(name: str) -> str:
    """Return ``name`` if it is a valid recording name; raise :class:`RecordingNameError`."""
    if not name:
        raise RecordingNameError(name, f"the recording name is empty: {_ALLOWED}")
    if len(name) > MAX_NAME_LENGTH:
        raise RecordingNameError(
            name,
            f"recording name {name[:20]!r}… is {len(name)} characters long: "
            f"use at most {MAX_NAME_LENGTH}",
        )
    if _NAME.fullmatch(name) is None:
        raise RecordingNameError(name, f"invalid recording name {name!r}: {_ALLOWED}")
    return name


def default_name(now: datetime | None = None) -> str:
    """``rec-YYYYMMDD-HHMMSS`` in UTC (a naive ``now`` is taken as UTC)."""
    moment = datetime.now(UTC) if now is None else now
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("rec-%Y%m%d-%H%M%S")


def is_path_argument(arg: str) -> bool:
    """A path holds a path separator or ends in ``.jsonl``; anything else is a name."""
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return any(separator in arg for separator in separators) or arg.endswith(RECORDING_SUFFIX)


def suggested_name(arg: str) -> str | None:
    """The name a path-like argument most likely meant: ``demo.jsonl`` → ``demo``; ``None``
    when that is not a valid name."""
    candidate = arg.removesuffix(RECORDING_SUFFIX)
    try:
        return validate_name(candidate)
    except RecordingNameError:
        return None


def file_setting_problem(value: str) -> str | None:
    """Why ``record_replay.file = value`` can name no recording (an invalid name), or
    ``None`` when it names one (a valid name, or a path)."""
    if is_path_argument(value):
        return None
    try:
        validate_name(value)
    except RecordingNameError as error:
        return error.problem
    return None


def resolve_store(store: Path) -> Path:
    """The store folder as an absolute path with every symbolic link resolved.

    A symlinked store is a legitimate setup; resolving it once and acting inside the result
    means a link changed meanwhile cannot send a deletion elsewhere."""
    return Path(os.path.realpath(store))


@dataclass(frozen=True)
class RecordingRef:
    """Where a ``NAME|PATH`` argument points; ``name`` is set when it is in the store."""

    path: Path
    name: str | None


def resolve_recording(arg: str, store: Path) -> RecordingRef:
    """Turn a ``NAME|PATH`` argument into an absolute path (a name is validated first)."""
    store = Path(os.path.abspath(store))
    if not is_path_argument(arg):
        return RecordingRef(store / f"{validate_name(arg)}{RECORDING_SUFFIX}", arg)
    path = Path(os.path.abspath(Path(arg).expanduser()))
    in_store = path.suffix == RECORDING_SUFFIX and path.parent.resolve() == store.resolve()
    return RecordingRef(path, path.stem if in_store else None)


STORE_ADVICE = "remove it, or record into another name (or give a path of your own)"
"""What to do about a recording in the store that openprogram will not record into."""


def refuse_links_below(
    folder: Path, path: Path, *, folder_name: str = "its store", advice: str = STORE_ADVICE
) -> None:
    """Raise :class:`RecordingFileError` naming the first step from ``folder`` down to
    ``path`` that openprogram never records through: a symbolic link, dangling or not (a
    folder on the way, or ``path`` itself), a folder on the way that is not a folder, or
    ``path`` there and not a regular file (a FIFO would hang whoever reads it). What is not
    there yet is fine: it is made when recorded into. ``folder`` itself may be a link (a
    symlinked store); below it, nothing is followed.

    The one rule for every recording openprogram names below a folder of its own (``folder_name``
    says which in the message, ``advice`` what to do): a name in the store — ``exec --record NAME``,
    the configured record mode (exec's plan and every process's start), ``serve``'s own recording,
    ``recordings status`` — and a session's name under the server's folder. A path the user gives
    (``--record ./x.jsonl``, ``record_replay(path)``) is theirs and may be a link."""
    current = folder
    for part in path.relative_to(folder).parts:
        current = current / part
        try:
            found = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            return  # made when it is recorded into (or the writer says why it cannot be)
        except OSError as error:
            raise RecordingFileError(
                str(current),
                f"cannot look at it ({error.strerror or error})",
                advice="check the folder's permissions",
            ) from None
        if stat.S_ISLNK(found.st_mode):
            raise RecordingFileError(
                str(current),
                f"it is a symbolic link (to {_link_target(current)}), and openprogram writes "
                f"into {folder_name} only, never through a link out of it",
                advice=advice,
            )
        if current != path and not stat.S_ISDIR(found.st_mode):
            raise RecordingFileError(str(current), "it is not a folder", advice=advice)
        if current == path and not stat.S_ISREG(found.st_mode):
            raise RecordingFileError(str(current), "it is not a regular file", advice=advice)


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"  # replaced meanwhile


def is_same_file(path: Path, other: Path | None) -> bool:
    """Whether two spellings of a path (relative, ``~``, through symlinks) name one file."""
    if other is None:
        return False
    return Path(path).expanduser().resolve() == Path(other).expanduser().resolve()


def recording_files(store: Path) -> list[tuple[Path, os.stat_result]]:
    """The recordings in ``store``: regular ``*.jsonl`` files, not symlinks, not hidden.

    Returned with their ``lstat`` and absolute paths inside the resolved store folder
    (:func:`resolve_store`), sorted by name; a missing store holds none."""
    store = resolve_store(store)
    found: list[tuple[Path, os.stat_result]] = []
    try:
        entries = list(os.scandir(store))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise RecordingFileError(
            str(store),
            f"cannot list the recordings store ({exc.strerror or exc})",
            advice="check the folder's permissions",
        ) from None
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(RECORDING_SUFFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # deleted while we looked
        if stat.S_ISREG(info.st_mode):
            found.append((store / entry.name, info))
    found.sort(key=lambda item: item[0].name)
    return found
