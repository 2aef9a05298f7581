"""A local server restarted on another port still replays: the port of a URL whose host is
a loopback one is left out of replay matching, the transcript hash and ``diff``, unless
``compare_loopback_ports`` asks replay to compare it; every other host's port counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import openprogram
from openprogram.cli.app import app
from openprogram.errors import ReplayMismatch
from openprogram.recording.content_matching import (
    ComparisonRules,
    RequestDigester,
    request_differences,
)
from openprogram.recording.difference import find_first_difference
from openprogram.recording.format import Recording
from openprogram.recording.reader import read_recording
from openprogram.recording.url_comparison import (
    is_loopback_host,
    url_parts,
    without_loopback_port,
)
from openprogram.store.comparison import compare_recordings
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import summarize_recording
from tests.support.http_agent import answering, ask
from tests.support.offline import offline
from tests.support.sse_server import ScriptedServer, unused_port

runner = CliRunner()


def record(path: Path, *questions: str) -> str:
    """Record ``questions`` asked of a loopback server into ``path``; its base URL."""
    with ScriptedServer() as server:
        server.serve(*(answering(f"re: {question}") for question in questions))
        with openprogram.record_replay(path, mode="record"):
            for question in questions:
                assert ask(server.base_url, question) == f"re: {question}"
        return server.base_url


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "local.jsonl"
    return path, record(path, "hi")


def moved(base_url: str) -> str:
    """``base_url`` with another port: the server restarted elsewhere."""
    port = unused_port()
    assert not base_url.endswith(f":{port}")
    return f"http://127.0.0.1:{port}"


def test_a_loopback_server_on_another_port_replays_offline(recorded: tuple[Path, str]) -> None:
    path, base_url = recorded
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert ask(moved(base_url), "hi") == "re: hi"


def test_the_body_is_still_compared(recorded: tuple[Path, str]) -> None:
    path, base_url = recorded
    with (
        offline(),
        pytest.raises(ReplayMismatch, match=r"field body\.question"),
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(moved(base_url), "bye")


def test_with_ports_compared_the_mismatch_says_the_base_url_changed(
    recorded: tuple[Path, str],
) -> None:
    path, base_url = recorded
    elsewhere = moved(base_url)
    with (
        offline(),
        pytest.raises(ReplayMismatch) as mismatch,
        openprogram.record_replay(path, mode="replay", compare_loopback_ports=True),
    ):
        ask(elsewhere, "hi")
    first, values, note = str(mismatch.value).splitlines()
    assert first == "replay mismatch at call 0, field url:"
    assert values == f"recorded '{base_url}/ask', incoming '{elsewhere}/ask'"
    assert note == (
        f"note: the request went to {elsewhere}/ask, the recording has {base_url}/ask: the "
        f"base URL changed; point the client at the recorded base URL ({base_url}), replay "
        'with ignore_fields=["url"] (or "url.port", "url.host") if only the server moved, or '
        "re-record; compare_loopback_ports is set, so a local server's port is compared"
    )
    assert "--openprogram-record-mode" not in str(mismatch.value)


def test_the_setting_comes_from_the_configuration(
    recorded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprogram.config.settings import load_config

    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__COMPARE_LOOPBACK_PORTS", "true")
    loaded = load_config()
    assert loaded.settings is not None
    assert loaded.settings.record_replay.compare_loopback_ports is True


def test_the_plan_carries_the_setting_to_another_process() -> None:
    from openprogram.activation.plan import RecordReplayPlan

    plan = RecordReplayPlan("replay", Path("/r.jsonl"), compare_loopback_ports=True)
    assert RecordReplayPlan.from_json(plan.to_json()).compare_loopback_ports is True
    assert RecordReplayPlan.from_json(RecordReplayPlan("replay", Path("/r.jsonl")).to_json()) == (
        RecordReplayPlan("replay", Path("/r.jsonl"))
    )


def rehost(path: Path, url: str) -> None:
    """Rewrite the URL of every HTTP call in the recording at ``path`` to ``url``."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row.get("type") == "request" and row.get("boundary") == "http":
            row["url"] = url
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_another_hosts_port_is_compared(recorded: tuple[Path, str]) -> None:
    path, _ = recorded
    rehost(path, "http://models.example.test:8000/ask")
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert ask("http://models.example.test:8000", "hi") == "re: hi"
    with (
        offline(),
        pytest.raises(ReplayMismatch, match=r"field url:") as mismatch,
        openprogram.record_replay(path, mode="replay"),
    ):
        ask("http://models.example.test:9000", "hi")
    assert "the base URL changed; point the client at the recorded base URL " in str(mismatch.value)
    assert "(http://models.example.test:8000)" in str(mismatch.value)


