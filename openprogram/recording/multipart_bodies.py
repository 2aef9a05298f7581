"""Where two HTTP request bodies stored as text or base64 first differ, named by the part of
a ``multipart/…`` body (an upload: ``audio.transcriptions.create``, a file sent with form
fields) instead of by the whole body.

A body that is not JSON is stored whole, as ``body_text`` or ``body_base64`` (see
:mod:`~openprogram.recording.http_rows`), so the comparison finds two long strings that
differ somewhere. :func:`body_difference` reads both as multipart bodies — the first line is
the delimiter, ``--`` and the boundary; each part is headers, a blank line, its content; the
body ends with the delimiter and ``--`` — and names the first part that differs:

* ``body[part "model"]``, with each side's content, when a part's content differs —
  ``[part 2]`` for a part whose name is not given, or is given to more than one part;
* ``body[part "file"].headers.content-disposition`` (the header names lower-case), when its
  headers differ (another file name, another content type);
* ``body[part 2].name``, when the parts are not the same fields, and ``body[part 2]`` with
  :data:`~openprogram.recording.report.MISSING` on one side when one body has more parts.

The path is for the reader, not an ``ignore_fields`` entry. A body that is not multipart on both
sides (or whose parts are all equal, the bodies differing around them) keeps the difference at its
section; a ``body_base64`` is then shown decoded, like a part's content: as text when both sides are
UTF-8 (the report shows a long text around the first character the two differ at,
:func:`~openprogram.recording.report.format_report`), else as its size and the bytes in hex around
the first byte that differs (``2,048 bytes; bytes 984..1,031: d8 d9 … e7 17 e9 …``)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Final

from openprogram.recording.report import MISSING

__all__ = ["BODY_SECTIONS", "MultipartPart", "body_difference", "multipart_parts"]

BODY_SECTIONS: Final = ("body_text", "body_base64")
"""The request sections holding a body stored whole: as text, or as base64."""

_LONGEST_BOUNDARY: Final = 70
"""The longest boundary a multipart body may have (RFC 2046)."""

_NAME: Final = re.compile(r'(?:^|;)\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))', re.IGNORECASE)


@dataclass(frozen=True)
class MultipartPart:
    """One part of a multipart body: its headers (lower-case names, in order) and content."""

    headers: tuple[tuple[str, str], ...]
    content: bytes

    @property
    def name(self) -> str | None:
        """The field the part is: the ``name`` of its ``Content-Disposition`` header."""
        for header, value in self.headers:
            if header == "content-disposition":
                match = _NAME.search(value)
                if match is not None:
                    return match.group(1) if match.group(1) is not None else match.group(2)
        return None


def multipart_parts(body: bytes) -> list[MultipartPart] | None:
    """The parts of ``body``, or None when it is not a whole multipart body (it does not
    start with its delimiter, or does not end with the closing one)."""
    end = body.find(b"\r\n")
    if not body.startswith(b"--") or not 2 < end <= 2 + _LONGEST_BOUNDARY:
        return None
    pieces = (b"\r\n" + body).split(b"\r\n--" + body[2:end])
    parts: list[MultipartPart] = []
    for piece in pieces[1:]:
        if piece.startswith(b"--"):
            return parts  # the closing delimiter; what follows is the epilogue
        if not piece.startswith(b"\r\n"):
            return None
        head, separator, content = piece[2:].partition(b"\r\n\r\n")
        if not separator:
            if not head.startswith(b"\r\n"):
                return None
            head, content = b"", head[2:]  # a part without headers
        parts.append(MultipartPart(_headers(head), content))
    return None  # no closing delimiter


def _headers(head: bytes) -> tuple[tuple[str, str], ...]:
    found = []
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name:
            found.append((name.strip().lower(), value.strip()))
    return tuple(found)


def body_difference(section: str, recorded: Any, incoming: Any) -> tuple[str, Any, Any]:
    """Where the bodies ``recorded`` and ``incoming`` of ``section`` (one of
    :data:`BODY_SECTIONS`), found to differ, first differ: a field path and each side's
    value there (see the module's docstring)."""
    old, new = _bytes(section, recorded), _bytes(section, incoming)
    if old is None or new is None:
        return section, recorded, incoming
    parts_old, parts_new = multipart_parts(old), multipart_parts(new)
    if parts_old is not None and parts_new is not None:
        found = _parts_difference(parts_old, parts_new)
        if found is not None:
            return found
    if section == "body_base64":
        return (section, *_contents(old, new))
    return section, recorded, incoming


def _bytes(section: str, body: Any) -> bytes | None:
    if not isinstance(body, str):
        return None
    if section == "body_text":
        return body.encode("utf-8", errors="surrogatepass")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None


def _parts_difference(
    recorded: list[MultipartPart], incoming: list[MultipartPart]
) -> tuple[str, Any, Any] | None:
    names = [part.name for part in (*recorded, *incoming)]
    for index in range(max(len(recorded), len(incoming))):
        old = recorded[index] if index < len(recorded) else None
        new = incoming[index] if index < len(incoming) else None
        if old is None or new is None:
            return f"body[part {index}]", _shown(old), _shown(new)
        if old.name != new.name:
            return f"body[part {index}].name", old.name, new.name
        name = old.name
        where = (
            f"body[part {json.dumps(name, ensure_ascii=False)}]"
            if name is not None and names.count(name) == 2
            else f"body[part {index}]"
        )
        if old.headers != new.headers:
            return _headers_difference(where, dict(old.headers), dict(new.headers))
        if old.content != new.content:
            return (where, *_contents(old.content, new.content))
    return None


def _headers_difference(
    where: str, recorded: dict[str, str], incoming: dict[str, str]
) -> tuple[str, Any, Any]:
    for name in sorted(recorded.keys() | incoming.keys()):
        old, new = recorded.get(name, MISSING), incoming.get(name, MISSING)
        if old != new:
            return f"{where}.headers.{name}", old, new
    return f"{where}.headers", list(recorded.items()), list(incoming.items())  # order only


def _shown(part: MultipartPart | None) -> Any:
    """A whole part as a report shows it (MISSING for none)."""
    if part is None:
        return MISSING
    try:
        content = part.content.decode("utf-8")
    except UnicodeDecodeError:
        content = f"{len(part.content):,} bytes"
    return {"headers": dict(part.headers), "content": content}


_HEX_BEFORE: Final = 16
"""Bytes shown in hex before the first one two binary contents differ at."""

_HEX_SHOWN: Final = 48
"""Bytes shown in hex in all."""


def _contents(recorded: bytes, incoming: bytes) -> tuple[str, str]:
    """Two contents that differ as a report shows them (text, so that a difference stays
    JSON, for ``diff --json``): as text when both are UTF-8, else each as its size and the
    same bytes of both in hex, from a little before the first one they differ at."""
    try:
        return recorded.decode("utf-8"), incoming.decode("utf-8")
    except UnicodeDecodeError:
        pass
    first = next(
        (index for index, (a, b) in enumerate(zip(recorded, incoming, strict=False)) if a != b),
        min(len(recorded), len(incoming)),
    )
    start = max(0, first - _HEX_BEFORE)
    return _hex_window(recorded, start), _hex_window(incoming, start)


def _hex_window(content: bytes, start: int) -> str:
    shown = content[start : start + _HEX_SHOWN]
    if not shown:
        return f"{len(content):,} bytes"
    end = start + len(shown) - 1
    more = " …" if end + 1 < len(content) else ""
    return f"{len(content):,} bytes; bytes {start:,}..{end:,}: {shown.hex(' ')}{more}"
