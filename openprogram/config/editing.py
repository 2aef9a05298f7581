"""Switching record/replay in the configuration file, and repairing a broken one with ``off``.

Only ``record_replay.mode`` (and ``record_replay.file`` when given, and the deterministic
sources ``seed``, ``clock_start`` and ``clock_step`` when told to set or remove them) change:
edits go through a parsed tomlkit document, which keeps every comment, blank line, key order
and unrelated table it does not have to change byte for byte. The resulting file is
validated (its own values, not the environment's) before anything is written, and replaced
atomically (:func:`openprogram.private_files.replace_file`).

``off`` works whatever state the file is in: a file that is not TOML, or holds invalid values, is
copied beside itself (``config.toml.broken-YYYYMMDD-HHMMSS``, :func:`write_backup`) and then
repaired — invalid values are removed and everything valid is kept, or, if it is not TOML at all, a
fresh file is started. ``record`` and ``replay`` refuse a broken file and write nothing."""

from __future__ import annotations

import contextlib
import enum
import itertools
import os
import re
import stat
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

from openprogram.config.models import Mode
from openprogram.config.paths import ConfigLocation, config_location
from openprogram.config.problems import dotted_key, value_problem
from openprogram.config.settings import (
    check_file_values,
    file_value_error,
    file_value_errors,
    parse_config,
    read_config_bytes,
)
from openprogram.deterministic_sources import RecordingSources, SteppingClock
from openprogram.errors import ConfigError
from openprogram.private_files import (
    PRIVATE_FILE_MODE,
    make_private_dirs,
    replace_file,
    sync_folder,
)
from openprogram.store.names import file_setting_problem

__all__ = ["SOURCE_KEYS", "ConfigEdit", "set_record_replay"]

TABLE = "record_replay"

HEADER = (
    "openprogram configuration. config.example.toml (in the openprogram sources) and",
    "docs/configuration.md describe every key; `openprogram recordings …` edits this file.",
)


class Keep(enum.Enum):
    """The type of :data:`KEEP`."""

    KEEP = "keep"


KEEP = Keep.KEEP
"""Leave the key as it is."""


def new_document() -> TOMLDocument:
    """An empty configuration with a short header that points at the documentation."""
    document = tomlkit.document()
    for line in HEADER:
        document.add(tomlkit.comment(line))
    document.add(tomlkit.nl())
    return document


SOURCE_KEYS: tuple[str, ...] = ("seed", "clock_start", "clock_step")
"""The keys of ``[record_replay]`` that give the configured recording its deterministic
sources (:meth:`~openprogram.config.models.RecordReplaySettings.sources`)."""


def source_values(sources: RecordingSources | None) -> dict[str, int]:
    """The keys and values that write ``sources`` (a seed, a stepping clock)."""
    values: dict[str, int] = {}
    if sources is None:
        return values
    if sources.seed is not None:
        values["seed"] = sources.seed
    if isinstance(sources.clock, SteppingClock):
        values["clock_start"] = sources.clock.start_ms
        values["clock_step"] = sources.clock.step_ms
    elif sources.clock is not None:
        raise ValueError(f"the configuration holds a stepping clock only, not {sources.clock!r}")
    return values


def set_record_replay_keys(
    document: TOMLDocument,
    *,
    mode: Mode,
    file: str | Literal[Keep.KEEP] | None,
    sources: RecordingSources | Literal[Keep.KEEP] | None = KEEP,
) -> list[str]:
    """Set ``record_replay.mode`` and, unless ``file`` is :data:`KEEP`, ``record_replay.file``
    (``None`` removes it); unless ``sources`` is :data:`KEEP`, replace the source keys with
    those ``sources`` gives (``None`` removes them). Edits ``[record_replay]`` where and
    however it is written (table, dotted keys or inline table); appends the table at the end
    when there is none. Returns the source keys removed, as ``key = value``."""
    table = document.get(TABLE)
    if table is None:
        table = tomlkit.table()
        table["mode"] = mode
        if isinstance(file, str):
            table["file"] = file
        if sources is not KEEP:
            table.update(source_values(sources))
        _append_table(document, TABLE, table)
        return []
    table["mode"] = mode
    removed: list[str] = []
    if sources is not KEEP:
        values = source_values(sources)
        for key in SOURCE_KEYS:
            if key in table:
                if key not in values:
                    removed.append(f"{key} = {table[key]}")
                del table[key]
        table.update(values)
    if file is not KEEP:
        _set_file(table, file)
    return removed


