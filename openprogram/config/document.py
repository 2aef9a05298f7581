"""Changes to a parsed configuration (a tomlkit document) that touch only the keys concerned.

tomlkit keeps every comment, blank line and key order it does not have to change, so the
rendered document differs from the original only where a key was set or removed.
"""

from __future__ import annotations

import enum
from collections.abc import MutableMapping
from typing import Any, Literal

import tomlkit
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

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


def set_record_replay_keys(
    document: TOMLDocument,
    *,
    mode: Literal["off", "record", "replay"],
    file: str | Literal[Keep.KEEP] | None,
) -> None:
    """Set ``record_replay.mode`` and, unless ``file`` is :data:`KEEP`, ``record_replay.file``
    (``None`` removes it). Edits ``[record_replay]`` where and however it is written (table,
    dotted keys or inline table); appends the table at the end when there is none."""
    table = document.get(TABLE)
    if table is None:
        table = tomlkit.table()
        table["mode"] = mode
        if isinstance(file, str):
            table["file"] = file
        _append_table(document, TABLE, table)
        return
    table["mode"] = mode
    if file is KEEP:
        return
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

    tomlkit has no public way to insert at a position; its container's ``_insert_after`` is
    the one its own ``insert`` operations use. Should it go away, append instead.
    """
    insert = getattr(table.value, "_insert_after", None)
    if insert is None:
        table[key] = value
        return
    insert(after, key, value)
