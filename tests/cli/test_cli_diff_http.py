"""``openprogram recordings diff`` on HTTP calls names the field that differs readably: a
request's section path, or the event by its index and type and the field inside it, with
the two values found there, in the one report format."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from typer.testing import Result

from tests.support.cli_runner import run
from tests.support.http_call_rows import write_calls
from tests.support.recording_rows import Row
from tests.support.vendor_http_rows import (
    chat_completion_call,
    chat_stream_call,
    rate_limited_call,
)


def diff(tmp_path: Path, a: list[list[Row]], b: list[list[Row]]) -> Result:
    return run(
        "diff",
        str(write_calls(tmp_path / "a.jsonl", *a)),
        str(write_calls(tmp_path / "b.jsonl", *b)),
    )


def lines(result: Result) -> list[str]:
    return result.stdout.splitlines()[:3]


def test_a_streamed_piece_that_differs(tmp_path: Path) -> None:
    changed = chat_stream_call(1)
    changed[3]["event"]["data"]["choices"][0]["delta"]["content"] = "Let me look"

    result = diff(
        tmp_path, [chat_completion_call(0), chat_stream_call(1)], [chat_completion_call(0), changed]
    )

    assert result.exit_code == 1
    assert lines(result) == [
        "✘ the recordings differ: 1 paired call whose reply differs",
        "difference at call 1, event 2 (sse), field data.choices[0].delta.content:",
        "A 'Let me check', B 'Let me look'",
    ]


def test_a_request_body_that_differs(tmp_path: Path) -> None:
    changed = chat_completion_call(0)
    changed[0]["body"]["messages"][2]["content"] = "Let me look."

    result = diff(tmp_path, [chat_completion_call(0)], [changed])

    assert result.exit_code == 1
    assert lines(result) == [
        "✘ the recordings differ: 1 call only in A, 1 only in B",
        "difference at call 0, field body.messages[2].content:",
        "A 'Let me check the weather.', B 'Let me look.'",
    ]


def test_a_status_that_differs(tmp_path: Path) -> None:
    ok = rate_limited_call(0)
    ok[1]["event"]["status"] = 200

    result = diff(tmp_path, [rate_limited_call(0)], [ok])

    assert lines(result) == [
        "✘ the recordings differ: 1 paired call whose reply differs",
        "difference at call 0, event 0 (http_response), field status:",
        "A 429, B 200",
    ]


def test_a_missing_event_and_a_field_one_side_lacks(tmp_path: Path) -> None:
    shorter = chat_stream_call(0)[:-2]
    shorter.append({"type": "call_end", "call_index": 0, "event_count": 10, "outcome": "complete"})

    result = diff(tmp_path, [chat_stream_call(0)], [shorter])

    assert lines(result)[1:] == [
        "difference at call 0, event 10 (sse):",
        "A {'type': 'sse', 'data': '[DONE]'}, B <missing>",
    ]

    extra = copy.deepcopy(chat_stream_call(0))
    extra[3]["event"]["data"]["choices"][0]["delta"]["audio"] = {"id": "a"}
    result = diff(tmp_path, [chat_stream_call(0)], [extra])
    assert lines(result) == [
        "✘ the recordings differ: 1 paired call whose reply differs",
        "difference at call 0, event 2 (sse), field data.choices[0].delta.audio:",
        "A <missing>, B {'id': 'a'}",
    ]


def test_events_of_another_type(tmp_path: Path) -> None:
    whole = chat_stream_call(0)[:3]
    whole[2]["event"] = {"type": "http_body", "body": {"choices": []}}
    whole.append({"type": "call_end", "call_index": 0, "event_count": 2, "outcome": "complete"})
    streamed = chat_stream_call(0)

    result = diff(tmp_path, [streamed], [whole])

    assert lines(result)[1].startswith("difference at call 0, event 1 (sse / http_body)")


def test_per_run_fields_are_not_differences(tmp_path: Path) -> None:
    other_run = chat_stream_call(0)
    other_run[1]["event"]["headers"].update(date="Tue, 02 Dec 2026 09:30:00 GMT")
    other_run[1]["event"]["headers"]["x-request-id"] = "req_other"
    for row in other_run[2:-2]:
        row["event"]["data"].update(id="chatcmpl-other", created=1, system_fingerprint="fp_b")

    result = diff(tmp_path, [chat_stream_call(0)], [other_run])

    assert result.exit_code == 0, result.stdout
    assert result.stdout.startswith("✔ the recordings are the same")


def test_json_keeps_the_path_and_the_whole_events(tmp_path: Path) -> None:
    changed = chat_stream_call(0)
    changed[3]["event"]["data"]["choices"][0]["delta"]["content"] = "Let me look"
    a, b = (
        write_calls(tmp_path / "a.jsonl", chat_stream_call(0)),
        write_calls(tmp_path / "b.jsonl", changed),
    )

    found = json.loads(run("diff", str(a), str(b), "--json").stdout)["difference"]

    assert (found["event_index"], found["field_path"]) == (2, "event.data.choices[0].delta.content")
    assert found["b"]["data"]["choices"][0]["delta"]["content"] == "Let me look"
