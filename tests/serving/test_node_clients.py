"""Programs in another language, recorded and replayed through the proxy: the official Node
SDKs (``openai``, ``@anthropic-ai/sdk``) under ``openprogram serve`` and under ``openprogram
exec``, Vitest and Jest with a recording per test, ``curl`` for the raw bytes, and ``exec
--isolate``.

The Node package is ``tests/serving/node`` (``npm ci --prefix tests/serving/node``, which
``.ci/run`` does). Without node, its packages or curl these tests skip, saying so — except
where ``CI_REQUIRES_NODE`` is set (``.ci/run`` sets it), where they fail instead. The
isolation test runs where an unprivileged network namespace can be made.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from openprogram.provider_boundary.codec import read_for_replay
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received
from tests.support.sdk_server import ErrorReply, SdkServer
from tests.support.serve_process import ServeProcess

NODE_DIR = Path(__file__).parent / "node"
KEYS = {
    "OPENAI_API_KEY": "sk-proj-node-0123456789abcdefKEY1",
    "ANTHROPIC_API_KEY": "sk-ant-api03-node-0123456789abcdefKEY2",
}


def _node_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (NODE_DIR / "node_modules" / "openai").is_dir():
        return f"the Node packages are not installed: npm ci --prefix {NODE_DIR}"
    return None


@pytest.fixture(autouse=True)
def _node() -> None:
    missing = _node_missing()
    if missing is None:
        return
    if os.environ.get("CI_REQUIRES_NODE"):
        pytest.fail(f"{missing} (.ci/run installs them)")
    pytest.skip(f"{missing} (.ci/run installs them)")


def _node_agent(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", "agent.mjs", *args],
        cwd=NODE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _clean_environment(home: Path) -> dict[str, str]:
    """The user's environment with no vendor key and no base URL of a vendor."""
    env = user_environment(home)
    for name in list(env):
        if name.endswith(("_API_KEY", "_BASE_URL", "_API_BASE")) or name.startswith(
            "OPENPROGRAM_SERVE_"
        ):
            del env[name]
    return env


def test_the_node_sdks_record_through_serve_and_replay_with_the_vendor_server_stopped(
    tmp_path: Path,
) -> None:
    env = _clean_environment(tmp_path / "home")
    path = tmp_path / "node.jsonl"
    with SdkServer() as upstream:
        hosts = ("--upstream", f"openai={upstream.base_url}", f"anthropic={upstream.base_url}")
        with ServeProcess("--record", str(path), *hosts, env=env) as serve:
            clients = {**env, **KEYS, "OPENAI_BASE_URL": serve.openai_url,
                       "ANTHROPIC_BASE_URL": serve.anthropic_url}  # fmt: skip
            live = _node_agent("all", env=clients)
            upstream.queue(ErrorReply(400))
            live_error = _node_agent("error", env=clients)
            recorded = serve.stop(signal.SIGINT)
    assert live.returncode == 0, live.stderr
    assert live_error.returncode == 0, live_error.stdout
    assert recorded.status == 0
    assert recorded.stdout.splitlines()[-1] == f"recorded 10 calls into {path}"
    text = path.read_text()
    assert all(key not in text for key in KEYS.values())  # the client's keys, never stored

    # the vendor server is gone; other keys are fine under replay (they are not compared)
    with ServeProcess("--replay", str(path), *hosts, env=env) as serve:
        clients = {
            **env,
            "OPENAI_API_KEY": "sk-other",
            "ANTHROPIC_API_KEY": "sk-ant-other",
            "OPENAI_BASE_URL": serve.openai_url,
            "ANTHROPIC_BASE_URL": serve.anthropic_url,
        }
        # first a changed request: compared with the nearest call not yet served
        drifted = _node_agent("responses", "--prompt", "Say goodbye", env=clients)
        replayed = _node_agent("all", env=clients)
        replayed_error = _node_agent("error", env=clients)
        stopped = serve.stop()
    assert replayed.stdout == live.stdout  # byte for byte: every chunk, id and error the SDKs saw
    assert replayed_error.stdout == live_error.stdout
    assert json.loads(live_error.stdout)["result"]["status"] == 400

    # a changed request: the SDK's error says where it differed (the recorded value is for a
    # client with the server's token, and in the server's log), and no retry was made
    assert drifted.returncode == 3
    report = (
        "412 replay mismatch at call 2, field body.input: the recorded value is in the "
        "server's log, and in the answer to a client that sends the server's token "
        "(x-openprogram-token)"
    )
    assert json.loads(drifted.stdout)["error"] == {
        "name": "APIError",
        "status": 412,
        "message": report,
    }
    assert stopped.status == 1
    assert stopped.stderr.count("replay mismatch at call 2, field body.input:") == 2  # as it
    # happened, and once more in the summary at the end


