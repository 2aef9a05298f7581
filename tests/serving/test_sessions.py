"""Per-test recordings through one server: a recording named by a request header, the
control API's sessions, their modes and accounts; and Gemini's prefix with google-genai."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from openprogram.provider_boundary.codec import read_for_replay
from tests.support.gemini_server import MODEL, GeminiServer
from tests.support.proxy_server import running_proxy
from tests.support.sdk_server import SdkServer


def _chat(prompt: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}]}


def test_requests_name_their_recordings_by_header_and_run_side_by_side(tmp_path: Path) -> None:
    async def two_tests(url: str, token: str) -> list[int]:
        async with httpx.AsyncClient(timeout=30) as client:

            async def one_test(name: str) -> list[int]:
                headers = {"x-openprogram-recording": name, "x-openprogram-mode": "once",
                           "x-openprogram-token": token}  # fmt: skip
                statuses = []
                for turn in range(3):
                    answer = await client.post(
                        f"{url}/v1/chat/completions", json=_chat(f"{name} {turn}"), headers=headers
                    )
                    statuses.append(answer.status_code)
                return statuses

            first, second = await asyncio.gather(one_test("suite/a"), one_test("suite/b"))
            return first + second

    with (
        SdkServer() as upstream,
        running_proxy(upstreams={"openai": upstream.base_url}, folder=tmp_path) as proxy,
    ):
        assert asyncio.run(two_tests(proxy.url, proxy.token)) == [200] * 6
    for name in ("a", "b"):
        calls = read_for_replay(tmp_path / "suite" / f"{name}.jsonl").calls
        assert [c.request["body"]["messages"][0]["content"] for c in calls] == [
            f"suite/{name} {turn}" for turn in range(3)
        ]
    # once: the recordings exist now, so the same requests replay, the vendor server gone
    with running_proxy(upstreams={"openai": upstream.base_url}, folder=tmp_path) as proxy:
        assert asyncio.run(two_tests(proxy.url, proxy.token)) == [200] * 6
    accounts = proxy.stop().accounts
    assert [(a.name, a.mode, a.calls, a.ok) for a in accounts] == [
        ("suite/a", "replay", 3, True),
        ("suite/b", "replay", 3, True),
    ]


def test_a_session_of_the_control_api_has_its_own_base_urls_and_account(tmp_path: Path) -> None:
    with (
        SdkServer() as upstream,
        running_proxy(upstreams={"openai": upstream.base_url}, folder=tmp_path) as proxy,
    ):
        opened = httpx.post(
            f"{proxy.url}/__openprogram/sessions",
            json={"name": "a-test", "mode": "record"},
            headers=proxy.auth,
        )
        assert opened.status_code == 201
        session = opened.json()
        assert session["base_urls"]["openai"] == (
            f"{proxy.url}/__openprogram/s/{session['id']}/openai/v1"
        )
        answer = httpx.post(
            f"{session['base_urls']['openai']}/chat/completions",
            json=_chat("hi"),
            headers=proxy.auth,
        )
        assert answer.json()["choices"][0]["message"]["content"] == "You said: hi"
        assert not (tmp_path / "a-test.jsonl").exists()  # written beside it until it ends
        ended = httpx.delete(
            f"{proxy.url}/__openprogram/sessions/{session['id']}", headers=proxy.auth
        ).json()
        gone = httpx.post(
            f"{session['base_urls']['openai']}/chat/completions",
            json=_chat("hi"),
            headers=proxy.auth,
        )
    assert ended == {
        "name": "a-test",
        "mode": "record",
        "path": str(tmp_path / "a-test.jsonl"),
        "ok": True,
        "report": None,
        "calls": 1,
        "mismatches": [],
        "unconsumed": [],
        "unconsumed_report": None,
        "refused": [],
        "kept": True,
        "passes": 1,
    }
    assert len(read_for_replay(tmp_path / "a-test.jsonl").calls) == 1
    assert gone.status_code == 404
    assert "no open session" in gone.json()["error"]["message"]

    with running_proxy(folder=tmp_path) as proxy:
        session = httpx.post(
            f"{proxy.url}/__openprogram/sessions",
            json={"name": "a-test", "mode": "replay"},
            headers=proxy.auth,
        ).json()
        base = session["base_urls"]["openai"]
        drifted = httpx.post(f"{base}/chat/completions", json=_chat("bye"), headers=proxy.auth)
        ended = httpx.delete(
            f"{proxy.url}/__openprogram/sessions/{session['id']}", headers=proxy.auth
        ).json()
    assert drifted.status_code == 412
    assert ended["ok"] is False
    # the call was requested, and differed: its mismatch is the report, not "never requested"
    assert ended["report"].splitlines() == [
        "replay mismatch at call 0, field body.messages[0].content:",
        "recorded 'hi', incoming 'bye'",
    ]
    assert [m["field_path"] for m in ended["mismatches"]] == ["body.messages[0].content"]
    assert proxy.stop().exit_status == 1  # the server says so too, at its end


def test_a_session_that_records_nothing_or_is_thrown_away_leaves_no_recording(
    tmp_path: Path,
) -> None:
    with (
        SdkServer() as upstream,
        running_proxy(upstreams={"openai": upstream.base_url}, folder=tmp_path) as proxy,
        httpx.Client(headers=proxy.auth) as client,
    ):
        control = f"{proxy.url}/__openprogram/sessions"
        quiet = client.post(control, json={"name": "no-calls", "mode": "record"}).json()
        assert client.delete(f"{control}/{quiet['id']}").json()["kept"] is False
        failed = client.post(control, json={"name": "failed", "mode": "record"}).json()
        client.post(f"{failed['base_urls']['openai']}/chat/completions", json=_chat("x"))
        thrown = client.delete(f"{control}/{failed['id']}?keep=false").json()
        # a test that replays and makes no call needs no recording
        absent = client.post(control, json={"name": "absent", "mode": "replay"}).json()
        untouched = client.delete(f"{control}/{absent['id']}").json()
        asked = client.post(control, json={"name": "absent", "mode": "replay"}).json()
        refused = client.post(f"{asked['base_urls']['openai']}/chat/completions", json=_chat("x"))
        refused_account = client.delete(f"{control}/{asked['id']}").json()
    assert (thrown["calls"], thrown["kept"]) == (1, False)
    assert untouched["ok"] is True
    assert refused.status_code == 412
    assert (
        "recording 'absent' does not exist or holds no call" in refused.json()["error"]["message"]
    )
    assert refused_account["ok"] is False
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "home")
    assert left == []  # nothing recorded, nothing partial


def test_the_control_api_refuses_bad_names_modes_and_a_name_in_use(tmp_path: Path) -> None:
    with running_proxy(folder=tmp_path) as proxy, httpx.Client(headers=proxy.auth) as client:
        control = f"{proxy.url}/__openprogram/sessions"
        bad_name = client.post(control, json={"name": "../escape", "mode": "record"})
        bad_mode = client.post(control, json={"name": "x", "mode": "sometimes"})
        not_json = client.post(
            control, content=b"name=x", headers={"content-type": "application/json"}
        )
        first = client.post(control, json={"name": "twice", "mode": "record"})
        second = client.post(control, json={"name": "twice", "mode": "record"})
        header = client.post(
            f"{proxy.url}/v1/chat/completions",
            json=_chat("x"),
            headers={"x-openprogram-recording": "twice", "x-openprogram-mode": "replay"},
        )
        unknown = client.delete(f"{control}/nope")
        health = client.get(f"{proxy.url}/__openprogram/health").json()
    assert (bad_name.status_code, bad_mode.status_code, not_json.status_code) == (400, 400, 400)
    assert "invalid recording name '..'" in bad_name.json()["error"]["message"]
    assert (
        "mode 'sometimes' is not one of replay, record, once" in bad_mode.json()["error"]["message"]
    )
    assert (first.status_code, second.status_code, header.status_code) == (201, 409, 409)
    assert unknown.status_code == 404
    assert health == {"ok": True, "version": health["version"], "mode": None,
                      "recording": None, "sessions": 1}  # fmt: skip
    assert not any(tmp_path.parent.glob("escape*"))


def test_a_session_cannot_take_the_server_s_own_recording(tmp_path: Path) -> None:
    own = tmp_path / "own.jsonl"
    with running_proxy(record=str(own), folder=tmp_path) as proxy:
        taken = httpx.post(
            f"{proxy.url}/__openprogram/sessions", json={"name": "own"}, headers=proxy.auth
        )
    assert taken.status_code == 409
    assert "a session already records or replays 'own'" in taken.json()["error"]["message"]


def test_google_genai_goes_through_the_gemini_prefix(tmp_path: Path) -> None:
    from google import genai
    from google.genai import types

    path = str(tmp_path / "gemini.jsonl")

    def ask(base_url: str) -> list[str]:
        options = types.HttpOptions(base_url=base_url)
        client = genai.Client(api_key="gemini-key-0123456789abcdef", http_options=options)
        streamed = client.models.generate_content_stream(model=MODEL, contents="hello")
        return [chunk.text or "" for chunk in streamed]

    with GeminiServer() as upstream:
        with running_proxy(record=path, upstreams={"gemini": upstream.base_url}) as proxy:
            live = ask(f"{proxy.url}/gemini")
        (received,) = upstream.received
        assert received.path == f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
    with running_proxy(replay=path, upstreams={"gemini": upstream.base_url}) as proxy:
        assert ask(f"{proxy.url}/gemini") == live
    assert proxy.stop().exit_status == 0
    assert "gemini-key-0123456789abcdef" not in Path(path).read_text()
