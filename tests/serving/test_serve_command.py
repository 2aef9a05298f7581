"""``openprogram serve`` as a process: what it prints, how it stops, how it refuses to start."""

from __future__ import annotations

import importlib.util
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from openprogram.provider_boundary.codec import read_for_replay
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.cli_runner import openprogram
from tests.support.config_files import write_config
from tests.support.sdk_server import SdkServer, StallAfter
from tests.support.serve_process import ServeProcess

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def test_it_prints_where_it_listens_and_at_sigint_what_it_recorded(tmp_path: Path) -> None:
    env = user_environment(tmp_path / "home")
    path = tmp_path / "first.jsonl"
    with SdkServer() as upstream:
        serve = ServeProcess("--record", str(path), "--upstream", f"openai={upstream.base_url}",
                             env=env)  # fmt: skip
        with serve:
            answer = httpx.post(f"{serve.url}/v1/chat/completions", json=CHAT)
            stream = httpx.post(
                f"{serve.openai_url}/chat/completions", json={**CHAT, "stream": True}
            )
            stopped = serve.stop(signal.SIGINT)
    assert (answer.status_code, stream.status_code) == (200, 200)
    lines = stopped.stdout.splitlines()
    assert lines[0] == f"openprogram serve: recording into {path}"
    assert lines[1:6] == [
        f"  OPENPROGRAM_SERVE_URL={serve.url}",
        f"  OPENPROGRAM_SERVE_TOKEN={serve.token}",
        f"  OPENAI_BASE_URL={serve.url}/openai/v1",
        f"  ANTHROPIC_BASE_URL={serve.url}/anthropic",
        f"  GOOGLE_GEMINI_BASE_URL={serve.url}/gemini",
    ]
    assert lines[-1] == f"recorded 2 calls into {path}"
    assert stopped.status == 0
    assert "POST /v1/chat/completions → 200 recorded" in stopped.stderr
    assert [call.outcome for call in read_for_replay(path).calls] == ["complete", "complete"]


def test_a_stop_in_the_middle_of_a_stream_keeps_every_call_but_the_one_in_flight(
    tmp_path: Path,
) -> None:
    env = user_environment(tmp_path / "home")
    path = tmp_path / "stopped.jsonl"
    with SdkServer() as upstream:
        upstream.queue(None, StallAfter(events=2))  # type: ignore[arg-type]
        serve = ServeProcess("--record", str(path), "--grace", "0.2", "--upstream",
                             f"openai={upstream.base_url}", env=env)  # fmt: skip
        with serve:
            assert httpx.post(f"{serve.url}/v1/chat/completions", json=CHAT).status_code == 200
            started = threading.Event()

            def stream_until_stopped() -> None:
                body = {**CHAT, "stream": True}
                with (
                    pytest.raises(httpx.HTTPError),  # the server cuts it when it stops
                    httpx.stream("POST", f"{serve.url}/v1/chat/completions", json=body) as live,
                ):
                    for _ in live.iter_lines():
                        started.set()

            reader = threading.Thread(target=stream_until_stopped)
            reader.start()
            assert started.wait(30)
            stopped = serve.stop(signal.SIGTERM)
            reader.join(30)
    assert stopped.status == 0
    recording = read_for_replay(path)  # whole lines only: it reads
    assert [call.outcome for call in recording.calls] == ["complete", "abandoned"]
    assert len(recording.calls[1].event_rows) == 3  # the response, then the two events


def test_a_taken_port_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = openprogram("serve", "--port", str(port))
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: the port is in use (another server, or an "
        "earlier one still running); choose another with --port, or --port 0 for a free one\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--host", "0.0.0.0"], "--host 0.0.0.0: the server listens on loopback only"),
        (["--upstream", "openai=ftp://x"], "--upstream openai: 'ftp://x' is not an http"),
        (["--replay", "nothing-here"], "nothing-here.jsonl: no such recording"),
        (["--port", "70000"], "--port is 0 to 65535"),
        (["--allow-origin", "localhost:3000"], "--allow-origin 'localhost:3000': give an origin"),
        (["--allow-origin", "http://a.example/page"], "scheme://host[:port]"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(argv: list[str], message: str) -> None:
    result = openprogram("serve", *argv)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_without_aiohttp_it_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "aiohttp" else real(name, *a)
    )
    result = openprogram("serve")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: openprogram serve needs aiohttp, which is not installed: "
        "pip install 'openprogram[serve]'\n"
    )