def _set_file(table: Any, file: str | None) -> None:
    if file is None:
        if "file" in table:
            del table["file"]
    elif "file" in table or not isinstance(table, Table) or "mode" not in table:
        table["file"] = file
    else:
        _insert_after(table, "mode", "file", file)


def remove_key(document: TOMLDocument, path: tuple[str, ...]) -> bool:
    """Remove the key or table at ``path``; ``False`` when there is nothing there."""
    container: Any = document
    for part in path[:-1]:
        if not isinstance(container, MutableMapping) or part not in container:
            return False
        container = container[part]
    if not isinstance(container, MutableMapping) or not path or path[-1] not in container:
        return False
    del container[path[-1]]
    return True


def _append_table(document: TOMLDocument, key: str, table: Table) -> None:
    """Append ``table`` after everything else, with one blank line before it."""
    text = document.as_string()
    if text and not text.endswith("\n"):
        document.add(tomlkit.nl())  # ends the last line
    if text and not text.endswith("\n\n"):
        document.add(tomlkit.nl())
    document.append(key, table)


def _insert_after(table: Table, after: str, key: str, value: str) -> None:
    """Put ``key`` right after ``after`` rather than after the table's trailing comments.

    tomlkit has no public way to insert at a position. Its container inserts with
    ``_insert_after`` up to 0.13 and with ``_insert_at`` (an index into its public ``body``)
    from 0.14 on; the one that is there is used, and should neither be, ``key`` is appended."""
    container = table.value
    insert_after = getattr(container, "_insert_after", None)
    if insert_after is not None:
        insert_after(after, key, value)
        return
    insert_at = getattr(container, "_insert_at", None)
    position = next(
        (
            index
            for index, (name, _item) in enumerate(container.body)
            if name is not None and name.key == after
        ),
        None,
    )
    if insert_at is None or position is None or position + 1 >= len(container.body):
        table[key] = value
        return
    insert_at(position + 1, key, value)


NOTHING_WRITTEN = "nothing was written"

REPAIR_FIRST = "run `openprogram recordings off` to repair it (or fix it); nothing was written"


@dataclass(frozen=True)
class ConfigEdit:
    """What an edit did: the file, whether it was created, and any repair."""

    path: Path
    created: bool
    backup: Path | None
    """the copy of the original, when a repair had to change more than the switched keys"""
    repaired: list[str] = field(default_factory=list)
    """what the repair removed or reset, e.g. ``removed providers.x.timeout (…)``"""
    sources_removed: list[str] = field(default_factory=list)
    """the deterministic sources the edit removed, e.g. ``seed = 99``"""


def set_record_replay(
    *,
    mode: Mode,
    file: str | Literal[Keep.KEEP] | None = KEEP,
    sources: RecordingSources | Literal[Keep.KEEP] | None = KEEP,
    location: ConfigLocation | None = None,
) -> ConfigEdit:
    """Set ``record_replay.mode`` (and ``record_replay.file`` unless ``KEEP``; ``None`` removes
    it) in the configuration file, creating the file if needed; unless ``sources`` is
    ``KEEP``, the keys of the deterministic sources become those ``sources`` gives (``None``
    removes them: :attr:`ConfigEdit.sources_removed` says which were there).

    Raises :class:`ConfigError` when the file cannot be read or written, when the result
    would be invalid, and when ``mode`` is not ``off`` and the file is broken."""
    path = (location or config_location()).path
    _check_requested(mode, file, sources, path=path)
    original = read_config_bytes(path)
    if original is None:
        document = new_document()
        set_record_replay_keys(document, mode=mode, file=file, sources=sources)
        data = _checked(document, path=path)
        _check_names_recording(document, mode=mode, path=path)
        with _unchanged_on_failure(path, "cannot be created"):
            make_private_dirs(path.parent)
            replace_file(path, data, mode=PRIVATE_FILE_MODE)
        return ConfigEdit(path=path, created=True, backup=None)
    quick = (
        _mode_set_in_place(original, mode, path=path, sources_kept=sources is KEEP)
        if mode == "off" and file is KEEP and sources in (KEEP, None)
        else None
    )
    if quick is not None:  # the one value changed in the text itself: no document built
        if quick != original:
            with _unchanged_on_failure(path, "cannot be written"):
                target = path.resolve()  # through a symlink, so the link itself stays a link
                replace_file(target, quick, mode=stat.S_IMODE(target.stat().st_mode))
        return ConfigEdit(path=path, created=False, backup=None)
    try:
        document, repaired = _repaired_document(original, path=path, mode=mode)
        if mode == "off" and file is KEEP:
            repaired += _without_unusable_file(document)
        removed = set_record_replay_keys(document, mode=mode, file=file, sources=sources)
        data = _checked(document, path=path, crlf=_uses_crlf(original))
    except (ConfigError, TOMLKitError, ValueError, KeyError, TypeError) as failure:
        # The requested values are valid (checked above), so the file is what failed.
        if mode != "off":
            raise _refusal(failure, path) from None
        # `off` must work whatever the file holds: start afresh, the original kept beside it.
        document = new_document()
        set_record_replay_keys(document, mode="off", file=file)
        data = _checked(document, path=path)
        repaired = [f"started a fresh file with mode off ({_reason(failure)})"]
        removed = []
    _check_names_recording(document, mode=mode, path=path)
    backup = None
    with _unchanged_on_failure(path, "cannot be written"):
        if repaired:
            backup = write_backup(path, original, now=datetime.now())
        if data != original:
            target = path.resolve()  # through a symlink, so the link itself stays a link
            replace_file(target, data, mode=stat.S_IMODE(target.stat().st_mode))
    return ConfigEdit(
        path=path, created=False, backup=backup, repaired=repaired, sources_removed=removed
    )


