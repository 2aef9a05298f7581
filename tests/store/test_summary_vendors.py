"""``recordings list`` summarizes a recording of provider calls without loading the vendor
modules; an HTTP call whose path names the model (Gemini's, Bedrock's) asks the vendors for
it (each vendor's ``model_path``)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.child_processes import python_process, reported
from tests.support.http_call_rows import chat_request, provider_call, sse_call, write_calls

PROBE = """
import json, sys
from pathlib import Path
from openprogram.store.summary import summarize_recording

folder = Path(sys.argv[1])
listed = summarize_recording(folder / "echo.jsonl").to_json()["models"]
loaded = "openprogram.vendors" in sys.modules
labels = summarize_recording(folder / "paths.jsonl").to_json()["models"]
print("PROBE " + json.dumps({"listed": listed, "loaded": loaded, "labels": labels}))
"""

GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse"


def test_provider_calls_need_no_vendor_and_a_model_in_the_path_is_read_from_them(
    tmp_path: Path,
) -> None:
    write_calls(tmp_path / "echo.jsonl", provider_call(0))
    body = {"contents": []}
    by_path = [{**chat_request(), "url": url, "body": body} for url in (GEMINI, BEDROCK)]
    write_calls(tmp_path / "paths.jsonl", sse_call(0, by_path[0]), sse_call(1, by_path[1]))
    result = python_process(PROBE, str(tmp_path), env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert reported(result) == {
        "listed": ["echo:echo"],
        "loaded": False,
        "labels": [
            "generativelanguage.googleapis.com:gemini-2.5-flash",
            "bedrock-runtime.us-east-1.amazonaws.com:amazon.nova-lite-v1:0",
        ],
    }