def test_localhost_and_127_0_0_1_are_different_hosts(recorded: tuple[Path, str]) -> None:
    path, base_url = recorded
    port = base_url.rpartition(":")[2]
    with (
        offline(),
        pytest.raises(ReplayMismatch, match=r"field url:"),
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(f"http://localhost:{port}", "hi")


def test_two_recordings_on_two_loopback_ports_hash_equal_and_diff_the_same(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    port_a, port_b = record(first, "hi", "more"), record(second, "hi", "more")
    assert port_a != port_b
    a, b = read_recording(first), read_recording(second)
    assert a.calls[0].request["url"] != b.calls[0].request["url"]  # stored as sent
    assert transcript_hash(a) == transcript_hash(b)
    # The digests the writer stored, which a summary hashes without parsing, agree.
    assert summarize_recording(first).transcript_hash == transcript_hash(a)
    assert summarize_recording(second).transcript_hash == transcript_hash(b)
    assert compare_recordings(a, b).same
    result = runner.invoke(app, ["recordings", "diff", str(first), str(second)])
    assert result.exit_code == 0, result.output


def rehosted_pair(tmp_path: Path, url_a: str, url_b: str) -> tuple[Recording, Recording]:
    """The same session recorded twice, its request sent to ``url_a`` in one file and to
    ``url_b`` in the other."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, url in ((first, url_a), (second, url_b)):
        record(path, "hi")
        rehost(path, url)
    return read_recording(first), read_recording(second)


def test_diff_names_the_urls_as_sent_when_another_part_differs(tmp_path: Path) -> None:
    a, b = rehosted_pair(tmp_path, "http://127.0.0.1:8000/ask", "http://127.0.0.1:9000/other")
    assert transcript_hash(a) != transcript_hash(b)
    found = compare_recordings(a, b).first
    assert found is not None
    difference = found.difference
    assert (difference.field_path, difference.recorded, difference.incoming) == (
        "url",
        "http://127.0.0.1:8000/ask",
        "http://127.0.0.1:9000/other",
    )


def test_a_non_loopback_port_changes_the_hash(tmp_path: Path) -> None:
    a, b = rehosted_pair(
        tmp_path, "https://models.example.test:8443/ask", "https://models.example.test:9443/ask"
    )
    assert transcript_hash(a) != transcript_hash(b)
    assert not compare_recordings(a, b).same


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LocalHost", True),
        ("ollama.localhost", True),
        ("128.0.0.1", False),
        ("10.0.0.1", False),
        ("localhost.example.com", False),
        ("api.openai.com", False),
        ("", False),
    ],
)
def test_which_hosts_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


@pytest.mark.parametrize(
    ("url", "compared"),
    [
        ("http://127.0.0.1:8000/v1/chat", "http://127.0.0.1/v1/chat"),
        ("http://[::1]:11434/api/chat?x=1", "http://[::1]/api/chat?x=1"),
        ("http://localhost:4000", "http://localhost"),
        ("http://user@localhost:4000/", "http://user@localhost/"),
        ("http://127.0.0.1/v1", "http://127.0.0.1/v1"),
        ("https://api.example.test:8443/v1", "https://api.example.test:8443/v1"),
        ("http://10.1.2.3:8000/v1", "http://10.1.2.3:8000/v1"),
        ("not a url", "not a url"),
    ],
)
def test_the_compared_url(url: str, compared: str) -> None:
    assert without_loopback_port(url) == compared


def test_the_parts_of_a_url() -> None:
    url = "http://u@127.0.0.1:8000/v1/chat?key=a&tag=1&tag=2#end"
    assert url_parts(url) == {
        "scheme": "http",
        "userinfo": "u",
        "host": "127.0.0.1",
        "port": None,
        "path": "/v1/chat",
        "query": {"key": "a", "tag": ["1", "2"]},
        "fragment": "end",
    }
    assert url_parts(url, loopback_port=True)["port"] == 8000
    assert url_parts("https://API.example.test:8443")["host"] == "api.example.test"
    assert url_parts("https://api.example.test:8443")["port"] == 8443


_URLS = st.builds(
    "{}://{}{}{}{}".format,
    st.sampled_from(["http", "https"]),
    st.sampled_from(["127.0.0.1", "localhost", "[::1]", "models.example.test"]),
    st.sampled_from(["", ":8000", ":9999"]),
    st.sampled_from(["/v1/chat", "/v2/chat", ""]),
    st.sampled_from(["", "?k=1", "?k=2", "?k=1&j=3", "?k=1&k=2"]),
)
_IGNORED = st.sampled_from(
    [(), ("url.port",), ("url.query.k",), ("url.host", "url.port"), ("url.query",), ("url",)]
)


@settings(max_examples=300, deadline=None)
@given(_URLS, _URLS, _IGNORED, st.booleans())
def test_the_digest_agrees_with_the_comparison(
    url_a: str, url_b: str, ignored: tuple[str, ...], ports: bool
) -> None:
    rules = ComparisonRules("http", frozenset(ignored), compare_loopback_ports=ports)
    a = {"method": "POST", "url": url_a, "body": {"q": "hi"}}
    b = {"method": "POST", "url": url_b, "body": {"q": "hi"}}
    assert rules.url is not None
    equal = all(
        find_first_difference(
            rules.url.form(a.get(section)) if section == "url" else a.get(section),
            rules.url.form(b.get(section)) if section == "url" else b.get(section),
            ignore_fields=rules.ignored,
            path=section,
        )
        is None
        for section in rules.sections
    )
    digest = RequestDigester("http", rules.ignore_rules, rules.url)
    assert (digest.digest(a) == digest.digest(b)) is equal
    counted = request_differences(a, b, boundary="http", ignore_fields=rules.ignored, url=rules.url)
    assert (counted == 0) is equal
    if not ignored and not ports:  # the hash's rule: only a loopback port left out
        assert equal is (without_loopback_port(url_a) == without_loopback_port(url_b))
