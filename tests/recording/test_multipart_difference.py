"""A body stored whole (an upload, ``multipart/form-data``) that drifted is named by the part
that differs — the real ``openai`` SDK's ``audio.transcriptions.create`` against a loopback
server, replayed with another model or file — and two long values alike for the first
characters a report shows are shown around the first character they differ at."""

from __future__ import annotations

import base64
import contextlib
from pathlib import Path
from typing import Any

import openai
import pytest

import openprogram
from openprogram.errors import ReplayMismatch
from openprogram.recording.difference import Difference, find_first_difference
from openprogram.recording.multipart_bodies import body_difference, multipart_parts
from openprogram.recording.reader import read_recording
from openprogram.recording.report import MISSING, REPORT_LIMIT, format_report_values
from openprogram.store.comparison import compare_recordings
from tests.support.cli_runner import run
from tests.support.sdk_server import SdkServer

AUDIO = bytes(range(256)) * 8
"""A file that is not UTF-8, longer than a report line."""


def transcribe(server: SdkServer, path: Path, mode: str, **changed: Any) -> None:
    """``audio.transcriptions.create`` of :data:`AUDIO` as ``a.wav``, under ``mode``."""
    arguments: dict[str, Any] = {"model": "whisper-1", "file": ("a.wav", AUDIO, "audio/wav")}
    arguments.update(changed)
    client = openai.OpenAI(api_key="sk-test", base_url=server.openai_url, max_retries=0)
    with (
        openprogram.record_replay(path, mode=mode),  # type: ignore[arg-type]
        contextlib.suppress(openai.NotFoundError),  # the server has no transcriptions: a 404
    ):
        client.audio.transcriptions.create(**arguments)


def mismatch_of(server: SdkServer, path: Path, **changed: Any) -> str:
    with pytest.raises(ReplayMismatch) as caught:
        transcribe(server, path, "replay", **changed)
    return str(caught.value)


@pytest.fixture
def server() -> Any:
    with SdkServer() as running:
        yield running


@pytest.fixture
def recorded(server: SdkServer, tmp_path: Path) -> Path:
    path = tmp_path / "upload.jsonl"
    transcribe(server, path, "record")
    assert '"body_base64"' in path.read_text()  # the upload is stored whole
    return path


def test_another_model_is_named_as_the_part_that_differs(server: SdkServer, recorded: Path) -> None:
    assert mismatch_of(server, recorded, model="whisper-2") == (
        'replay mismatch at call 0, field body[part "model"]:\n'
        "recorded 'whisper-1', incoming 'whisper-2'"
    )


def test_another_file_is_shown_around_its_first_differing_byte(
    server: SdkServer, recorded: Path
) -> None:
    changed = bytearray(AUDIO)
    changed[1000] = 0x17
    report = mismatch_of(server, recorded, file=("a.wav", bytes(changed), "audio/wav"))
    around = (
        "d8 d9 da db dc dd de df e0 e1 e2 e3 e4 e5 e6 e7 {} e9 ea eb ec ed ee ef f0 f1 f2 "
        "f3 f4 f5 f6 f7 f8 f9 fa fb fc fd fe ff 00 01 02 03 04 05 06 07 …"
    )
    assert report == (
        'replay mismatch at call 0, field body[part "file"]:\n'
        f"recorded '2,048 bytes; bytes 984..1,031: {around.format('e8')}', "
        f"incoming '2,048 bytes; bytes 984..1,031: {around.format('17')}'"
    )


def test_another_file_name_is_named_in_its_headers(server: SdkServer, recorded: Path) -> None:
    report = mismatch_of(server, recorded, file=("b.wav", AUDIO, "audio/wav"))
    assert report.startswith(
        'replay mismatch at call 0, field body[part "file"].headers.content-disposition:\n'
        'recorded \'form-data; name="file"; filename="a.wav"\', '
    )
    assert report.endswith('filename="b.wav"\'')