def _printed_environment(serve: ServeProcess) -> dict[str, str]:
    """The ``NAME=value`` lines the server printed once it listens, as an environment."""
    for _ in range(600):  # a bound on a hang, not on speed
        if "Ctrl-C stops it" in serve.stdout_so_far:
            break
        time.sleep(0.05)
    lines = [line.strip() for line in serve.stdout_so_far.splitlines() if line.startswith("  ")]
    return dict(line.split("=", 1) for line in lines)


def test_serve_replay_serves_a_node_agent_run_twice_with_only_the_lines_it_printed(
    tmp_path: Path,
) -> None:
    env = _clean_environment(tmp_path / "home")
    path = tmp_path / "node.jsonl"
    with SdkServer() as upstream:
        hosts = ("--upstream", f"openai={upstream.base_url}", f"anthropic={upstream.base_url}")
        with ServeProcess("--record", str(path), *hosts, env=env) as serve:
            clients = {**env, **KEYS, "OPENAI_BASE_URL": serve.openai_url,
                       "ANTHROPIC_BASE_URL": serve.anthropic_url}  # fmt: skip
            live = _node_agent("all", env=clients)
            assert serve.stop(signal.SIGINT).status == 0
    assert live.returncode == 0, live.stderr

    # the vendor server is gone, and the program is given what the server printed (and
    # where node is): no key of its own
    with ServeProcess("--replay", str(path), env=env) as serve:
        printed = {"PATH": os.environ["PATH"], **_printed_environment(serve)}
        runs = [_node_agent("all", env=printed) for _ in range(2)]
        stopped = serve.stop(signal.SIGINT)
    assert [(run.returncode, run.stdout) for run in runs] == [(0, live.stdout)] * 2, [
        run.stderr for run in runs
    ]
    assert stopped.status == 0, stopped.stderr
    assert stopped.stdout.splitlines()[-1] == (
        f"18 calls replayed from {path} in 2 passes, all matched"
    )


