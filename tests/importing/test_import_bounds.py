"""``openprogram recordings import`` reads a cassette within bounds: bodies decoded no larger
than ``--max-body-size`` (decompression bombs stop there), the file and the bodies together
no larger than four such bodies, YAML aliases written out within the same bound, nesting
within the readers' limit, and only regular files. Each refusal is one line naming the file,
nothing is written, and memory stays bounded (one test runs the import in a process whose
address space is capped at 1 GiB)."""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import types
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from openprogram.body_limit import MAX_BODY_SIZE_MB, MEBIBYTE
from openprogram.recording import read_recording
from tests.support.child_processes import CLI_MAIN, python_process, user_environment
from tests.support.cli_runner import error_line, run

ZEROS = bytes(16 * MEBIBYTE)
RAISE = "openprogram recordings import --max-body-size MB raises the limit"
TOO_LARGE = "the largest body imported: nothing was written (" + RAISE + ")"


@cache
def _deflated_zeros() -> tuple[bytes, bytes]:
    """Raw deflate of 16 MiB of zeros, ending on a byte boundary with the compressor's state
    reset (so it can be repeated), and the final block that ends a stream."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    piece = compressor.compress(ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    return piece, compressor.flush()


def deflate_bomb(size: int, *, raw: bool = False) -> bytes:
    """A deflate stream of ``size`` zero bytes (a multiple of 16 MiB) in about a thousandth
    of that: the compressed piece repeated, in zlib's format (or raw)."""
    piece, end = _deflated_zeros()
    stream = piece * (size // len(ZEROS)) + end
    if raw:
        return stream
    adler = (size % 65521) << 16 | 1  # the Adler-32 of zero bytes
    return b"\x78\xda" + stream + adler.to_bytes(4, "big")


def gzip_bomb(size: int) -> bytes:
    """One gzip member of ``size`` zero bytes."""
    crc = 0
    for _ in range(size // len(ZEROS)):
        crc = zlib.crc32(ZEROS, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + deflate_bomb(size, raw=True) + struct.pack("<II", crc, size % 2**32)


def brotli_bomb(size: int) -> bytes:
    brotli = pytest.importorskip("brotli")
    compressor = brotli.Compressor(quality=1)
    pieces = [compressor.process(ZEROS) for _ in range(size // len(ZEROS))]
    return b"".join([*pieces, compressor.finish()])


def bomb(coding: str, size: int) -> bytes:
    if coding == "raw deflate":
        return deflate_bomb(size, raw=True)
    return {"deflate": deflate_bomb, "gzip": gzip_bomb, "br": brotli_bomb}[coding](size)


def interaction(body: bytes | str, coding: str | None = None, request: str = "") -> Any:
    headers = {"Content-Type": ["application/json"]}
    if coding is not None:
        headers["Content-Encoding"] = ["deflate" if coding == "raw deflate" else coding]
    return {
        "request": {
            "method": "POST",
            "uri": "https://api.example.test/v1/x",
            "headers": {},
            "body": request,
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": headers,
            "body": {"string": body},
        },
    }


def write_cassette(path: Path, *interactions: Any) -> Path:
    """A cassette as vcrpy writes one: YAML (bytes as ``!!binary``), or JSON for a ``.json``
    path (text only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cassette = {"version": 1, "interactions": list(interactions)}
    path.write_text(json.dumps(cassette) if path.suffix == ".json" else yaml.safe_dump(cassette))
    return path


def json_body(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes."""
    body = json.dumps({"data": "x" * (size - 11)}, separators=(",", ":")).encode()
    assert len(body) == size
    return body


def encoded(body: bytes, coding: str | None) -> bytes | str:
    if coding is None:
        return body.decode()
    if coding == "gzip":
        return zlib.compress(body, wbits=31)
    if coding == "deflate":
        return zlib.compress(body)
    return pytest.importorskip("brotli").compress(body)  # type: ignore[no-any-return]


# --- decoded bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["deflate", "raw deflate", "gzip", "br"])
def test_a_decompression_bomb_stops_at_the_cap(tmp_path: Path, coding: str) -> None:
    cassette = write_cassette(
        tmp_path / "bomb.yaml", interaction(bomb(coding, 64 * MEBIBYTE), coding)
    )
    out = tmp_path / "out"
    result = run("import", str(cassette), "--into", str(out), "--max-body-size", "1")
    assert result.exit_code == 1
    shown = "deflate" if coding == "raw deflate" else coding
    assert error_line(result) == (
        f"error: {cassette}: the response body of interaction 0 decodes ({shown}) to more than "
        f"1 MB, {TOO_LARGE}"
    )
    assert not out.exists()


LIMITED = f"""\
import resource
resource.setrlimit(resource.RLIMIT_AS, ({1 << 30}, {1 << 30}))
{CLI_MAIN}"""
"""The command line in a process whose address space is capped at 1 GiB."""


def test_bombs_and_dev_zero_stay_within_a_gigabyte_at_the_default_cap(tmp_path: Path) -> None:
    """The process boundary is the subject: what the import holds is measured by the kernel,
    at the default cap; each bomb decodes to 512 MiB of zeros (which, stored, would take
    gigabytes), and a link to /dev/zero would read forever."""
    folder = tmp_path / "cassettes"
    for coding in ("deflate", "gzip", "br"):
        write_cassette(folder / f"{coding}.yaml", interaction(bomb(coding, 512 * MEBIBYTE), coding))
    (folder / "zero.yaml").symlink_to("/dev/zero")
    out = tmp_path / "out"

    result = python_process(
        LIMITED, "recordings", "import", str(folder), "--into", str(out),
        env=user_environment(tmp_path / "home"), offline=True,
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        *(
            f"error: {folder / f'{coding}.yaml'}: the response body of interaction 0 decodes "
            f"({coding}) to more than {MAX_BODY_SIZE_MB} MB, {TOO_LARGE}"
            for coding in ("br", "deflate", "gzip")
        ),
        f"error: {folder / 'zero.yaml'}: is not a regular file (a character device): name a "
        "cassette file, or a folder of them",
    ]
    assert result.stdout.splitlines() == ["0 cassettes imported, 4 failed"]
    assert not out.exists()


@pytest.mark.parametrize("coding", [None, "gzip", "deflate", "br"])
def test_a_body_as_large_as_the_cap_imports_as_it_was_and_one_byte_more_does_not(
    tmp_path: Path, coding: str | None
) -> None:
    largest = json_body(MEBIBYTE)
    # An encoded body is bytes (YAML's !!binary); a body as it was is text, in JSON, read faster.
    suffix = ".yaml" if coding else ".json"
    cassette = write_cassette(
        tmp_path / f"c{suffix}", interaction(encoded(largest, coding), coding)
    )
    result = run("import", str(cassette), "--into", str(tmp_path / "out"), "--max-body-size", "1")
    assert result.exit_code == 0, result.output
    [call] = read_recording(tmp_path / "out" / "c.jsonl").calls
    assert call.event_rows[1] == {"type": "http_body", "body": json.loads(largest)}
    assert "content-encoding" not in call.event_rows[0]["headers"]

    over = write_cassette(
        tmp_path / f"over{suffix}", interaction(encoded(json_body(MEBIBYTE + 1), coding), coding)
    )
    result = run("import", str(over), "--into", str(tmp_path / "out"), "--max-body-size", "1")
    assert result.exit_code == 1
    problem = "is more than 1 MB" if coding is None else f"decodes ({coding}) to more than 1 MB"
    assert error_line(result) == (
        f"error: {over}: the response body of interaction 0 {problem}, {TOO_LARGE}"
    )
    assert not (tmp_path / "out" / "over.jsonl").exists()


def test_a_request_body_larger_than_the_cap_is_refused(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.json", interaction("{}", request=json_body(MEBIBYTE + 1).decode())
    )
    result = run("import", str(cassette), "--into", str(tmp_path / "out"), "--max-body-size", "1")
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}: the request body of interaction 0 is more than 1 MB, {TOO_LARGE}"
    )


def test_a_cassettes_bodies_together_may_be_four_times_the_cap(tmp_path: Path) -> None:
    body = zlib.compress(json_body(MEBIBYTE - 100_000), wbits=31)  # each under the cap
    five = write_cassette(tmp_path / "five.yaml", *[interaction(body, "gzip")] * 5)
    four = write_cassette(tmp_path / "four.yaml", *[interaction(body, "gzip")] * 4)
    result = run("import", str(five), str(four), "--into", str(tmp_path / "out"),
                 "--max-body-size", "1")  # fmt: skip
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {five}: its bodies come to more than 4 MB decoded, the most one cassette may "
        f"hold (4 × the largest body): nothing was written ({RAISE})"
    )
    assert len(read_recording(tmp_path / "out" / "four.jsonl").calls) == 4
    assert not (tmp_path / "out" / "five.jsonl").exists()


def test_with_brotli_older_than_1_2_a_brotli_body_is_refused_not_decoded_unbounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = types.ModuleType("brotli")
    old.__version__ = "1.1.0"  # type: ignore[attr-defined]
    old.error = Exception  # type: ignore[attr-defined]
    old.Decompressor = type("Decompressor", (), {"process": lambda self, data: data})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "brotli", old)
    cassette = write_cassette(tmp_path / "c.yaml", interaction(b"\x8b\x00\x80{}\x03", "br"))
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}: the response body of interaction 0 is brotli-encoded, which needs "
        "brotli 1.2 or newer to decode within a bound (1.1.0 is installed): pip install "
        "'openprogram[vcr]'"
    )