_TABLE_HEADER = re.compile(rb"^[ \t]*\[[^\n]*$", re.MULTILINE)
_RECORD_REPLAY_HEADER = re.compile(rb"^[ \t]*\[[ \t]*record_replay[ \t]*\][ \t]*(?:#[^\n]*)?\r?$")
_MODE_LINE = re.compile(
    rb'^(?P<head>[ \t]*mode[ \t]*=[ \t]*)(?P<value>"[a-z_]*"|\'[a-z_]*\')', re.MULTILINE
)


def _mode_set_in_place(
    original: bytes, mode: Mode, *, path: Path, sources_kept: bool = True
) -> bytes | None:
    """The file with ``record_replay.mode`` set to ``mode`` by rewriting that one value where it
    stands, when the file is valid and the key is written plainly in its own ``[record_replay]``
    table (``mode = "record"``), and, unless ``sources_kept``, the table holds no deterministic
    source to remove; None otherwise (the document editor then does it, repairing what needs it).

    A configuration file can be large (long comments, many providers): the editor builds a
    document of the whole file, while this reads it with the standard parser, rewrites the
    one value and parses the result again to check exactly that key changed."""
    try:
        _, values = parse_config(original, path=path)
    except ConfigError:
        return None
    if file_value_errors(values):
        return None
    table = values.get(TABLE)
    own_values: dict[str, Any] = table if isinstance(table, dict) else {}
    file = own_values.get("file")
    if isinstance(file, str) and file_setting_problem(file) is not None:
        return None  # `off` also clears a file setting that can name no recording
    if not sources_kept and any(key in own_values for key in SOURCE_KEYS):
        return None  # and the sources, which drive a recording no longer being made
    tables = list(_TABLE_HEADER.finditer(original))
    own = [n for n, table in enumerate(tables) if _RECORD_REPLAY_HEADER.match(table.group())]
    if len(own) != 1:
        return None
    start = tables[own[0]].end()
    end = tables[own[0] + 1].start() if own[0] + 1 < len(tables) else len(original)
    lines = list(_MODE_LINE.finditer(original, start, end))
    if len(lines) != 1:
        return None
    value = lines[0]
    edited = original[: value.start("value")] + f'"{mode}"'.encode() + original[value.end() :]
    try:
        _, after = parse_config(edited, path=path)
    except ConfigError:
        return None
    expected = {**values, "record_replay": {**values.get("record_replay", {}), "mode": mode}}
    return edited if after == expected and not file_value_errors(after) else None


def _check_requested(
    mode: Mode, file: str | Keep | None, sources: RecordingSources | Keep | None, *, path: Path
) -> None:
    """Refuse values that could never be saved, before looking at the file."""
    table: dict[str, str | int] = {"mode": mode}
    if isinstance(file, str):
        table["file"] = file
    if isinstance(sources, RecordingSources):
        table.update(source_values(sources))
    errors = file_value_errors({"record_replay": table})
    if errors:
        raise file_value_error(errors[0], path=path, text="", advice=NOTHING_WRITTEN)