def test_a_replay_that_mismatched_or_left_calls_exits_1_listing_them(tmp_path: Path) -> None:
    env = user_environment(tmp_path / "home")
    path = tmp_path / "two.jsonl"
    with SdkServer() as upstream:
        hosts = f"openai={upstream.base_url}"
        with ServeProcess("--record", str(path), "--upstream", hosts, env=env) as serve:
            for prompt in ("one", "two"):
                body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
                httpx.post(f"{serve.url}/v1/chat/completions", json=body).raise_for_status()
    with ServeProcess("--replay", str(path), "--upstream", hosts, env=env) as serve:
        body = {"model": "m", "messages": [{"role": "user", "content": "three"}]}
        refused = httpx.post(f"{serve.url}/v1/chat/completions", json=body)
        deadline = time.monotonic() + 10
        while "replay mismatch" not in serve.stderr_so_far and time.monotonic() < deadline:
            time.sleep(0.02)  # logged as it happens
        stopped = serve.stop()
    assert refused.status_code == 412
    assert stopped.status == 1
    assert stopped.stderr.splitlines()[-3:] == [
        "warning: two: replay mismatch at call 0, field body.messages[0].content:",
        "recorded 'one', incoming 'three'",
        # call 0 was requested and differed: its mismatch is its report
        f"warning: two: replay incomplete: 1 of 2 recorded calls never requested (call 1) "
        f"from {path}; the run stopped before the recorded session did",
    ]


def test_without_a_recording_of_its_own_it_serves_sessions_and_sums_them_up(
    tmp_path: Path,
) -> None:
    env = user_environment(tmp_path / "home")
    with SdkServer() as upstream:
        hosts = f"openai={upstream.base_url}"
        serve = ServeProcess("--dir", str(tmp_path / "recs"), "--upstream", hosts, env=env)
        with serve:
            for name in ("t/one", "t/two"):
                headers = {"x-openprogram-recording": name, "x-openprogram-mode": "record",
                           **serve.auth}  # fmt: skip
                answer = httpx.post(f"{serve.url}/v1/chat/completions", json=CHAT, headers=headers)
                assert answer.status_code == 200
            nameless = httpx.post(f"{serve.url}/v1/chat/completions", json=CHAT)
            stopped = serve.stop()
    assert nameless.status_code == 412
    lines = stopped.stdout.splitlines()
    assert lines[0] == (
        "openprogram serve: no recording of its own: each request or session names one"
    )
    assert lines[-1] == "2 sessions: 2 recorded (2 calls), 0 replayed, 0 with problems"
    assert stopped.status == 0
    assert sorted(p.name for p in (tmp_path / "recs" / "t").iterdir()) == [
        "one.jsonl",
        "two.jsonl",
    ]


def test_a_broken_configuration_blocks_the_proxy_as_it_blocks_everything(tmp_path: Path) -> None:
    write_config('[record_replay]\nmode = "replay"\nfile = "gone"\n')
    served = openprogram("serve", "--port", "0")
    assert served.exit_code == 1
    assert served.stderr.startswith("error: record/replay is blocked: ")
    assert "openprogram recordings off" in served.stderr
    # exec of a program that is not Python runs it blocked, and says so
    env = user_environment(tmp_path / "openprogram-home")
    ran = openprogram_process("exec", "--", "sh", "-c", "exit 0", env=env)
    assert ran.returncode == 1
    assert "openprogram: record/replay is blocked: " in ran.stderr


@pytest.mark.parametrize("flag", ["--proxy", "--isolate"])
def test_a_command_not_found_is_refused_before_a_proxy_starts(tmp_path: Path, flag: str) -> None:
    env = user_environment(tmp_path / "home")
    result = openprogram_process("exec", "--record", "x", flag, "--", "no-such-program", env=env)
    assert (result.returncode, result.stderr) == (
        2,
        "error: no-such-program: command not found (nothing was run)\n",
    )