def test_the_cap_is_one_megabyte_or_more(tmp_path: Path) -> None:
    cassette = write_cassette(tmp_path / "c.yaml")
    result = run("import", str(cassette), "--max-body-size", "0")
    assert result.exit_code == 2
    assert error_line(result) == "error: --max-body-size is 1 (MB) or more"


# --- the file ---------------------------------------------------------------------------------


def test_a_cassette_file_may_be_four_times_the_cap(tmp_path: Path) -> None:
    text = json.dumps({"version": 1, "interactions": [interaction("{}")]})
    fits = tmp_path / "fits.json"
    fits.write_text(text + " " * (4 * MEBIBYTE - len(text)))
    over = tmp_path / "over.json"
    over.write_text(text + " " * (4 * MEBIBYTE + 1 - len(text)))
    result = run("import", str(fits), str(over), "--into", str(tmp_path / "out"),
                 "--max-body-size", "1")  # fmt: skip
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {over}: is larger than 4 MB, the largest cassette read (4 × the largest "
        f"body): nothing was read ({RAISE})"
    )
    assert len(read_recording(tmp_path / "out" / "fits.jsonl").calls) == 1


@contextmanager
def fifo_with_a_writer(path: Path) -> Iterator[Path]:
    """A FIFO at ``path`` whose writer waits for a reader, then writes nothing and closes: a
    reader that opens it without blocking is refused at once; one that opens it to read gets
    an empty file instead of hanging. Whatever happened, the writer is let go at the end."""
    os.mkfifo(path)
    writer = threading.Thread(target=lambda: os.close(os.open(path, os.O_WRONLY)), daemon=True)
    writer.start()
    try:
        yield path
    finally:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))  # lets a waiting writer open
        writer.join()