def test_recordings_diff_names_the_part_too(
    server: SdkServer, recorded: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.jsonl"
    transcribe(server, other, "record", model="whisper-2")
    comparison = compare_recordings(read_recording(recorded), read_recording(other))
    assert comparison.first is not None
    assert comparison.first.difference.field_path == 'body[part "model"]'
    shown = run("diff", str(recorded), str(other))
    assert shown.exit_code == 1
    assert "field body[part \"model\"]:\nA 'whisper-1', B 'whisper-2'" in shown.stdout


# --- the parts, as bytes ---------------------------------------------------------------------


def form(*parts: tuple[str, bytes], boundary: str = "b0undary") -> bytes:
    body = b""
    for headers, content in parts:
        body += f"--{boundary}\r\n{headers}\r\n\r\n".encode() + content + b"\r\n"
    return body + f"--{boundary}--\r\n".encode()


def field(name: str, value: str) -> tuple[str, bytes]:
    return f'Content-Disposition: form-data; name="{name}"', value.encode()


def test_the_parts_of_a_body() -> None:
    body = form(field("model", "whisper-1"), field("language", "fr"))
    parts = multipart_parts(body)
    assert parts is not None
    assert [(part.name, part.content) for part in parts] == [
        ("model", b"whisper-1"),
        ("language", b"fr"),
    ]


@pytest.mark.parametrize(
    "body",
    [b"", b"plain text", b"--b\r\nno closing delimiter", b"--\r\n", b"--b\r\nx\r\n--b--"],
)
def test_a_body_that_is_not_multipart_has_no_parts(body: bytes) -> None:
    assert multipart_parts(body) is None


def as_text(body: bytes) -> str:
    return body.decode()


@pytest.mark.parametrize(
    ("recorded", "incoming", "found"),
    [
        (
            form(field("a", "1"), field("model", "m1")),
            form(field("a", "1"), field("model", "m2")),
            ('body[part "model"]', "m1", "m2"),
        ),
        (
            form(field("a", "1")),
            form(field("a", "1"), field("b", "2")),
            (
                "body[part 1]",
                MISSING,
                {"headers": {"content-disposition": 'form-data; name="b"'}, "content": "2"},
            ),
        ),
        (
            form(field("a", "1"), field("b", "2")),
            form(field("a", "1"), field("c", "2")),
            ("body[part 1].name", "b", "c"),
        ),
        (
            form(field("f", "1"), field("f", "2")),
            form(field("f", "1"), field("f", "3")),
            ("body[part 1]", "2", "3"),  # a name given twice: the part by its place
        ),
    ],
)
def test_the_first_part_that_differs_is_named(
    recorded: bytes, incoming: bytes, found: tuple[str, Any, Any]
) -> None:
    assert body_difference("body_text", as_text(recorded), as_text(incoming)) == found
    encoded = [base64.b64encode(body).decode() for body in (recorded, incoming)]
    assert body_difference("body_base64", *encoded) == found
    assert find_first_difference(
        {"body_text": as_text(recorded)}, {"body_text": as_text(incoming)}
    ) == Difference(*found)


def test_a_binary_body_that_is_not_multipart_is_shown_decoded() -> None:
    old, new = b"\x00\x01binary", b"\x00\x02binary"
    encoded = [base64.b64encode(body).decode() for body in (old, new)]
    assert find_first_difference({"body_base64": encoded[0]}, {"body_base64": encoded[1]}) == (
        Difference("body_base64", "\x00\x01binary", "\x00\x02binary")
    )


def test_a_body_that_is_not_utf_8_is_shown_in_hex_around_its_first_differing_byte() -> None:
    old, new = b"\xff" * 10 + b"\x01", b"\xff" * 10 + b"\x02\x03"
    encoded = [base64.b64encode(body).decode() for body in (old, new)]
    assert body_difference("body_base64", *encoded) == (
        "body_base64",
        "11 bytes; bytes 0..10: ff ff ff ff ff ff ff ff ff ff 01",
        "12 bytes; bytes 0..11: ff ff ff ff ff ff ff ff ff ff 02 03",
    )


def test_bodies_whose_parts_are_equal_keep_the_difference_at_the_section() -> None:
    body = form(field("a", "1"))
    assert body_difference("body_text", as_text(body), as_text(body) + "epilogue") == (
        "body_text",
        as_text(body),
        as_text(body) + "epilogue",
    )


# --- long values on a report line -----------------------------------------------------------


def test_two_values_alike_past_the_limit_are_shown_around_their_difference() -> None:
    common = "x" * 500
    old, new = format_report_values(common + "A" + "y" * 500, common + "B" + "y" * 500)
    assert (old[0], old[-1], new[0], new[-1]) == ("…", "…", "…", "…")
    assert ("xA" in old, "xB" in new) == (True, True)
    assert len(old) == len(new) == REPORT_LIMIT + 2


def test_values_that_differ_early_are_cut_as_before() -> None:
    old, new = format_report_values("a" + "x" * 500, "b" + "x" * 500)
    assert (old, new) == ("'a" + "x" * 198 + "…", "'b" + "x" * 198 + "…")


def test_a_value_that_is_the_start_of_the_other_shows_where_it_ends() -> None:
    old, new = format_report_values("x" * 300, "x" * 300 + "more")
    assert (old[-2:], new[-6:]) == ("x'", "xmore'")