def _repaired_document(
    original: bytes, *, path: Path, mode: Mode
) -> tuple[TOMLDocument, list[str]]:
    """The file as a tomlkit document, and, for ``off`` on invalid values, what was removed
    to make it valid. Raises for a file that is not TOML, and for invalid values otherwise."""
    text, values = parse_config(original, path=path)
    document = tomlkit.parse(text)
    errors = file_value_errors(values)
    if not errors:
        return document, []
    if mode != "off":
        raise file_value_error(errors[0], path=path, text=text)
    repaired = []
    for error in errors:
        location = error["loc"]
        keys = _key_path(location)
        problem = value_problem(error, None, show_input=False)
        if keys == ("record_replay", "mode"):
            repaired.append(f"reset record_replay.mode to off ({problem})")
        elif remove_key(document, keys):
            repaired.append(f"removed {dotted_key(keys)} ({problem})")
    return document, repaired


def _key_path(location: tuple[str | int, ...]) -> tuple[str, ...]:
    """The key that holds the value at ``location``: a bad list item takes its list along."""
    keys: list[str] = []
    for part in location:
        if isinstance(part, int):
            break
        keys.append(part)
    return tuple(keys)


def _uses_crlf(data: bytes) -> bool:
    """Whether every line of ``data`` ends in CRLF (then so should the lines an edit adds)."""
    return b"\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


def _checked(document: TOMLDocument, *, path: Path, crlf: bool = False) -> bytes:
    """The document's bytes, once its text parses and its values are valid."""
    text = document.as_string()
    if crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    data = text.encode("utf-8")
    text, values = parse_config(data, path=path)
    check_file_values(values, path=path, text=text, advice=NOTHING_WRITTEN)
    return data


def _check_names_recording(document: TOMLDocument, *, mode: Mode, path: Path) -> None:
    """``record`` and ``replay`` need ``record_replay.file`` (in the file itself, not only in
    the environment): without it ``status`` would call the result broken."""
    table = document.get(TABLE)
    if mode == "off" or (isinstance(table, MutableMapping) and table.get("file")):
        return
    purpose = "record into" if mode == "record" else "replay from"
    raise ConfigError(
        f"not set, and mode {mode!r} needs a recording to {purpose} "
        f"(`openprogram recordings {mode} NAME` sets both)",
        path=path,
        key=f"{TABLE}.file",
        advice=NOTHING_WRITTEN,
    )


def _without_unusable_file(document: TOMLDocument) -> list[str]:
    """Remove a ``record_replay.file`` that can name no recording (``off`` clears it, since
    ``status`` reports it); what was removed, as repair notes."""
    table = document.get(TABLE)
    value = table.get("file") if isinstance(table, MutableMapping) else None
    if not isinstance(value, str):
        return []
    problem = file_setting_problem(value)
    if problem is None or not remove_key(document, (TABLE, "file")):
        return []
    return [f"removed {TABLE}.file ({problem})"]


@contextmanager
def _unchanged_on_failure(path: Path, what: str) -> Iterator[None]:
    """Turn an OS failure while writing into a :class:`ConfigError` (the write is atomic, so
    the file is as it was)."""
    try:
        yield
    except OSError as failure:
        raise ConfigError(
            f"{what} ({failure.strerror or failure})",
            path=path,
            advice="check the folder's permissions and free space; the file was not changed",
        ) from None


def _refusal(failure: Exception, path: Path) -> ConfigError:
    """The error ``record``/``replay`` raise on a broken file: the problem, then what to do."""
    if isinstance(failure, ConfigError):
        return ConfigError(
            failure.problem,
            path=failure.path,
            line=failure.line,
            column=failure.column,
            key=failure.key,
            advice=REPAIR_FIRST,
        )
    return ConfigError(f"cannot be edited ({_reason(failure)})", path=path, advice=REPAIR_FIRST)


def _reason(failure: Exception) -> str:
    if isinstance(failure, ConfigError):
        where = "" if failure.line is None else f"line {failure.line}: "
        key = "" if failure.key is None else f"{failure.key}: "
        return f"{where}{key}{failure.problem}"
    return str(failure) or type(failure).__name__


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
