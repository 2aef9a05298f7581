"""``show`` reads events as replay does (an odd event is one line, exit 2), and neither
``show`` nor ``list`` lets a recording drive the terminal: control characters are shown
escaped in human output, and left as they are in ``--json``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.recording.format import new_header
from openprogram.recording.token_shapes import PLACEHOLDER
from tests.support.cli_runner import error_line, run
from tests.support.recording_rows import Row, call_rows, header, stored, text_events, write_rows
from tests.support.secret_samples import GITHUB_TOKEN

CONTROLS = {
    "ESC": "\x1b",
    "BEL": "\x07",
    "CSI clear screen": "\x1b[2J",
    "hidden text": "\x1b[8m",
    "OSC window title": "\x1b]0;owned\x07",
    "C1 CSI": "\x9b",
    "bidi override": "\u202e",
    "backspace": "\x08",
    "carriage return": "\r",
}


def recording_with_events(name: str, events: list[Row]) -> None:
    write_rows(stored(name), [header(name), *call_rows(0, events)])


@pytest.mark.parametrize("index", ["zero", [0], {"i": 0}, 1.5, None])
def test_a_content_index_that_is_not_a_whole_number_is_one_line_exit_2(index: Any) -> None:
    recording_with_events(
        "odd", [{"type": "text_delta", "content_index": index, "delta": "x"}, *text_events("y")]
    )

    for arguments in (["show", "odd"], ["show", "odd", "--json"]):
        result = run(*arguments)

        assert result.exit_code == 2, result.output
        assert isinstance(result.exception, SystemExit)
        line = error_line(result)
        assert (
            f"{recordings_dir() / 'odd.jsonl'}, line 3: text_delta event field content_index"
            in line
        )
        assert result.stdout == ""


def test_a_content_index_replay_reads_as_a_number_orders_the_blocks_as_replay_does() -> None:
    recording_with_events(
        "order",
        [
            {"type": "text_delta", "content_index": 1, "delta": "second"},
            {"type": "text_delta", "content_index": "0", "delta": "first"},
        ],
    )

    result = run("show", "order", "--json")

    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["calls"][0]["reply_text"] == "first\nsecond"


def escaped(text: str) -> str:
    """How human output shows ``text``: each control character as its escape."""
    return "".join(
        char
        if char.isprintable()
        else f"\\x{ord(char):02x}"
        if ord(char) < 0x100
        else f"\\u{ord(char):04x}"
        for char in text
    )


@pytest.mark.parametrize("control", CONTROLS.values(), ids=CONTROLS.keys())
def test_show_escapes_control_characters_in_every_text(control: str) -> None:
    text = f"a{control}b"
    rows = call_rows(0, text=text, model_id=f"m{control}")
    for row in rows:
        event = row.get("event")
        if isinstance(event, dict) and event["type"] in ("text_delta", "text_end"):
            event["delta" if "delta" in event else "content"] = text
    write_rows(recordings_dir() / "controls.jsonl", [new_header("controls"), *rows])

    result = run("show", "controls")

    assert result.exit_code == 0, result.stderr
    assert not any(char in result.stdout for char in control if not char.isprintable())
    assert f"  > user: a{escaped(control)}b" in result.stdout
    assert f"  < a{escaped(control)}b" in result.stdout
    assert f"fake:m{escaped(control)}" in result.stdout

    as_json = run("show", "controls", "--json")

    view = json.loads(as_json.stdout)["calls"][0]
    assert (view["input_text"], view["reply_text"]) == (text, text)
    assert view["model"] == f"fake:m{control}"


@pytest.mark.parametrize("control", CONTROLS.values(), ids=CONTROLS.keys())
def test_list_escapes_control_characters(control: str) -> None:
    rows = [new_header("x"), *call_rows(0, model_id=f"m{control}")]
    write_rows(recordings_dir() / f"n{control}x.jsonl", rows)
    write_rows(recordings_dir() / "bad.jsonl", [new_header("bad"), f"{{{control}"])

    result = run("list")

    assert result.exit_code == 0, result.stderr
    assert not any(char in result.stdout for char in control if not char.isprintable())
    assert f"n{escaped(control)}x" in result.stdout
    assert f"m{escaped(control)}" in result.stdout  # in a narrow table, without its api

    listed = {item["name"]: item for item in json.loads(run("list", "--json").stdout)}
    assert listed[f"n{control}x"]["models"] == [f"fake:m{control}"]


def test_tabs_and_newlines_in_list_cells_cannot_break_the_layout() -> None:
    write_rows(recordings_dir() / "tab.jsonl", [new_header("t"), *call_rows(0, model_id="a\tb\nc")])

    result = run("list")

    assert result.exit_code == 0, result.stderr
    assert "fake:a\\tb\\nc" in result.stdout


def test_a_key_streamed_cut_across_deltas_is_not_shown_whole() -> None:
    key = GITHUB_TOKEN
    recording_with_events("split", text_events("my key is ", key[:12], key[12:]))

    for arguments in (["show", "split"], ["show", "split", "--json"]):
        result = run(*arguments)
        assert result.exit_code == 0, result.output
        assert key not in result.stdout
        assert PLACEHOLDER in result.stdout
