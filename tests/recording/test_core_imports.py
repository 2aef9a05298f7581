"""The recording core works on JSON values: it imports no provider type, no pydantic model and
no HTTP client — read from its source, and checked in a fresh interpreter doing its work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import openprogram.recording
from tests.support.http_call_rows import provider_call, sse_call, write_calls
from tests.support.import_rules import imported_modules, inside

CORE = sorted(Path(openprogram.recording.__file__).parent.glob("*.py"))
FORBIDDEN = (
    "openprogram.providers",
    "openprogram.vendors",
    "httpx",
    "httpx2",
    "pydantic",
    "openai",
    "anthropic",
)


@pytest.mark.parametrize("module", CORE, ids=lambda path: path.stem)
def test_no_core_module_imports_a_provider_pydantic_or_an_http_client(module: Path) -> None:
    assert [name for name in imported_modules(module) if inside(name, FORBIDDEN)] == []


def test_every_core_module_is_checked() -> None:
    assert {path.stem for path in CORE} >= {
        "format",
        "reader",
        "writer",
        "redaction",
        "difference",
        "mismatch",
        "replay_session",
        "call_digest",
    }


WORK = """
import importlib, json, pkgutil, sys
from pathlib import Path

import openprogram.recording as core
for module in pkgutil.iter_modules(core.__path__):
    importlib.import_module(f"openprogram.recording.{module.name}")

from openprogram.recording import ReplaySession, RecordingWriter, read_recording
from openprogram.recording.redaction import SecretRedactor

recording = read_recording(Path(sys.argv[1]))
session = ReplaySession(recording)
redactor = SecretRedactor([])
session.take("provider", recording.calls[0].request, redactor=redactor.redact_request)
request = recording.calls[1].request
call = session.take("http", request, redactor=redactor.redact_http_request)
writer = RecordingWriter(Path(sys.argv[2]))
written = writer.open_call({"boundary": "http", **request})
written.write_event({"type": "http_response", "status": 200, "headers": {}})
written.end_call("complete")
print(json.dumps({
    "served": call.call_index,
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in
                     ("httpx", "httpx2", "pydantic", "openai", "anthropic")
                     or m.startswith("openprogram.providers")),
}))
"""


def test_the_core_reads_writes_and_replays_without_them(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "r.jsonl", provider_call(0), sse_call(1))
    result = subprocess.run(
        [sys.executable, "-c", WORK, str(path), str(tmp_path / "new.jsonl")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"served": 1, "loaded": []}
