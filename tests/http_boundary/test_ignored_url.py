"""``ignore_fields`` applies to an HTTP call's request sections as to any key: ``url`` (a
server that moved replays), its parts (``url.host``, ``url.port``, ``url.path``,
``url.query.<name>``), ``headers`` and ``headers.<name>``; an entry naming no part of a URL
is refused; a mismatch in the URL says the base URL changed, not only "re-record"."""

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


def test_without_it_the_mismatch_names_the_url_and_says_the_base_url_changed(
    recorded: tuple[Path, ScriptedServer],
) -> None:
    path, server = recorded
    moved = f"http://localhost:{unused_port()}"  # another host: its port alone would replay
    with (
        pytest.raises(ReplayMismatch) as mismatch,
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(moved, "hi")
    lines = str(mismatch.value).splitlines()
    assert lines[0] == "replay mismatch at call 0, field url:"
    assert lines[2] == (
        f"note: the request went to {moved}/ask, the recording has {server.base_url}/ask: the "
        "base URL changed; point the client at the recorded base URL "
        f'({server.base_url}), replay with ignore_fields=["url"] (or "url.port", "url.host") '
        "if only the server moved, or re-record"
    )


@pytest.mark.parametrize("ignored", [["url.host"], ["url.host", "url.port"], ["url.*"]])
def test_ignoring_the_host_replays_a_server_under_another_name(
    recorded: tuple[Path, ScriptedServer], ignored: list[str]
) -> None:
    path, server = recorded
    port = server.base_url.rpartition(":")[2]
    with openprogram.record_replay(path, mode="replay", ignore_fields=ignored):
        assert ask(f"http://localhost:{port}", "hi") == "hello"


def test_the_port_ignored_replays_even_with_loopback_ports_compared(
    recorded: tuple[Path, ScriptedServer],
) -> None:
    path, _ = recorded
    moved = f"http://127.0.0.1:{unused_port()}"
    with openprogram.record_replay(
        path, mode="replay", ignore_fields=["url.port"], compare_loopback_ports=True
    ):
        assert ask(moved, "hi") == "hello"
    with (
        pytest.raises(ReplayMismatch, match=r"field url\.port:\nrecorded \d+, incoming \d+"),
        openprogram.record_replay(
            path, mode="replay", ignore_fields=["url.query"], compare_loopback_ports=True
        ),
    ):
        ask(moved, "hi")


def test_a_query_parameter_ignored_by_name(tmp_path: Path) -> None:
    path = tmp_path / "query.jsonl"
    with ScriptedServer() as server:
        server.serve(answering("hello"))
        with openprogram.record_replay(path, mode="record"):
            httpx.post(f"{server.base_url}/ask?run=1&model=m", json={"question": "hi"})
        ignored = ["url.query.run"]
        with openprogram.record_replay(path, mode="replay", ignore_fields=ignored):
            reply = httpx.post(f"{server.base_url}/ask?model=m&run=2", json={"question": "hi"})
            assert reply.json() == {"answer": "hello"}
        with (
            pytest.raises(
                ReplayMismatch, match=r"field url\.query\.model:\nrecorded 'm', incoming 'n'"
            ),
            openprogram.record_replay(path, mode="replay", ignore_fields=ignored),
        ):
            httpx.post(f"{server.base_url}/ask?model=n&run=2", json={"question": "hi"})
        with (
            pytest.raises(ReplayMismatch, match="the query changed") as mismatch,
            openprogram.record_replay(path, mode="replay"),
        ):
            httpx.post(f"{server.base_url}/ask?run=2&model=m", json={"question": "hi"})
        assert "field url:" in str(mismatch.value)


def test_a_path_ignored(tmp_path: Path) -> None:
    path = tmp_path / "path.jsonl"
    with ScriptedServer() as server:
        server.serve(answering("hello"))
        with openprogram.record_replay(path, mode="record"):
            httpx.post(f"{server.base_url}/v1/ask", json={"question": "hi"})
        with openprogram.record_replay(path, mode="replay", ignore_fields=["url.path"]):
            reply = httpx.post(f"{server.base_url}/v2/ask", json={"question": "hi"})
            assert reply.json() == {"answer": "hello"}


@pytest.mark.parametrize("entry", ["url.hostname", "url.port.number", "url.", "url.path.x"])
def test_an_entry_naming_no_part_of_the_url_is_refused(
    recorded: tuple[Path, ScriptedServer], entry: str
) -> None:
    path, _ = recorded
    with (
        pytest.raises(
            ValueError,
            match=(
                r"^ignore_fields: '.*' names no part of an HTTP call's URL: "
                r"write url, url\.scheme"
            ),
        ) as refused,
        openprogram.record_replay(path, mode="replay", ignore_fields=[entry]),
    ):
        pass
    assert "\n" not in str(refused.value)


def test_the_configuration_refuses_it_too() -> None:
    from pydantic import ValidationError

    from openprogram.config.models import RecordReplaySettings

    with pytest.raises(ValidationError, match=r"'url\.hostname' names no part"):
        RecordReplaySettings(ignore_fields=["url.hostname"])


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
        for one in ("headers.x-run", "headers.X-Run"):  # header names in any case
            with openprogram.record_replay(
                path, mode="replay", http_headers=["x-run"], ignore_fields=[one]
            ):
                reply = httpx.post(
                    f"{server.base_url}/ask", json={"question": "hi"}, headers=replayed
                )
                assert reply.json() == {"answer": "hello"}
