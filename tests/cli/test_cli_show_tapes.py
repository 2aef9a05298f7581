"""``recordings show`` lists the tape entries after the calls (and in ``--json``)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_runner import run
from tests.support.recording_rows import call_rows, header, write_rows


def write(path: Path) -> Path:
    rows = [
        header(),
        *call_rows(0, text="hi"),
        {"type": "tape", "tape": "weather", "args": {"city": "Paris"}, "result": {"temp": 21}},
        {
            "type": "tape",
            "tape": "openprogram.now",
            "args": {},
            "result": 1767225600.5,
            "nondeterministic": True,
            "within": "tool:stamp",
        },
        {
            "type": "tape",
            "tape": "weather",
            "args": {},
            "error": {"type": "KeyError", "message": "x"},
        },
    ]
    return write_rows(path, rows)


def test_show_lists_each_tape_entry_with_its_arguments_and_result(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl")
    result = run("show", str(path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index("3 tape entries:")
    assert lines[start:] == [
        "3 tape entries:",
        'tape weather[0]  {"city": "Paris"}',
        '  → {"temp": 21}',
        "tape openprogram.now[0]  (within tool:stamp)",
        "  → 1767225600.5  (non-deterministic)",
        "tape weather[1]",
        "  ! KeyError: x",
    ]


def test_show_json_holds_the_tape_entries(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl")
    result = run("show", str(path), "--json")
    assert result.exit_code == 0, result.output
    tapes = json.loads(result.stdout)["tapes"]
    assert [(entry["tape"], entry["index"], entry["line"]) for entry in tapes] == [
        ("weather", 0, 9),
        ("openprogram.now", 0, 10),
        ("weather", 1, 11),
    ]
    assert tapes[2]["error"] == "KeyError: x"
    assert tapes[1]["within"] == "tool:stamp"
