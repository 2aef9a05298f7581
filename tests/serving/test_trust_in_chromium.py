"""A page on another origin, in a real headless Chromium, tries what a page can do to
``openprogram serve`` on loopback without asking anyone — ``fetch(…, {mode: "no-cors"})``,
which sends a simple request and hides the answer from the page — and plants nothing."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from openprogram.provider_boundary.codec import read_for_replay
from tests.support.chromium import chromium, page_server
from tests.support.proxy_server import running_proxy
from tests.support.sdk_server import SdkServer

ATTACK = """<!doctype html>
<title>a page on another site</title>
<script>
const serve = SERVE, victim = VICTIM;
const chat = JSON.stringify({model: 'm', messages: [{role: 'user', content: 'planted'}]});
const post = (body) => ({method: 'POST', mode: 'no-cors', body});
async function attempt(url, init) {
  try {
    const answer = await fetch(url, init);
    return answer.type === 'opaque' ? 'opaque' : `${answer.status} ${await answer.text()}`;
  } catch (error) {
    return `refused by the browser: ${error.name}`;
  }
}
window.outcome = (async () => ({
  open: await attempt(`${serve}/__openprogram/sessions`,
                      post(JSON.stringify({name: 'victim-file', mode: 'record'}))),
  write1: await attempt(`${serve}/__openprogram/s/${victim}/openai/v1/chat/completions`,
                        post(chat)),
  write2: await attempt(`${serve}/__openprogram/s/${victim}/openai/v1/chat/completions`,
                        post(chat)),
  own: await attempt(`${serve}/v1/chat/completions`, post(chat)),
  list: await attempt(`${serve}/__openprogram/sessions`, {}),
  listBlind: await attempt(`${serve}/__openprogram/sessions`, {mode: 'no-cors'}),
}))();
</script>
"""


def test_a_page_on_another_origin_plants_nothing_and_reads_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder, own = tmp_path / "recordings", tmp_path / "own.jsonl"
    folder.mkdir()
    with SdkServer() as upstream:
        hosts = {"openai": upstream.base_url}
        with running_proxy(record=str(folder / "victim-file.jsonl"), upstreams=hosts) as proxy:
            httpx.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "messages": [
                {"role": "user", "content": "the victim's own"}]}).raise_for_status()  # fmt: skip
        victim_file = (folder / "victim-file.jsonl").read_bytes()
        before = len(upstream.received)
        with running_proxy(record=str(own), upstreams=hosts, folder=folder) as proxy:
            victim = httpx.post(
                f"{proxy.url}/__openprogram/sessions",
                json={"name": "victim", "mode": "record"},
                headers=proxy.auth,
            ).json()  # a test's session, whose id the page is given (the worst case)
            page_html = ATTACK.replace("SERVE", json.dumps(proxy.url)).replace(
                "VICTIM", json.dumps(victim["id"])
            )
            with (
                chromium(tmp_path) as browser,
                page_server(page_html) as page_url,
                caplog.at_level(logging.WARNING, logger="openprogram.serve"),
            ):
                page = browser.new_page()
                page.goto(page_url)
                outcome: dict[str, Any] = page.evaluate("window.outcome")
            listed = httpx.get(f"{proxy.url}/__openprogram/sessions", headers=proxy.auth).json()
            ended = httpx.delete(
                f"{proxy.url}/__openprogram/sessions/{victim['id']}", headers=proxy.auth
            ).json()
        planted_upstream = len(upstream.received) - before
    # the page learns nothing: each answer is opaque to it, or refused by the browser
    assert outcome == {
        "open": "opaque",
        "write1": "opaque",
        "write2": "opaque",
        "own": "opaque",
        "list": "refused by the browser: TypeError",
        "listBlind": "opaque",
    }
    # the server refused each: a POST carries the page's Origin (403), and so does a GET
    # in cors mode; a no-cors GET does not, and names the sessions without the token (401)
    refused = [
        (record.args[0], record.args[1], str(record.args[2]))
        for record in caplog.records
        if isinstance(record.args, tuple) and record.msg.startswith("refused")
    ]
    session_path = f"/__openprogram/s/{victim['id']}/openai/v1/chat/completions"
    from_the_page = "requests from the page at 'http://127.0.0.2"
    assert [(method, path) for method, path, _ in refused] == [
        ("POST", "/__openprogram/sessions"),
        ("POST", session_path),
        ("POST", session_path),
        ("POST", "/v1/chat/completions"),
        ("GET", "/__openprogram/sessions"),
        ("GET", "/__openprogram/sessions"),
    ]
    assert [why.startswith(from_the_page) for _, _, why in refused] == [True] * 5 + [False]
    assert refused[-1][2].startswith("this request names a recording or a session: ")
    # and nothing was planted: no session opened, no call in the victim's session, the own
    # recording or the victim's file, nothing sent upstream
    assert [s["name"] for s in listed["open"]] == ["victim"]
    assert (ended["calls"], ended["kept"]) == (0, False)
    assert read_for_replay(own).calls == []
    assert (folder / "victim-file.jsonl").read_bytes() == victim_file
    assert sorted(p.name for p in folder.iterdir()) == ["victim-file.jsonl"]
    assert planted_upstream == 0
