"""A body recorded compressed, decoded — never past a size limit.

A cassette keeps a response body as the server sent it; when the server compressed it
(``content-encoding: gzip``, ``deflate`` or ``br``) the recorder would have stored it decoded,
and so does an import. A few kilobytes of compressed zeros can decode to gigabytes (a
"decompression bomb"), so each decoder here runs incrementally: every step asks for a
mebibyte at most, and no more than is left under the limit (brotli's steps end at a block, up
to a mebibyte past what was asked), and decoding stops as soon as the output passes the
limit. No more than the limit and a step or two is ever held.

brotli bounds its output only from version 1.2 (``Decompressor.process``'s
``output_buffer_limit``); an older one is refused rather than used unbounded."""

from __future__ import annotations

import zlib
from typing import Final

from openprogram.body_limit import MEBIBYTE

__all__ = ["CODINGS", "BodyRefused", "decode_body", "megabytes"]

CODINGS: Final = ("gzip", "x-gzip", "deflate", "br")
"""The content codings decoded."""
_STEP: Final = MEBIBYTE
"""The most output one step is asked for."""
_NEEDS_BROTLI: Final = "is brotli-encoded, which needs brotli"
_INSTALL_BROTLI: Final = "pip install 'openprogram[vcr]'"


class BodyRefused(Exception):
    """A body that is not decoded: what is wrong, worded to follow "the response body of
    interaction N", and whether it is that the body decodes too large."""

    def __init__(self, problem: str, *, too_large: bool = False) -> None:
        self.problem = problem
        self.too_large = too_large
        super().__init__(problem)


class _Undecodable(Exception):
    """A body that is not in the coding it names."""


def megabytes(size: int) -> str:
    """A size as the ``MB`` options count it: ``64 MB``."""
    return f"{size / MEBIBYTE:g} MB"


def decode_body(body: bytes, coding: str, *, limit: int) -> bytes | None:
    """``body`` decoded of ``coding`` (one of :data:`CODINGS`), or None when it is not in that
    coding (vcrpy's ``decode_compressed_response`` stored it decoded already). Raises
    :class:`BodyRefused` as soon as the output passes ``limit`` bytes, or when brotli is
    needed and missing (or too old to decode within a bound)."""
    try:
        if coding in ("gzip", "x-gzip"):
            decoded = _gunzip(body, limit)
        elif coding == "deflate":
            try:
                decoded = _inflate(body, zlib.MAX_WBITS, limit)
            except _Undecodable:  # raw deflate, as some servers send it
                decoded = _inflate(body, -zlib.MAX_WBITS, limit)
        else:
            decoded = _unbrotli(body, limit)
    except _Undecodable:
        return None
    if len(decoded) > limit:
        raise BodyRefused(f"decodes ({coding}) to more than {megabytes(limit)}", too_large=True)
    return bytes(decoded)


def _inflate(data: bytes, wbits: int, limit: int) -> bytearray:
    """One zlib, raw deflate or gzip (``wbits``) stream, stopped once past ``limit``;
    anything after the stream's end is left out."""
    output = bytearray()
    _inflate_into(output, zlib.decompressobj(wbits), data, limit)
    return output


def _gunzip(data: bytes, limit: int) -> bytearray:
    """Every gzip member of ``data`` (the zero bytes some writers pad between them skipped),
    as :func:`gzip.decompress` reads them, stopped once past ``limit``."""
    output = bytearray()
    rest = data
    while rest and len(output) <= limit:
        gzip_member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        rest = _inflate_into(output, gzip_member, rest, limit).lstrip(b"\0")
    return output


def _inflate_into(
    output: bytearray, decompressor: zlib._Decompress, data: bytes, limit: int
) -> bytes:
    """Add one stream of ``data`` to ``output``, a step at a time, each asking for at most a
    step and one byte more than ``limit`` allows; what followed the stream."""
    rest = data
    try:
        while not decompressor.eof and len(output) <= limit:
            before = len(output)
            output += decompressor.decompress(rest, min(_STEP, limit + 1 - before))
            if len(output) == before and len(decompressor.unconsumed_tail) == len(rest):
                raise _Undecodable  # the input ended before the stream did
            rest = decompressor.unconsumed_tail
    except zlib.error:
        raise _Undecodable from None
    return decompressor.unused_data


def _unbrotli(data: bytes, limit: int) -> bytearray:
    try:
        import brotli  # type: ignore[import-untyped]  # the optional extra ``vcr``
    except ImportError:
        raise BodyRefused(f"{_NEEDS_BROTLI}: {_INSTALL_BROTLI}") from None
    decompressor = brotli.Decompressor()
    if not hasattr(decompressor, "can_accept_more_data"):
        installed = getattr(brotli, "__version__", "an older one")
        raise BodyRefused(
            f"{_NEEDS_BROTLI} 1.2 or newer to decode within a bound ({installed} is "
            f"installed): {_INSTALL_BROTLI}"
        )
    output = bytearray()
    try:
        output += decompressor.process(data, output_buffer_limit=min(_STEP, limit + 1))
        while not decompressor.is_finished() and len(output) <= limit:
            step = min(_STEP, limit + 1 - len(output))
            piece = decompressor.process(b"", output_buffer_limit=step)
            if not piece:
                raise _Undecodable  # the input ended before the stream did
            output += piece
    except brotli.error:
        raise _Undecodable from None
    return output