def test_a_fifo_given_is_refused_as_an_argument_without_opening_it(tmp_path: Path) -> None:
    with fifo_with_a_writer(tmp_path / "pipe.yaml") as fifo:
        result = run("import", str(fifo), "--into", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert error_line(result) == (
        f"error: {fifo}: is not a regular file (a FIFO): name a cassette file, or a folder of them"
    )


def test_a_device_given_even_through_a_link_is_refused_as_an_argument(tmp_path: Path) -> None:
    link = tmp_path / "null.yaml"
    link.symlink_to(os.devnull)
    result = run("import", str(link), "--into", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert error_line(result) == (
        f"error: {link}: is not a regular file (a character device): name a cassette file, or "
        "a folder of them"
    )


def test_in_a_folder_a_fifo_and_a_folder_named_as_cassettes_are_refused_the_rest_imported(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "cassettes"
    write_cassette(folder / "good.yaml", interaction("{}"))
    (folder / "sub.yaml").mkdir()
    with fifo_with_a_writer(folder / "pipe.yaml"):
        result = run("import", str(folder), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {folder / name}: is not a regular file (a {kind}): name a cassette file, or a "
        "folder of them"
        for name, kind in (("pipe.yaml", "FIFO"), ("sub.yaml", "directory"))
    ]
    assert len(read_recording(tmp_path / "out" / "good.jsonl").calls) == 1


# --- YAML aliases, nesting --------------------------------------------------------------------

BILLION_LAUGHS = "\n".join(
    [
        "version: 1",
        'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)),
        "interactions:",
        "- request: {method: POST, uri: 'https://api.example.test/x', headers: {}, body: *a9}",
        "  response: {status: {code: 200}, headers: {}, body: {string: ok}}",
    ]
)
"""Ten lols, each level ten of the one before: 10¹⁰ of them once the aliases are written out."""


def test_billion_laughs_is_refused_before_a_value_is_built(tmp_path: Path) -> None:
    cassette = tmp_path / "laughs.yaml"
    cassette.write_text(BILLION_LAUGHS)
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}: its YAML aliases, written out, make it larger than 256 MB, the "
        f"largest cassette read (4 × the largest body): refused, and nothing was constructed "
        f"({RAISE})"
    )
    assert not (tmp_path / "out").exists()


def test_aliases_within_the_bound_are_written_out(tmp_path: Path) -> None:
    """vcrpy's PyYAML writes an anchor where one object appears twice (``&id001``)."""
    cassette = tmp_path / "shared.yaml"
    cassette.write_text(
        "interactions:\n"
        "- request: {method: GET, uri: 'https://api.example.test/x', headers: &id001 "
        "{Accept: [application/json]}}\n"
        "  response: {status: {code: 200}, headers: *id001, body: {string: '{\"a\": 1}'}}\n"
        "- request: {method: GET, uri: 'https://api.example.test/y', headers: *id001}\n"
        "  response: {status: {code: 200}, headers: *id001, body: {string: '{\"a\": 2}'}}\n"
        "version: 1\n"
    )
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert len(read_recording(tmp_path / "out" / "shared.jsonl").calls) == 2


def test_an_alias_inside_the_value_it_names_is_refused(tmp_path: Path) -> None:
    cassette = tmp_path / "itself.yaml"
    cassette.write_text("version: 1\ninteractions: &loop\n- *loop\n")
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}, line 2: holds a YAML alias inside the value it names (a value "
        "holding itself): refused, and nothing was constructed"
    )


