"""``openprogram exec --replay`` holds the line below Python: the command runs in a network
namespace with loopback only, so a child binary, a shell, ``os.system``, a ``python -I``
child, a ctypes ``connect``, a datagram and a gRPC channel reach nothing — 0 hits on a live
loopback server — and the run fails naming the connection; an allowed ``127.0.0.1:PORT``
stays reachable from Python and from curl; ``--no-isolate`` runs as before. Each as a real
``openprogram exec`` process: the process boundary is the subject.

Two recordings of one call to a loopback stand-in of OpenAI are made once (``exec
--record``): one by a Python program (recorded in-process, replayed in-process), one by a
shell's curl (through exec's proxy). Each replay makes that call first, then tries its way
out; the stand-in is stopped by then.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.isolation.live import (
    ESCAPES,
    HOST,
    Escape,
    HitServer,
    LiveServers,
    curl_plain,
    sh_curl,
    urllib_get,
)
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.sdk_server import SdkServer

pytestmark = pytest.mark.needs_namespaces

BODY = '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'
VENDOR_CALL_PY = f"""\
import json, os, urllib.request
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data={BODY!r}.encode(),
    headers={{"content-type": "application/json",
             "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}},
)
with urllib.request.urlopen(request, timeout=10) as answer:
    print("model:", json.load(answer)["object"])
"""
"""Python: the one recorded call, through urllib (captured in-process)."""
VENDOR_CALL_SH = (
    "curl -sS --fail --noproxy '*' --max-time 10 -X POST \"$OPENAI_BASE_URL/chat/completions\""
    " -H 'content-type: application/json' -H \"authorization: Bearer $OPENAI_API_KEY\""
    f" -d {shlex.quote(BODY)} -o /dev/null && echo 'model: chat.completion'"
)
"""A shell: the one recorded call, through curl (through exec's proxy)."""


@dataclass(frozen=True)
class Recorded:
    """The two recordings of one call, and the environment that replays them."""

    python: Path
    shell: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("exec-isolation")
    env = user_environment(folder / "home")
    for name in ("ANTHROPIC_API_KEY", "PYTHONPATH", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(name, None)
    with SdkServer() as vendor:
        env["OPENAI_BASE_URL"] = vendor.openai_url
        recording = {**env, "OPENAI_API_KEY": "sk-test"}
        python = folder / "python.jsonl"
        shell = folder / "shell.jsonl"
        for path, command in (
            (python, [sys.executable, "-c", VENDOR_CALL_PY]),
            (shell, ["sh", "-c", VENDOR_CALL_SH]),
        ):
            done = openprogram_process("exec", "--record", str(path), "--", *command, env=recording)
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith("model: chat.completion"), done.stdout
    env.pop("OPENAI_API_KEY", None)  # a replay needs no key
    return Recorded(python, shell, env)


def replayed(
    recorded: Recorded, command: list[str], *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``openprogram exec --replay … FLAGS -- COMMAND``: the Python recording for a command
    that is ``python -c``, the shell's for any other."""
    python = command[:2] == [sys.executable, "-c"]
    path = recorded.python if python else recorded.shell
    return openprogram_process(
        "exec", "--replay", str(path), *flags, "--", *command, env=env or recorded.env
    )


def after_the_call(command: list[str]) -> list[str]:
    """``command``, after the recorded call: in the same Python for ``python -c``, else a
    shell that makes it and then becomes ``command``."""
    if command[:2] == [sys.executable, "-c"]:
        return [sys.executable, "-c", VENDOR_CALL_PY + command[2], *command[3:]]
    return ["sh", "-c", VENDOR_CALL_SH + ' && exec "$@"', "sh", *command]


def aimed_at(escape: Escape, servers: LiveServers) -> int:
    """The port of the server ``escape`` aims at."""
    if escape.aims_at == "http":
        return servers.http.port
    if escape.aims_at == "udp":
        return servers.udp.port
    return servers.grpc.port


@pytest.mark.parametrize("escape", ESCAPES, ids=str)
def test_no_way_out_of_a_replay_reaches_a_live_server(
    recorded: Recorded, live_servers: LiveServers, escape: Escape
) -> None:
    result = replayed(recorded, after_the_call(escape.argv(live_servers)))
    assert escape.hits(live_servers) == 0, result.stdout
    assert result.stdout.startswith("model: chat.completion"), result.stderr  # replayed
    assert "reached:" not in result.stdout
    assert result.returncode != 0, result.stderr
    named = f"{HOST}:{aimed_at(escape, live_servers)}"
    assert any(named in line for line in result.stderr.splitlines()), result.stderr


def test_a_command_that_exits_0_after_a_stopped_connection_makes_exec_exit_1(
    recorded: Recorded, hit_server: HitServer
) -> None:
    result = replayed(recorded, after_the_call(sh_curl(hit_server.url)))
    assert hit_server.hits == 0
    assert "stopped: curl exit 7" in result.stdout  # the shell went on, and exited 0
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(
        f"openprogram: 1 connection was stopped by the isolated replay: {HOST}:{hit_server.port} ("
    ), result.stderr


def test_an_allowed_loopback_port_stays_reachable_from_python_and_from_curl(
    recorded: Recorded, tmp_path: Path
) -> None:
    with HitServer() as database:
        env = configured(recorded, tmp_path, f'allowed_hosts = ["{HOST}:{database.port}"]')
        from_python = replayed(recorded, after_the_call(python_socket_get(database.port)), env=env)
        from_curl = replayed(recorded, after_the_call(curl_plain(database.url)), env=env)
        hits = database.hits
    assert from_python.returncode == 0, from_python.stderr
    assert "reached: HTTP/1.0 200 OK" in from_python.stdout
    assert from_curl.returncode == 0, from_curl.stderr
    assert from_curl.stdout.endswith("hit\n")
    assert hits == 2


def test_a_bare_loopback_host_bridges_the_ports_listening_when_exec_starts(
    recorded: Recorded, tmp_path: Path
) -> None:
    with HitServer() as database:
        env = configured(recorded, tmp_path, f'allowed_hosts = ["{HOST}"]')
        result = replayed(recorded, after_the_call(sh_curl(database.url)), env=env)
        assert database.hits == 1
    assert result.returncode == 0, result.stderr
    assert "reached: hit" in result.stdout


def test_no_isolate_runs_the_command_in_this_network_as_before(
    recorded: Recorded, hit_server: HitServer
) -> None:
    result = replayed(recorded, after_the_call(sh_curl(hit_server.url)), "--no-isolate")
    assert hit_server.hits == 1  # a child binary is not held without the namespace
    assert result.returncode == 0, result.stderr
    assert "enforced" not in result.stderr
    ours = after_the_call(["readlink", "/proc/self/ns/net"])
    namespace = replayed(recorded, ours, "--no-isolate")
    assert namespace.stdout.splitlines()[-1] == os.readlink("/proc/self/ns/net")


def test_the_command_runs_as_its_user_in_a_namespace_of_its_own(recorded: Recorded) -> None:
    script = "id -u; id -g; readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1"
    result = replayed(recorded, after_the_call(["sh", "-c", script]))
    assert result.returncode == 0, result.stderr
    _, uid, gid, namespace, *interfaces = result.stdout.splitlines()
    assert (int(uid), int(gid)) == (os.getuid(), os.getgid())
    assert namespace != os.readlink("/proc/self/ns/net")
    assert [name.strip() for name in interfaces] == ["lo"]


def test_isolate_leaves_a_python_command_its_own_base_url(
    recorded: Recorded, tmp_path: Path
) -> None:
    # the base URL is written in the program: the proxy would not see it, in-process does
    written = VENDOR_CALL_PY.replace(
        'os.environ["OPENAI_BASE_URL"]', repr(recorded.env["OPENAI_BASE_URL"])
    )
    result = replayed(recorded, [sys.executable, "-c", written], "--isolate")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "model: chat.completion\n"
    assert "APIConnectionError" not in result.stderr
    assert "1 call replayed from" in result.stderr


def test_isolate_records_a_python_command_in_process_its_base_url_bridged(
    tmp_path: Path, hit_server: HitServer
) -> None:
    env = user_environment(tmp_path / "home")
    env.pop("PYTHONPATH", None)
    program = VENDOR_CALL_PY + urllib_get(hit_server.url)
    with SdkServer() as vendor:
        env.update(OPENAI_BASE_URL=vendor.openai_url, OPENAI_API_KEY="sk-test")
        result = openprogram_process(
            "exec", "--record", "iso", "--isolate", "--", sys.executable, "-c", program, env=env
        )
        vendor_hits = len(vendor.received)
    assert vendor_hits == 1  # the vendor's base URL is bridged under record
    assert hit_server.hits == 0  # what is not bridged stays out
    assert result.stdout.startswith("model: chat.completion\nstopped:"), result.stdout
    assert result.returncode == 1
    assert f"stopped by the isolated recording: {HOST}:{hit_server.port} (" in result.stderr


def test_a_blocked_run_is_isolated_as_a_replay(tmp_path: Path, hit_server: HitServer) -> None:
    home = tmp_path / "blocked-home"
    home.mkdir()
    (home / "config.toml").write_text('[record_replay]\nmode = "replay"\nfile = "gone"\n')
    env = user_environment(home)
    result = openprogram_process("exec", "--", *sh_curl(hit_server.url), env=env)
    assert hit_server.hits == 0
    assert result.returncode == 1
    assert result.stderr.startswith("openprogram: record/replay is blocked: ")
    assert f"stopped by the isolated replay: {HOST}:{hit_server.port} (" in result.stderr


def test_isolate_with_no_isolate_is_a_usage_error(tmp_path: Path) -> None:
    env = user_environment(tmp_path / "home")
    marker = tmp_path / "ran"
    result = openprogram_process(
        "exec", "--replay", "x", "--isolate", "--no-isolate", "--", "touch", str(marker), env=env
    )
    assert (result.returncode, result.stderr) == (
        2,
        "error: --isolate and --no-isolate contradict each other: give one of them\n",
    )
    assert not marker.exists()


def python_socket_get(port: int) -> list[str]:
    """Python talking to a database stand-in as a database client would: its own socket (an
    HTTP request through a client library would be served from the recording instead)."""
    source = (
        "import socket\n"
        f"with socket.create_connection(({HOST!r}, {port}), timeout=10) as sock:\n"
        "    sock.sendall(b'GET /db HTTP/1.0\\r\\n\\r\\n')\n"
        "    print('reached:', sock.recv(64).split(b'\\r\\n')[0].decode())\n"
    )
    return [sys.executable, "-c", source]


def configured(recorded: Recorded, tmp_path: Path, line: str) -> dict[str, str]:
    """The replay environment with a configuration of its own holding ``line`` under
    ``[record_replay]``."""
    config = tmp_path / "config.toml"
    config.write_text(f"[record_replay]\n{line}\n")
    return {**recorded.env, "OPENPROGRAM_CONFIG": str(config)}


def test_verify_of_a_command_holds_its_replay_as_exec_does(
    recorded: Recorded, hit_server: HitServer
) -> None:
    """``recordings verify NAME -- COMMAND`` is a replay: the command runs in the namespace
    (a child curl reaches the live server 0 times) and verify fails naming the connection."""
    command = after_the_call(curl_plain(hit_server.url))
    result = openprogram_process(
        "recordings", "verify", str(recorded.python), "--", *command, env=recorded.env
    )
    assert hit_server.hits == 0
    assert result.returncode == 1, result.stderr
    assert f"{HOST}:{hit_server.port}" in result.stdout + result.stderr


def test_verify_of_a_command_keeps_the_allowed_hosts(recorded: Recorded, tmp_path: Path) -> None:
    """verify builds its plan from the configured settings as exec does: an allowed
    database stand-in is reached from Python (verify once forgot ``allowed_hosts``, and
    replay refused it)."""
    with HitServer() as database:
        env = configured(recorded, tmp_path, f'allowed_hosts = ["{HOST}:{database.port}"]')
        command = after_the_call(python_socket_get(database.port))
        result = openprogram_process(
            "recordings", "verify", str(recorded.python), "--", *command, env=env
        )
        hits = database.hits
    assert result.returncode == 0, result.stdout + result.stderr
    assert hits == 1
