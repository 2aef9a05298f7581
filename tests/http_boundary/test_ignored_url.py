"""``ignore_fields`` applies to an HTTP call's request sections as to any key: ``url`` (a
server that moved to another port replays), ``headers``; and a mismatch in the URL says the
address changed, not only "re-record"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import openprogram
from openprogram.errors import ReplayMismatch
from tests.support.http_agent import answering, ask
from tests.support.sse_server import ScriptedServer, unused_port


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Path, ScriptedServer]]:
    path = tmp_path / "moved.jsonl"
    with ScriptedServer() as server:
        server.serve(answering("hello"))
        with openprogram.record_replay(path, mode="record"):
            assert ask(server.base_url, "hi") == "hello"
        yield path, server


def test_a_server_on_another_port_replays_with_the_url_ignored(
    recorded: tuple[Path, ScriptedServer],
) -> None:
    path, server = recorded
    moved = f"http://127.0.0.1:{unused_port()}"
    with openprogram.record_replay(path, mode="replay", ignore_fields=["url"]):
        assert ask(moved, "hi") == "hello"
    assert len(server.received) == 1  # while recording only


def test_without_it_the_mismatch_names_the_url_and_says_the_address_changed(
    recorded: tuple[Path, ScriptedServer],
) -> None:
    path, _ = recorded
    moved = f"http://127.0.0.1:{unused_port()}"
    with (
        pytest.raises(ReplayMismatch) as mismatch,
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(moved, "hi")
    lines = str(mismatch.value).splitlines()
    assert lines[0] == "replay mismatch at call 0, field url:"
    assert lines[2] == (
        "note: the request went to another URL than the recorded one; if only the server's "
        'address changed (another host or port), replay with ignore_fields=["url"] '
        "(record_replay.ignore_fields), or send it to the recorded address"
    )


def test_ignoring_the_url_still_compares_the_body(recorded: tuple[Path, ScriptedServer]) -> None:
    path, _ = recorded
    moved = f"http://127.0.0.1:{unused_port()}"
    with (
        pytest.raises(ReplayMismatch, match=r"field body\.question"),
        openprogram.record_replay(path, mode="replay", ignore_fields=["url"]),
    ):
        ask(moved, "bye")


def test_ignoring_the_headers_section_leaves_out_every_stored_header(tmp_path: Path) -> None:
    path = tmp_path / "headers.jsonl"
    with ScriptedServer() as server:
        server.serve(answering("hello"))
        with openprogram.record_replay(path, mode="record", http_headers=["x-run"]):
            httpx.post(f"{server.base_url}/ask", json={"question": "hi"}, headers={"x-run": "1"})
        replayed = {"x-run": "2"}
        with (
            pytest.raises(ReplayMismatch, match=r"field headers\.x-run|headers\[\"x-run\"\]"),
            openprogram.record_replay(path, mode="replay", http_headers=["x-run"]),
        ):
            httpx.post(f"{server.base_url}/ask", json={"question": "hi"}, headers=replayed)
        with openprogram.record_replay(
            path, mode="replay", http_headers=["x-run"], ignore_fields=["headers"]
        ):
            reply = httpx.post(f"{server.base_url}/ask", json={"question": "hi"}, headers=replayed)
            assert reply.json() == {"answer": "hello"}
