"""Whom ``openprogram serve`` answers: a request that names a recording or a session carries
the server's token; its ``Host`` names the server; a browser page is refused unless allowed;
control bodies are JSON, bounded in size and depth; sessions name recordings under the
server's folder only, never through a link; the token file; the URL printed for another
loopback address; a malformed request logged in one line.

Each runs against the real server on loopback (in a thread, or as ``openprogram serve`` in
a process of its own where its output is what is checked). What a page in a real browser
can do is in ``test_trust_in_chromium.py``.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from openprogram.provider_boundary.codec import read_for_replay
from openprogram.serving.control import MAX_CONTROL_BODY
from tests.support.child_processes import user_environment
from tests.support.cli_runner import openprogram
from tests.support.proxy_server import RunningProxy, running_proxy
from tests.support.sdk_server import SdkServer
from tests.support.serve_process import ServeProcess

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def _record(path: Path, upstream: SdkServer, prompt: str = "hello") -> None:
    """A recording of one chat call at ``path``."""
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    with running_proxy(record=str(path), upstreams={"openai": upstream.base_url}) as proxy:
        httpx.post(f"{proxy.url}/v1/chat/completions", json=body).raise_for_status()


def _open(proxy: RunningProxy, name: str, mode: str = "record") -> Any:
    opened = httpx.post(
        f"{proxy.url}/__openprogram/sessions",
        json={"name": name, "mode": mode},
        headers=proxy.auth,
    )
    assert opened.status_code == 201, opened.text
    return opened.json()


def test_what_names_a_recording_or_a_session_without_the_token_is_refused_401(
    tmp_path: Path,
) -> None:
    with (
        SdkServer() as upstream,
        running_proxy(upstreams={"openai": upstream.base_url}, folder=tmp_path) as proxy,
    ):
        victim = _open(proxy, "victim")
        control = f"{proxy.url}/__openprogram/sessions"
        tries = {
            "list": httpx.get(control),
            "open": httpx.post(control, json={"name": "planted", "mode": "record"}),
            "end": httpx.delete(f"{control}/{victim['id']}"),
            "write": httpx.post(f"{victim['base_urls']['openai']}/chat/completions", json=CHAT),
            "claude": httpx.post(
                f"{victim['base_urls']['anthropic']}/v1/messages", json={"model": "c"}
            ),
            "header": httpx.post(
                f"{proxy.url}/v1/chat/completions",
                json=CHAT,
                headers={"x-openprogram-recording": "victim-2", "x-openprogram-mode": "record"},
            ),
            "wrong token": httpx.get(control, headers={"x-openprogram-token": "guess"}),
            "empty token": httpx.get(control, headers={"x-openprogram-token": ""}),
        }
        listed = httpx.get(control, headers=proxy.auth).json()
        ended = httpx.delete(f"{control}/{victim['id']}", headers=proxy.auth).json()
    assert {what: answer.status_code for what, answer in tries.items()} == dict.fromkeys(tries, 401)
    assert tries["list"].json()["error"]["type"] == "openprogram_token_required"  # control
    assert tries["write"].json()["error"]["code"] == "openprogram_token_required"  # OpenAI's
    assert tries["claude"].json()["type"] == "error"  # Anthropic's shape on its path
    assert "x-openprogram-token" in tries["header"].json()["error"]["message"]
    assert tries["header"].headers["x-should-retry"] == "false"
    # the token's holder sees its session, and nothing was planted in it or beside it
    assert [(s["name"], s["calls"]) for s in listed["open"]] == [("victim", 0)]
    assert len(victim["id"]) >= 22  # 128 random bits: a session path cannot be guessed
    assert (ended["calls"], ended["kept"]) == (0, False)
    assert upstream.received == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == []


def test_a_request_naming_nothing_needs_no_token_and_health_tells_it_only_that_it_is_up(
    tmp_path: Path,
) -> None:
    path = tmp_path / "own.jsonl"
    with (
        SdkServer() as upstream,
        running_proxy(record=str(path), upstreams={"openai": upstream.base_url}) as proxy,
    ):
        answer = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        open_health = httpx.get(f"{proxy.url}/__openprogram/health").json()
        health = httpx.get(f"{proxy.url}/__openprogram/health", headers=proxy.auth).json()
    assert answer.status_code == 200
    assert len(read_for_replay(path).calls) == 1
    assert open_health == {"ok": True, "version": open_health["version"]}
    assert health == {"ok": True, "version": health["version"], "mode": "record",
                      "recording": str(path), "sessions": 0}  # fmt: skip


def test_a_host_that_is_not_the_server_s_is_refused_421(tmp_path: Path) -> None:
    path = tmp_path / "own.jsonl"
    with (
        SdkServer() as upstream,
        running_proxy(record=str(path), upstreams={"openai": upstream.base_url}) as proxy,
    ):
        port = proxy.url.rsplit(":", 1)[1]

        def ask(host: str) -> httpx.Response:
            return httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT, headers={"Host": host})

        rebound = ask(f"attacker.example:{port}")
        bare = ask("attacker.example")
        other_port = ask(f"127.0.0.1:{int(port) + 1}")
        control = httpx.get(
            f"{proxy.url}/__openprogram/sessions",
            headers={"Host": "attacker.example", **proxy.auth},
        )
        named = [ask(f"127.0.0.1:{port}"), ask(f"localhost:{port}"), ask(f"LOCALHOST:{port}")]
    assert [r.status_code for r in (rebound, bare, other_port, control)] == [421] * 4
    assert rebound.json()["error"]["code"] == "openprogram_wrong_host"
    assert control.json()["error"]["type"] == "openprogram_wrong_host"
    assert "Host 'attacker.example' is not this server" in bare.json()["error"]["message"]
    assert [r.status_code for r in named] == [200] * 3
    assert len(read_for_replay(path).calls) == 3  # only the requests that named the server


def test_a_browser_page_is_refused_403_unless_its_origin_is_allowed(tmp_path: Path) -> None:
    path = tmp_path / "own.jsonl"
    allowed = "http://localhost:3000"
    with (
        SdkServer() as upstream,
        running_proxy(
            record=str(path),
            upstreams={"openai": upstream.base_url},
            allowed_origins=(allowed,),
        ) as proxy,
    ):
        chat = f"{proxy.url}/v1/chat/completions"
        page = httpx.post(chat, json=CHAT, headers={"Origin": "http://evil.example"})
        page_control = httpx.get(
            f"{proxy.url}/__openprogram/sessions",
            headers={"Origin": "http://evil.example", **proxy.auth},
        )
        page_preflight = httpx.options(
            chat,
            headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
        )
        preflight = httpx.options(
            chat,
            headers={
                "Origin": allowed,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        trusted_page = httpx.post(chat, json=CHAT, headers={"Origin": allowed})
    assert [r.status_code for r in (page, page_control, page_preflight)] == [403] * 3
    assert page.json()["error"]["message"] == (
        "requests from the page at 'http://evil.example' are refused: start the server with "
        "--allow-origin http://evil.example if you trust that page"
    )
    assert "access-control-allow-origin" not in page.headers
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == allowed
    assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
    assert trusted_page.status_code == 200
    assert trusted_page.headers["access-control-allow-origin"] == allowed
    assert "origin" in trusted_page.headers["vary"].lower()  # caches keep pages apart
    assert len(read_for_replay(path).calls) == 1  # the allowed page's call only


def test_a_control_request_whose_body_is_not_json_is_refused_415(tmp_path: Path) -> None:
    with running_proxy(folder=tmp_path) as proxy:
        control = f"{proxy.url}/__openprogram/sessions"
        body = b'{"name": "planted", "mode": "record"}'
        as_text = httpx.post(
            control, content=body, headers={"content-type": "text/plain", **proxy.auth}
        )
        undeclared = httpx.post(control, content=body, headers=proxy.auth)
        as_form = httpx.post(control, data={"name": "planted"}, headers=proxy.auth)
        listed = httpx.get(control, headers=proxy.auth).json()
    assert [r.status_code for r in (as_text, undeclared, as_form)] == [415] * 3
    assert as_text.json()["error"]["message"] == (
        "a control request's body must be application/json, not 'text/plain': send "
        "content-type: application/json"
    )
    assert listed == {"open": [], "ended": []}


def test_a_control_body_nested_200_000_deep_or_too_large_is_one_line(tmp_path: Path) -> None:
    with running_proxy(folder=tmp_path) as proxy:
        control = f"{proxy.url}/__openprogram/sessions"
        headers = {"content-type": "application/json", **proxy.auth}
        deep = b'{"name": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
        too_deep = httpx.post(control, content=deep, headers=headers)
        unclosed = httpx.post(control, content=b"[" * 200_000, headers=headers)
        large = httpx.post(control, content=b" " * (MAX_CONTROL_BODY + 1), headers=headers)
        broken = httpx.post(control, content=b'{"name": ', headers=headers)
        still_up = httpx.post(control, json={"name": "fine"}, headers=proxy.auth)
    assert [r.status_code for r in (too_deep, unclosed, large, broken)] == [400, 400, 413, 400]
    for refused in (too_deep, unclosed, large, broken):
        assert "\n" not in refused.json()["error"]["message"]
    assert too_deep.json()["error"]["message"].startswith(
        "the body is nested deeper than 128 levels: "
    )
    assert "over the control API's limit" in large.json()["error"]["message"]
    assert broken.json()["error"]["message"].startswith("the body is not JSON (")
    assert still_up.status_code == 201


def test_a_session_names_only_recordings_under_the_folder_never_through_a_link(
    tmp_path: Path,
) -> None:
    folder, outside = tmp_path / "recordings", tmp_path / "private"
    folder.mkdir()
    outside.mkdir()
    with SdkServer() as upstream:
        _record(outside / "secret.jsonl", upstream, prompt="the secret prompt")
    (folder / "linked.jsonl").symlink_to(outside / "secret.jsonl")
    (folder / "through").symlink_to(outside, target_is_directory=True)
    os.mkfifo(folder / "fifo.jsonl")
    with running_proxy(folder=folder) as proxy:
        control = f"{proxy.url}/__openprogram/sessions"
        tries = [
            httpx.post(control, json={"name": name, "mode": mode}, headers=proxy.auth)
            for name, mode in [
                ("linked", "replay"),
                ("linked", "record"),
                ("through/secret", "replay"),
                ("through/new", "record"),
                ("fifo", "once"),
                ("../private/secret", "replay"),
            ]
        ]
        by_header = httpx.post(
            f"{proxy.url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            headers={"x-openprogram-recording": "linked", **proxy.auth},
        )
    assert [r.status_code for r in tries] == [400] * 6
    messages = [r.json()["error"]["message"] for r in tries]
    assert messages[0] == (
        f"recording 'linked': {folder / 'linked.jsonl'}: it is a symbolic link (to "
        f"{outside / 'secret.jsonl'}), and openprogram writes into the server's folder only, "
        "never through a link out of it; use another name"
    )
    assert f"{folder / 'through'}: it is a symbolic link (to {outside})" in messages[2]
    assert f"{folder / 'through'}: it is a symbolic link (to {outside})" in messages[3]
    assert f"{folder / 'fifo.jsonl'}: it is not a regular file" in messages[4]
    assert "invalid recording name '..'" in messages[5]
    assert by_header.status_code == 400
    assert "is a symbolic link" in by_header.json()["error"]["message"]
    assert all("secret prompt" not in r.text for r in [*tries, by_header])
    assert sorted(p.name for p in outside.iterdir()) == ["secret.jsonl"]  # nothing written


def test_the_token_file_is_written_private_and_removed_at_the_stop(tmp_path: Path) -> None:
    env = user_environment(tmp_path / "home")
    token_file = tmp_path / "token"
    token_file.write_text("an earlier server's\n")  # a regular file is replaced
    with ServeProcess("--token-file", str(token_file), env=env) as serve:
        written = token_file.read_text()
        mode = token_file.stat().st_mode & 0o777
        listed = httpx.get(f"{serve.url}/__openprogram/sessions", headers=serve.auth)
        stopped = serve.stop()
    assert written == f"{serve.token}\n"
    assert len(serve.token) >= 43  # 256 random bits
    assert mode == 0o600
    assert listed.status_code == 200
    assert stopped.status == 0
    assert not token_file.exists()


@pytest.mark.parametrize("kind", ["link", "folder", "no folder"])
def test_the_token_file_is_never_written_through_a_link_or_over_a_folder(
    tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched\n")
    path = tmp_path / "token"
    if kind == "link":
        path.symlink_to(target)
    elif kind == "folder":
        path.mkdir()
    else:
        path = tmp_path / "missing" / "token"
    result = openprogram("serve", "--port", "0", "--token-file", str(path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    expected = {
        "link": f"error: --token-file {path} is a link: the token is written to a regular file",
        "folder": f"error: --token-file {path} is not a regular file",
        "no folder": f"error: --token-file {path}: no folder {path.parent}; create it first",
    }[kind]
    assert result.stderr.startswith(expected)
    assert target.read_text() == "untouched\n"
    assert path.is_symlink() or path.is_dir() or not path.exists()


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    ("host", "shown"),
    [
        ("127.0.0.2", "127.0.0.2"),
        pytest.param(
            "::1",
            "[::1]",
            marks=pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here"),
        ),
    ],
)
def test_another_loopback_address_is_printed_as_the_url_it_listens_on(
    tmp_path: Path, host: str, shown: str
) -> None:
    env = user_environment(tmp_path / "home")
    with ServeProcess("--host", host, env=env) as serve:
        assert serve.url.startswith(f"http://{shown}:")
        health = httpx.get(f"{serve.url}/__openprogram/health", headers=serve.auth)
        stopped = serve.stop()
    assert health.json()["ok"] is True
    assert f"  OPENAI_BASE_URL={serve.url}/openai/v1" in stopped.stdout.splitlines()


def test_a_malformed_request_is_one_line_in_the_log_not_a_traceback(tmp_path: Path) -> None:
    env = user_environment(tmp_path / "home")
    garbage = [
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"GET /\x00\x01 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ]
    with ServeProcess(env=env) as serve:
        address = serve.url.removeprefix("http://").rsplit(":", 1)
        answers = []
        for payload in garbage:
            with socket.create_connection((address[0], int(address[1])), timeout=30) as raw:
                raw.sendall(payload)
                answers.append(raw.recv(64))
        health = httpx.get(f"{serve.url}/__openprogram/health")
        stopped = serve.stop(signal.SIGTERM)
    assert all(answer.startswith(b"HTTP/1.0 400") for answer in answers)
    assert health.status_code == 200  # it serves on
    assert "Traceback" not in stopped.stderr
    logged = [line for line in stopped.stderr.splitlines() if "malformed request" in line]
    assert len(logged) == len(garbage), stopped.stderr
    assert logged[0].startswith(
        "openprogram serve: a malformed request from 127.0.0.1 was answered 400: "
        "Invalid character in Content-Length"
    )
    assert stopped.stderr.count("\n") == len(garbage)  # nothing else was logged
