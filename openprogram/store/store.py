"""Create, delete and prune the recordings in a store.

Deleting is careful: only a regular ``*.jsonl`` file directly inside the store is ever
removed, never the active recording, never a symlink (whatever it points to). A symlinked
store folder is resolved once (:func:`~openprogram.store.names.resolve_store`): files
are listed, checked and removed inside the folder it resolved to, through a descriptor of
that folder, so a link changed meanwhile cannot redirect a deletion.

    OpenProgramError
    ├── RecordingExistsError      ``create``: the name is taken
    ├── RecordingNotFoundError    ``delete``: nothing by that name or path
    ├── RecordingRefusedError     ``delete``: active, a symlink, outside the store, …
    ├── RecordingDeleteError      ``delete``: the system refused to remove the file
    └── PruneCriteriaError        ``prune``: no criterion, or a negative one
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from openprogram.errors import (
    PruneCriteriaError,
    RecordingDeleteError,
    RecordingExistsError,
    RecordingFileError,
    RecordingNameError,
    RecordingNotFoundError,
    RecordingRefusedError,
)
from openprogram.private_files import PRIVATE_FILE_MODE, make_private_dirs
from openprogram.recording.format import encode_row, new_header
from openprogram.store.names import (
    RECORDING_SUFFIX,
    is_path_argument,
    is_same_file,
    recording_files,
    resolve_recording,
    resolve_store,
    suggested_name,
    validate_name,
)
from openprogram.store.summary_cache import summarize_store

__all__ = [
    "PruneResult",
    "check_deletable",
    "check_prune_criteria",
    "create_recording",
    "delete_recording",
    "prune_recordings",
    "select_for_prune",
]

SECONDS_PER_DAY = 86_400


def create_recording(store: Path, name: str) -> Path:
    """Create ``<store>/<name>.jsonl`` (``0600``, store ``0700``) holding only its header.

    ``name`` must be a name: a path-like argument (``demo.jsonl``, ``dir/x``) is refused with
    :class:`RecordingNameError`, since the configuration would read it as a path."""
    if is_path_argument(name):
        meant = suggested_name(name)
        hint = f" (did you mean `{meant}`?)" if meant is not None else ""
        raise RecordingNameError(
            name,
            f"record takes a name{hint}: {name!r} is a path, and recordings are always "
            "created in the store",
        )
    validate_name(name)
    store = Path(os.path.abspath(store))
    path = store / f"{name}{RECORDING_SUFFIX}"
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    try:
        make_private_dirs(store)
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
    except FileExistsError:
        raise RecordingExistsError(path, name) from None
    except OSError as exc:
        raise _cannot_create(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), PRIVATE_FILE_MODE)  # exactly 0600, whatever the umask
            file.write(encode_row(new_header(name)))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise _cannot_create(path, exc) from None
    return path


def _cannot_create(path: Path, exc: OSError) -> RecordingFileError:
    return RecordingFileError(
        str(path),
        f"cannot create the recording ({exc.strerror or exc})",
        advice="check the store folder is writable and the disk has space",
    )


Protected = Path | Sequence[Path] | None
"""The recording(s) ``delete`` and ``prune`` never remove: the active one, or every one a broken
configuration may name (see :func:`~openprogram.store.names. protected_recordings`)."""


def _is_protected(path: Path, active: Protected) -> bool:
    if active is None:
        return False
    if isinstance(active, Path):
        return is_same_file(path, active)
    return any(is_same_file(path, item) for item in active)


def check_deletable(store: Path, arg: str, *, active: Protected) -> Path:
    """The path of the recording named ``arg``, if :func:`delete_recording` would delete it.

    Only a name is accepted — a path (``../x``, ``/abs/x.jsonl``) is refused with
    :class:`RecordingNameError` — and the active recording, a symlink, a directory and a file
    that is not ``*.jsonl`` are refused with :class:`RecordingRefusedError`; a missing one
    raises :class:`RecordingNotFoundError`. Nothing is changed. The path is inside the
    resolved store folder."""
    if is_path_argument(arg):
        raise RecordingNameError(
            arg,
            f"delete takes a recording name from `openprogram recordings list`, not a path "
            f"({arg!r})",
        )
    ref = resolve_recording(arg, resolve_store(store))
    path = ref.path

    def refuse(reason: str) -> RecordingRefusedError:
        return RecordingRefusedError(path, ref.name, reason)

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise RecordingNotFoundError(path, ref.name) from None
    except OSError as exc:
        raise RecordingDeleteError(path, exc.strerror or str(exc)) from None
    if stat.S_ISLNK(info.st_mode):
        raise refuse("it is a symbolic link; remove the link itself if you mean to")
    if stat.S_ISDIR(info.st_mode):
        raise refuse("it is a directory, not a recording")
    if path.suffix != RECORDING_SUFFIX:
        raise refuse(f"only {RECORDING_SUFFIX} files are recordings")
    if not stat.S_ISREG(info.st_mode):
        raise refuse("it is not a regular file (a FIFO, a device or a socket), so not a recording")
    if _is_protected(path, active):
        raise refuse("it is the active recording; run `openprogram recordings off` first")
    return path


def delete_recording(store: Path, arg: str, *, active: Protected) -> Path:
    """Delete the recording named ``arg`` from the store, after :func:`check_deletable`;
    returns its path (inside the resolved store folder)."""
    path = check_deletable(store, arg, active=active)
    name = path.stem
    try:
        with _folder(path.parent) as folder:
            if not _is_regular(path.name, folder):  # replaced since it was checked
                raise RecordingRefusedError(path, name, "it is no longer a regular file")
            os.unlink(path.name, dir_fd=folder)
    except FileNotFoundError:
        raise RecordingNotFoundError(path, name) from None
    except OSError as exc:
        raise RecordingDeleteError(path, exc.strerror or str(exc)) from None
    return path


@contextlib.contextmanager
def _folder(path: Path) -> Iterator[int]:
    """A descriptor of the (resolved) store folder, to list and remove entries through: the
    folder itself may not be a symlink by now."""
    flags = (
        os.O_RDONLY
        | getattr(os, "O_DIRECTORY", 0)
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    descriptor = os.open(path, flags)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _is_regular(name: str, folder: int) -> bool:
    """Whether ``name`` in ``folder`` is a regular file (a symlink is not followed)."""
    return stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)


@dataclass
class PruneResult:
    """What ``prune`` removed (or, with ``dry_run``, would remove), kept, and failed on."""

    removed: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)
    dry_run: bool = False


def check_prune_criteria(*, older_than_days: float | None, keep: int | None) -> None:
    """Raise :class:`PruneCriteriaError` unless at least one criterion is given, and none is
    negative."""
    if older_than_days is None and keep is None:
        raise PruneCriteriaError(
            "prune needs a criterion: give --older-than DAYS, --keep N, or both"
        )
    if older_than_days is not None and older_than_days < 0:
        raise PruneCriteriaError(f"--older-than must be 0 or more days, not {older_than_days}")
    if keep is not None and keep < 0:
        raise PruneCriteriaError(f"--keep must be 0 or more, not {keep}")


def select_for_prune(
    store: Path,
    *,
    older_than_days: float | None,
    keep: int | None,
    active: Protected,
    now: datetime | None = None,
) -> tuple[list[Path], list[Path]]:
    """Split the store's recordings into (to remove, to keep), newest first in each.

    ``keep`` spares the N newest (by ``created_at``, else mtime); ``older_than_days`` selects files
    last modified longer ago than that (a file with no readable header is prunable by age). Given
    both, only files both criteria select are removed. The active recording is always kept (and
    counts among the N newest when it is one of them); symlinks and files that are not ``*.jsonl``
    are never considered. Paths are inside the resolved store folder."""
    check_prune_criteria(older_than_days=older_than_days, keep=keep)
    folder = resolve_store(store)
    if keep is None:
        newest = sorted(recording_files(folder), key=lambda item: (-item[1].st_mtime, item[0].name))
        candidates = [(path, info.st_mtime) for path, info in newest]
    else:
        candidates = [(summary.path, summary.mtime) for summary in summarize_store(folder)]
    moment = (now or datetime.now(UTC)).timestamp()
    remove: list[Path] = []
    kept: list[Path] = []
    for rank, (path, mtime) in enumerate(candidates):
        selected = (keep is None or rank >= keep) and (
            older_than_days is None or moment - mtime > older_than_days * SECONDS_PER_DAY
        )
        (remove if selected and not _is_protected(path, active) else kept).append(path)
    return remove, kept


def prune_recordings(
    store: Path,
    *,
    older_than_days: float | None = None,
    keep: int | None = None,
    active: Protected = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PruneResult:
    """Delete what :func:`select_for_prune` selects; a file that fails goes to ``failed``.

    Every file is removed through a descriptor of the resolved store folder, and only while
    it is still a regular file there."""
    folder = resolve_store(store)
    remove, kept = select_for_prune(
        folder, older_than_days=older_than_days, keep=keep, active=active, now=now
    )
    result = PruneResult(kept=kept, dry_run=dry_run)
    if dry_run or not remove:
        result.removed.extend(remove)
        return result
    try:
        with _folder(folder) as descriptor:
            for path in remove:
                _prune_one(path, folder, descriptor, result)
    except OSError as exc:  # the store folder itself cannot be opened any more
        reason = exc.strerror or str(exc)
        done = {*result.removed, *result.kept, *(path for path, _ in result.failed)}
        result.failed.extend((path, reason) for path in remove if path not in done)
    return result


def _prune_one(path: Path, folder: Path, descriptor: int, result: PruneResult) -> None:
    if path.parent != folder:  # listed from elsewhere: never act outside the store
        result.kept.append(path)
        return
    try:
        if not _is_regular(path.name, descriptor):  # replaced by a link since we listed
            result.kept.append(path)
            return
        os.unlink(path.name, dir_fd=descriptor)
    except FileNotFoundError:
        result.removed.append(path)  # already gone: removed by someone else
    except OSError as exc:
        result.failed.append((path, exc.strerror or str(exc)))
    else:
        result.removed.append(path)