def test_exec_runs_a_node_agent_through_a_proxy_of_its_own(tmp_path: Path) -> None:
    env = _clean_environment(tmp_path / "home")
    with SdkServer() as upstream:
        configured = {**env, **KEYS, "OPENAI_BASE_URL": upstream.openai_url,
                      "ANTHROPIC_BASE_URL": upstream.base_url}  # fmt: skip
        live = openprogram_process(
            "exec", "--record", "node-agent", "--", "node", "agent.mjs", "all",
            env=configured, cwd=NODE_DIR,
        )  # fmt: skip
    assert live.returncode == 0, live.stderr
    store = tmp_path / "home" / "recordings" / "node-agent.jsonl"
    assert live.stderr.splitlines()[-1] == f"openprogram: recorded 9 calls into {store}"
    urls = [call.request["url"] for call in read_for_replay(store).calls]
    assert urls[0] == f"{upstream.openai_url}/chat/completions"  # the program's upstream

    # no key, no vendor server: exec gives the SDKs a placeholder key, and the proxy answers
    offline = {
        **env,
        "OPENAI_BASE_URL": upstream.openai_url,
        "ANTHROPIC_BASE_URL": upstream.base_url,
    }
    replayed = openprogram_process(
        "exec", "--replay", "node-agent", "--", "node", "agent.mjs", "all",
        env=offline, cwd=NODE_DIR,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == live.stdout
    assert replayed.stderr == f"openprogram: 9 calls replayed from {store} and matched\n"

    # verify -- COMMAND takes the same way: the recording passes, and its hash is printed
    verified = openprogram_process(
        "recordings", "verify", "node-agent", "--", "node", "agent.mjs", "all",
        env=offline, cwd=NODE_DIR,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    assert "transcript hash" in verified.stdout + verified.stderr

    drifted = openprogram_process(
        "exec", "--replay", "node-agent", "--", "node", "agent.mjs", "anthropic",
        "--prompt", "Say goodbye", env=offline, cwd=NODE_DIR,
    )  # fmt: skip
    assert drifted.returncode == 3  # the program's own status
    assert (
        "openprogram: replay mismatch at call 3, field body.messages[0].content:\n"
        "recorded 'Say hello', incoming 'Say goodbye'"
    ) in drifted.stderr


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--net", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="no network namespace here (unshare fails)")
def test_exec_isolate_replays_in_a_namespace_with_loopback_only(tmp_path: Path) -> None:
    env = _clean_environment(tmp_path / "home")
    with SdkServer() as upstream:
        configured = {**env, **KEYS, "OPENAI_BASE_URL": upstream.openai_url}
        live = openprogram_process(
            "exec", "--record", "iso", "--", "node", "agent.mjs", "responses",
            env=configured, cwd=NODE_DIR,
        )  # fmt: skip
    assert live.returncode == 0, live.stderr
    offline = {**env, "OPENAI_BASE_URL": upstream.openai_url}
    # the command sees its own network namespace, whose only interface is loopback: nothing it
    # does can reach another machine (nothing here tries to)
    script = (
        "readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ';"
        " node agent.mjs responses"
    )
    isolated = openprogram_process(
        "exec", "--replay", "iso", "--isolate", "--", "sh", "-c", script, env=offline, cwd=NODE_DIR
    )  # fmt: skip
    assert isolated.returncode == 0, isolated.stderr
    namespace, interfaces, output = isolated.stdout.split("\n", 2)
    assert namespace != os.readlink("/proc/self/ns/net")
    assert interfaces == "lo"  # the namespace's interfaces, as /proc/net/dev lists them
    assert output == live.stdout


class RawBytesServer(LoopbackServer):
    """Answers with bytes a re-serializing proxy would change: comments, CRLF line ends,
    spaced JSON, an ``id`` and a ``retry`` field, a final event without its blank line."""

    BODY = (
        b": keep-alive\r\n\r\n"
        b'event: message\r\nid: 7\r\nretry: 1500\r\ndata: {"text":  "h\\u00e9llo" }\r\n\r\n'
        b"data: plain text, not JSON\n\n"
        b"data: [DONE]\n\n"
        b": the end\n"
    )

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        http.send_head(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        for piece in (self.BODY[:20], self.BODY[20:77], self.BODY[77:]):
            http.send_chunk(piece)
        http.end_chunks()


@pytest.fixture
def curl() -> str:
    found = shutil.which("curl")
    if found is None and os.environ.get("CI_REQUIRES_NODE"):
        pytest.fail("curl is not installed (.ci/run installs it)")
    if found is None:
        pytest.skip("curl is not installed (.ci/run installs it)")
    return found


def test_curl_gets_the_upstream_s_bytes_through_the_proxy_recording_and_replaying(
    tmp_path: Path, curl: str
) -> None:
    env = _clean_environment(tmp_path / "home")
    path = tmp_path / "raw.jsonl"
    body = '{"model":"m","stream":true,"messages":[{"role":"user","content":"raw"}]}'

    def fetch(url: str) -> bytes:
        command = [curl, "-sS", "--no-buffer", "-H", "content-type: application/json",
                   "--data-binary", body, f"{url}/v1/chat/completions"]  # fmt: skip
        return subprocess.run(command, capture_output=True, check=True, timeout=60).stdout

    with RawBytesServer() as upstream:
        direct = fetch(upstream.base_url)
        with ServeProcess("--record", str(path), "--upstream", f"openai={upstream.base_url}",
                          env=env) as serve:  # fmt: skip
            recorded = fetch(serve.url)
    with ServeProcess("--replay", str(path), "--upstream", f"openai={upstream.base_url}",
                      env=env) as serve:  # fmt: skip
        replayed = fetch(serve.url)
    assert direct == RawBytesServer.BODY
    assert recorded == direct
    assert replayed == direct


@pytest.mark.parametrize("runner", ["vitest", "jest"])
def test_a_test_runner_gives_each_test_its_own_recording(tmp_path: Path, runner: str) -> None:
    env = _clean_environment(tmp_path / "home")
    recordings = tmp_path / "recordings"
    command = ["npx", "--no-install", runner, *(["run"] if runner == "vitest" else [])]

    def run_tests(mode: str, serve: str, **extra: str) -> subprocess.CompletedProcess[str]:
        runner_env = {**env, "OPENAI_API_KEY": KEYS["OPENAI_API_KEY"], **extra,
                      "OPENPROGRAM_SERVE_MODE": mode, "OPENPROGRAM_SERVE_DIR": str(recordings),
                      "OPENPROGRAM_SERVE_COMMAND": serve, "CI": "1"}  # fmt: skip
        if mode == "replay":
            del runner_env["OPENAI_API_KEY"]  # the setup gives the SDK a placeholder
        return subprocess.run(
            command, cwd=NODE_DIR, env=runner_env, capture_output=True, text=True, timeout=180
        )

    serve = "python -m openprogram serve"
    with SdkServer() as upstream:
        live_serve = f"{serve} --upstream openai={upstream.base_url}"
        recorded = run_tests("once", live_serve)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    spec = "vitest-example.test.mjs" if runner == "vitest" else "jest-example.test.cjs"
    assert sorted(p.name for p in (recordings / spec).iterdir()) == [
        "answers-in-one-piece.jsonl",
        "streams-a-reply.jsonl",
    ]
    # the vendor server is gone: each test replays its own recording
    replayed = run_tests("replay", live_serve)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr

    drifted = run_tests("replay", live_serve, EXAMPLE_PROMPT="Name a flower")
    output = drifted.stdout + drifted.stderr
    assert drifted.returncode != 0
    assert "replay mismatch at call 0, field body.messages[0].content" in output
    assert "recorded 'Name a colour', incoming 'Name a flower'" in output


def test_exec_s_proxy_serves_a_test_runner_s_sessions_where_its_setup_keeps_them(
    tmp_path: Path, curl: str
) -> None:
    env = _clean_environment(tmp_path / "home")
    recordings = tmp_path / "recs"
    ask = (
        f'{curl} -sS -H "x-openprogram-recording: t/one" -H "x-openprogram-mode: record" '
        '-H "x-openprogram-token: $OPENPROGRAM_SERVE_TOKEN" '
        '-H "content-type: application/json" -d \'{"model": "m", "messages": [{"role": '
        '"user", "content": "hi"}]}\' "$OPENPROGRAM_SERVE_URL/v1/chat/completions"'
    )
    with SdkServer() as upstream:
        ran = openprogram_process(
            "exec", "--record", "own", "--", "sh", "-c", ask,
            env={**env, "OPENAI_BASE_URL": upstream.openai_url,
                 "OPENPROGRAM_SERVE_DIR": str(recordings)},
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "You said: hi" in ran.stdout
    assert len(read_for_replay(recordings / "t" / "one.jsonl").calls) == 1