def nested_yaml(levels: int) -> str:
    """A cassette of no interactions whose ``extra`` value brings its nesting to ``levels``
    (the top mapping is the first)."""
    return f"version: 1\ninteractions: []\nextra: {'[' * (levels - 1)}{']' * (levels - 1)}\n"


def nested_json(levels: int) -> str:
    return (
        f'{{"version": 1, "interactions": [],\n"extra": {"[" * (levels - 1)}{"]" * (levels - 1)}}}'
    )


@pytest.mark.parametrize(("suffix", "nested"), [("yaml", nested_yaml), ("json", nested_json)])
def test_nesting_stops_at_128_levels_and_100000_never_reaches_a_recursion(
    tmp_path: Path, suffix: str, nested: Any
) -> None:
    deep = tmp_path / f"deep.{suffix}"
    deep.write_text(nested(100_000))
    limit = tmp_path / f"limit.{suffix}"
    limit.write_text(nested(128))
    past = tmp_path / f"past.{suffix}"
    past.write_text(nested(129))
    result = run("import", str(deep), str(limit), str(past), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    where = ", line 3" if suffix == "yaml" else ", line 2"
    assert result.stderr.splitlines() == [
        f"error: {deep}{where}: nested deeper than 128 levels",
        f"error: {past}{'' if suffix == 'json' else where}: nested deeper than 128 levels",
    ]
    assert (tmp_path / "out" / "limit.jsonl").exists()


def test_aliases_cannot_nest_a_yaml_cassette_deeper_either(tmp_path: Path) -> None:
    cassette = tmp_path / "aliased.yaml"
    cassette.write_text(
        f"version: 1\ninteractions: []\ninner: &inner {'[' * 100}{']' * 100}\n"
        f"outer: {'[' * 100}*inner{']' * 100}\n"
    )
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}, line 4: nested deeper than 128 levels once its YAML aliases are "
        "written out"
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("2001-13-45", "month must be in 1..12"),
        (
            "9" * 5000,
            "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits",
        ),
    ],
    ids=["date", "integer"],
)
def test_a_value_yaml_cannot_build_is_refused_with_its_line(
    tmp_path: Path, value: str, why: str
) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text(f"version: 1\ninteractions: []\nwhen: {value}\n")
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}, line 3: holds a value that cannot be built ({why})"
    )
