"""User redaction at the HTTP boundary: what an SDK-style client sends and receives is
written without the user's secrets, and replays offline with the same redaction (both
sides redacted before the comparison)."""

from __future__ import annotations

from pathlib import Path

import pytest

import openprogram
from openprogram.errors import ReplayMismatch
from openprogram.recording.token_shapes import PLACEHOLDER
from tests.support.http_agent import answering, ask
from tests.support.offline import offline
from tests.support.recording_rows import read_rows
from tests.support.sse_server import ScriptedServer

CUSTOMER = "customer-482913"
PATTERNS = [r"customer-\d+"]


def test_an_http_exchange_is_written_without_the_pattern_and_replays_with_it(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "http.jsonl"
    server.serve(answering(f"refunded {CUSTOMER}"))
    with openprogram.record_replay(path, redact_patterns=PATTERNS):
        assert ask(server.base_url, f"refund {CUSTOMER}") == f"refunded {CUSTOMER}"
    assert CUSTOMER not in path.read_text()
    rows = read_rows(path)
    assert rows[1]["body"] == {"question": f"refund {PLACEHOLDER}"}
    assert rows[0]["redaction_fingerprint"].startswith("sha256:")

    with offline(), openprogram.record_replay(path, mode="replay", redact_patterns=PATTERNS):
        assert ask(server.base_url, f"refund {CUSTOMER}") == f"refunded {PLACEHOLDER}"
    with (
        offline(),
        pytest.raises(ReplayMismatch) as caught,
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(server.base_url, f"refund {CUSTOMER}")
    assert caught.value.field_path == "body.question"
    assert "replay with the redaction patterns and functions it was recorded with" in str(
        caught.value
    )
