"""``record_replay()`` holds the child processes started in its block.

A Python child inherits the block (records into the same recording, replays from it, is
refused what the block refuses); under replay a child that cannot replay in-process (curl,
``sh -c curl``, ``python -S``) runs in a loopback-only network namespace, is refused
(``children="refuse"``), or runs named as unenforced where no namespace can be made;
``allowed_commands`` run as they are. Every server here is on 127.0.0.1: a broken hold
reaches loopback, never another machine. The tests whose child would run in a namespace are
marked ``needs_namespaces`` (skipped, with the reason, where ``unshare -rn true`` fails).
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import json
import multiprocessing
import os
import shlex
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import openprogram
from openprogram.activation import children as children_module
from openprogram.activation.children import UnenforcedChildWarning
from openprogram.activation.exec_environment import EXCHANGE_VARIABLE, PLAN_VARIABLE
from openprogram.activation.plan import RecordReplayPlan
from openprogram.errors import ChildRefusedError, ChildReplayError
from openprogram.recording.reader import read_recording
from tests.isolation.live import (
    CLIENT_TIMEOUT,
    HitServer,
    curl_plain,
    os_system_curl,
    python_argv,
    sh_curl,
    urllib_get,
)

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed here")


@pytest.fixture
def empty_recording(tmp_path: Path) -> Path:
    """A recording of no call: a replay of it serves nothing, so every connection a child
    makes is one the replay does not serve."""
    path = tmp_path / "empty.jsonl"
    with openprogram.record_replay(path, mode="record"):
        pass
    return path


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_TIMEOUT * 3)


def _httpx_get(url: str) -> str:
    return f"import httpx\nprint('body:', httpx.get({url!r}, timeout={CLIENT_TIMEOUT}).text)\n"


def _socket_connect(port: int) -> str:
    """Python source: a plain socket connection, which no recording serves."""
    return (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout={CLIENT_TIMEOUT}).close()\n"
        "    print('reached')\n"
        "except Exception as error:\n"
        "    print('stopped:', type(error).__name__, error)\n"
    )


def _connect(port: int) -> None:
    """A multiprocessing target: a plain socket connection, whatever it meets. It waits for
    the server's answer, so that the server has counted it once the worker has ended (a
    connection the kernel accepted is not yet one the server's thread took)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT) as sock:
            sock.sendall(b"GET /worker HTTP/1.0\r\n\r\n")
            while sock.recv(4096):
                pass
    except Exception as error:
        print("stopped:", type(error).__name__, error)


# -- a Python child inherits the block ------------------------------------------------------


@pytest.mark.parametrize("flags", [(), ("-I",), ("-E",)], ids=["python", "python -I", "python -E"])
def test_python_child_is_refused_what_the_block_refuses(
    hit_server: HitServer, empty_recording: Path, flags: tuple[str, ...]
) -> None:
    with (
        pytest.raises(ChildReplayError) as raised,
        openprogram.record_replay(empty_recording, mode="replay"),
    ):
        done = _run(python_argv(urllib_get(hit_server.url), *flags))
        assert "stopped:" in done.stdout, done.stdout + done.stderr  # the child carried on
    assert hit_server.hits == 0
    # urllib is an HTTP client the replay answers: the child's request met the recording,
    # which holds no call (the block's own request would meet the same)
    assert "in the child process" in str(raised.value)
    assert "the recording holds no calls" in str(raised.value)


@pytest.mark.parametrize("flags", [(), ("-I",)], ids=["python", "python -I"])
def test_python_child_socket_is_refused_naming_the_connection(
    hit_server: HitServer, empty_recording: Path, flags: tuple[str, ...]
) -> None:
    with (
        pytest.raises(ChildReplayError) as raised,
        openprogram.record_replay(empty_recording, mode="replay"),
    ):
        done = _run(python_argv(_socket_connect(hit_server.port), *flags))
        assert "stopped:" in done.stdout, done.stdout + done.stderr
    assert hit_server.hits == 0
    assert f"127.0.0.1:{hit_server.port}" in str(raised.value)
    assert "in the child process" in str(raised.value)


def test_python_child_given_its_own_environment_still_inherits(
    hit_server: HitServer, empty_recording: Path
) -> None:
    environ = {"PATH": os.environ.get("PATH", os.defpath)}
    with (
        pytest.raises(ChildReplayError, match=f"127.0.0.1:{hit_server.port}"),
        openprogram.record_replay(empty_recording, mode="replay"),
    ):
        subprocess.run(
            python_argv(_socket_connect(hit_server.port)),
            env=environ,
            capture_output=True,
            timeout=CLIENT_TIMEOUT * 3,
        )
    assert hit_server.hits == 0


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_multiprocessing_child_inherits_the_block(
    hit_server: HitServer, empty_recording: Path, method: str
) -> None:
    context = multiprocessing.get_context(method)
    with (
        pytest.raises(ChildReplayError, match=f"127.0.0.1:{hit_server.port}"),
        openprogram.record_replay(empty_recording, mode="replay"),
    ):
        process = context.Process(target=_connect, args=(hit_server.port,))
        process.start()
        process.join(CLIENT_TIMEOUT * 3)
    assert hit_server.hits == 0


def test_python_child_records_into_the_block_and_a_child_replays_it(
    hit_server: HitServer, tmp_path: Path
) -> None:
    recording = tmp_path / "child.jsonl"
    child = python_argv(_httpx_get(hit_server.url + "/answer"))
    with openprogram.record_replay(recording, mode="record"):
        recorded = _run(child)
    assert recorded.returncode == 0, recorded.stderr
    assert hit_server.hits == 1
    assert len(read_recording(recording).calls) == 1

    with openprogram.record_replay(recording, mode="replay") as active:
        replayed = _run(child)
    assert replayed.stdout == recorded.stdout
    assert hit_server.hits == 1  # served from the recording, in the child
    assert active.unenforced == []


def test_block_and_child_never_both_serve_a_call(hit_server: HitServer, tmp_path: Path) -> None:
    recording = tmp_path / "one.jsonl"
    url = hit_server.url + "/answer"
    with openprogram.record_replay(recording, mode="record"):
        import httpx

        httpx.get(url)
    assert hit_server.hits == 1
    with (
        pytest.raises(ChildReplayError, match="replays the recording"),
        openprogram.record_replay(recording, mode="replay"),
    ):
        httpx.get(url)  # the block's own process claims the recording: call 0 is served here
        _run(python_argv(_httpx_get(url)))  # the child asking for call 0 again is refused
    assert hit_server.hits == 1


def test_a_recording_a_child_replayed_is_judged_by_the_child(
    hit_server: HitServer, tmp_path: Path
) -> None:
    recording = tmp_path / "two.jsonl"
    child = python_argv(_httpx_get(hit_server.url + "/a") + _httpx_get(hit_server.url + "/b"))
    with openprogram.record_replay(recording, mode="record"):
        _run(child)
    assert len(read_recording(recording).calls) == 2
    only_first = python_argv(_httpx_get(hit_server.url + "/a"))
    with (
        pytest.raises(ChildReplayError, match="1 of 2 recorded calls never requested"),
        openprogram.record_replay(recording, mode="replay"),
    ):
        _run(only_first)  # the child claimed the recording and left call 1


# -- what the block puts in the environment, and takes back ----------------------------------


def test_the_environment_and_spawns_are_restored_after_nested_blocks(
    empty_recording: Path, tmp_path: Path
) -> None:
    before = dict(os.environ)
    originals = (_posixsubprocess.fork_exec, os.system, os.execv, os.posix_spawn)
    with openprogram.record_replay(empty_recording, mode="replay"):
        outer = os.environ[EXCHANGE_VARIABLE]
        assert json.loads(os.environ[PLAN_VARIABLE])["mode"] == "replay"
        assert _posixsubprocess.fork_exec is not originals[0]
        with openprogram.record_replay(tmp_path / "inner.jsonl", mode="record"):
            assert os.environ[EXCHANGE_VARIABLE] != outer
            assert json.loads(os.environ[PLAN_VARIABLE])["mode"] == "record"
        assert os.environ[EXCHANGE_VARIABLE] == outer
        assert json.loads(os.environ[PLAN_VARIABLE])["mode"] == "replay"
        assert Path(outer).is_dir()
    assert dict(os.environ) == before
    assert not Path(outer).exists()
    assert (_posixsubprocess.fork_exec, os.system, os.execv, os.posix_spawn) == originals


# -- a child that cannot replay in-process ---------------------------------------------------


ISOLATED = {
    "curl": lambda url: curl_plain(url),
    "sh -c curl": lambda url: sh_curl(url),
    "python -S": lambda url: python_argv(urllib_get(url), "-S"),
}


@needs_curl
@pytest.mark.needs_namespaces
@pytest.mark.parametrize("kind", list(ISOLATED))
def test_child_that_cannot_replay_in_process_runs_isolated(
    hit_server: HitServer, empty_recording: Path, kind: str
) -> None:
    with (
        pytest.raises(ChildReplayError) as raised,
        openprogram.record_replay(empty_recording, mode="replay", allowed_commands=[]),
    ):
        _run(ISOLATED[kind](hit_server.url))
    assert hit_server.hits == 0
    assert f"127.0.0.1:{hit_server.port}" in str(raised.value)
    assert "stopped" in str(raised.value)


@needs_curl
@pytest.mark.needs_namespaces
def test_os_system_curl_runs_isolated(hit_server: HitServer, empty_recording: Path) -> None:
    source = os_system_curl(hit_server.url)
    with (
        pytest.raises(ChildReplayError, match=f"127.0.0.1:{hit_server.port}"),
        openprogram.record_replay(empty_recording, mode="replay", allowed_commands=[]),
    ):
        exec(compile(source, "client", "exec"), {})  # os.system in the block's own process
    assert hit_server.hits == 0


@needs_curl
@pytest.mark.needs_namespaces
def test_posix_spawn_curl_runs_isolated(hit_server: HitServer, empty_recording: Path) -> None:
    assert CURL is not None
    with (
        pytest.raises(ChildReplayError, match=f"127.0.0.1:{hit_server.port}"),
        openprogram.record_replay(empty_recording, mode="replay", allowed_commands=[]),
    ):
        pid = os.posix_spawn(CURL, curl_plain(hit_server.url), dict(os.environ))
        os.waitpid(pid, 0)
    assert hit_server.hits == 0


@needs_curl
@pytest.mark.needs_namespaces
def test_os_execv_curl_runs_isolated(
    hit_server: HitServer, empty_recording: Path, tmp_path: Path
) -> None:
    """A process that replaces itself with curl inside a block: curl runs in a namespace of
    its own (with no relay: the block ends with the process)."""
    script = tmp_path / "replace.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os
            import openprogram
            with openprogram.record_replay({str(empty_recording)!r}, mode="replay",
                                           allowed_commands=[]):
                os.execv({CURL!r}, {curl_plain(hit_server.url)!r})
            """
        )
    )
    done = _run([sys.executable, str(script)])
    assert done.returncode == 7, done.stderr  # curl's own: could not connect
    assert hit_server.hits == 0
    assert f"127.0.0.1:{hit_server.port}" in done.stderr


@needs_curl
@pytest.mark.needs_namespaces
def test_allowed_host_with_its_port_stays_reachable_from_an_isolated_child(
    hit_server: HitServer, empty_recording: Path
) -> None:
    with openprogram.record_replay(
        empty_recording,
        mode="replay",
        allowed_hosts=[f"127.0.0.1:{hit_server.port}"],
        allowed_commands=[],
    ):
        done = _run(curl_plain(hit_server.url))
    assert done.returncode == 0, done.stderr
    assert hit_server.hits == 1


@needs_curl
def test_refuse_refuses_curl_before_it_starts_with_one_line(
    hit_server: HitServer, empty_recording: Path
) -> None:
    with (
        pytest.raises(ChildRefusedError) as raised,
        openprogram.record_replay(empty_recording, mode="replay", children="refuse"),
    ):
        _run(curl_plain(hit_server.url))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("replay refused to start curl ")
    assert "allowed_commands" in message
    assert hit_server.hits == 0


@needs_curl
def test_a_swallowed_refusal_still_fails_the_block(
    hit_server: HitServer, empty_recording: Path
) -> None:
    with (
        pytest.raises(ChildReplayError, match="replay refused to start curl"),
        openprogram.record_replay(empty_recording, mode="replay", children="refuse"),
        contextlib.suppress(ChildRefusedError),  # the code under test swallows the refusal
    ):
        _run(curl_plain(hit_server.url))
    assert hit_server.hits == 0


@needs_curl
def test_refuse_is_read_from_the_configuration(
    hit_server: HitServer, empty_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__CHILDREN", "refuse")
    with (
        pytest.raises(ChildRefusedError, match="replay refused to start curl"),
        openprogram.record_replay(empty_recording, mode="replay"),
    ):
        _run(curl_plain(hit_server.url))
    assert hit_server.hits == 0


@needs_curl
@pytest.mark.parametrize("shell", [False, True], ids=["argv", "sh -c"])
def test_allowed_commands_run_as_they_are(
    hit_server: HitServer, empty_recording: Path, shell: bool
) -> None:
    argv = curl_plain(hit_server.url)
    with openprogram.record_replay(
        empty_recording, mode="replay", children="refuse", allowed_commands=["curl"]
    ):
        if shell:
            done = subprocess.run(
                shlex.join(argv), shell=True, capture_output=True, timeout=CLIENT_TIMEOUT * 3
            )
        else:
            done = subprocess.run(argv, capture_output=True, timeout=CLIENT_TIMEOUT * 3)
    assert done.returncode == 0
    assert hit_server.hits == 1


@needs_curl
def test_a_shell_line_is_not_allowed_by_its_first_word_alone(
    hit_server: HitServer, empty_recording: Path
) -> None:
    line = f"curl -s --noproxy '*' {hit_server.url}; curl -s {hit_server.url}"
    with (
        pytest.raises(ChildRefusedError, match="replay refused to start /bin/sh -c"),
        openprogram.record_replay(
            empty_recording, mode="replay", children="refuse", allowed_commands=["curl"]
        ),
    ):
        subprocess.run(line, shell=True, capture_output=True, timeout=CLIENT_TIMEOUT * 3)
    assert hit_server.hits == 0


@needs_curl
def test_where_no_namespace_can_be_made_the_child_is_named_unenforced(
    hit_server: HitServer, empty_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(children_module, "namespace_unavailable", lambda: "namespaces are off here")
    with (
        pytest.warns(UnenforcedChildWarning, match="curl") as warned,
        openprogram.record_replay(empty_recording, mode="replay", allowed_commands=[]) as active,
    ):
        _run(curl_plain(hit_server.url))
    assert hit_server.hits == 1  # nothing held it: said, not hidden
    assert len(active.unenforced) == 1
    assert active.unenforced[0].startswith("curl ")
    assert "namespaces are off here" in active.unenforced[0]
    assert "refuse" in str(warned[0].message)


@needs_curl
def test_under_record_a_child_that_is_not_python_runs_as_it_is(
    hit_server: HitServer, tmp_path: Path
) -> None:
    with openprogram.record_replay(tmp_path / "r.jsonl", mode="record", children="refuse"):
        done = _run(curl_plain(hit_server.url))
    assert done.returncode == 0
    assert hit_server.hits == 1


def test_children_must_be_isolate_or_refuse(empty_recording: Path) -> None:
    with (
        pytest.raises(ValueError, match="children must be 'isolate' or 'refuse'"),
        openprogram.record_replay(empty_recording, mode="replay", children="allow"),  # type: ignore[arg-type]
    ):
        pass


def test_a_forkserver_started_before_the_block_is_restarted_inside_it(
    hit_server: HitServer, empty_recording: Path
) -> None:
    context = multiprocessing.get_context("forkserver")
    before = context.Process(target=_connect, args=(hit_server.port,))
    before.start()  # outside any block: the server starts, and this worker reaches the server
    before.join(CLIENT_TIMEOUT * 3)
    assert hit_server.hits == 1
    with (
        pytest.raises(ChildReplayError, match=f"127.0.0.1:{hit_server.port}"),
        openprogram.record_replay(empty_recording, mode="replay"),
    ):
        inside = context.Process(target=_connect, args=(hit_server.port,))
        inside.start()
        inside.join(CLIENT_TIMEOUT * 3)
    assert hit_server.hits == 1
    after = context.Process(target=_connect, args=(hit_server.port,))
    after.start()  # the block's server was stopped with it: this one runs as it is
    after.join(CLIENT_TIMEOUT * 3)
    assert hit_server.hits == 2


def _starts(argv: list[str]) -> str:
    """Python source that runs ``argv`` as its own child and swallows whatever it did."""
    return (
        "import subprocess\n"
        "try:\n"
        f"    subprocess.run({argv!r}, capture_output=True, timeout={CLIENT_TIMEOUT * 2})\n"
        "except Exception as error:\n"
        "    print('stopped:', type(error).__name__, error)\n"
    )


@needs_curl
@pytest.mark.needs_namespaces
def test_a_python_childs_own_curl_child_runs_isolated(
    hit_server: HitServer, empty_recording: Path
) -> None:
    with (
        pytest.raises(ChildReplayError) as raised,
        openprogram.record_replay(empty_recording, mode="replay", allowed_commands=[]),
    ):
        _run(python_argv(_starts(curl_plain(hit_server.url))))
    assert hit_server.hits == 0
    assert f"a child process's connection to 127.0.0.1:{hit_server.port}" in str(raised.value)
    assert str(raised.value).startswith("in the child process ")


@needs_curl
def test_a_python_childs_own_curl_child_is_refused_by_the_blocks_rule(
    hit_server: HitServer, empty_recording: Path
) -> None:
    with (
        pytest.raises(ChildReplayError, match="replay refused to start curl "),
        openprogram.record_replay(empty_recording, mode="replay", children="refuse"),
    ):
        done = _run(python_argv(_starts(curl_plain(hit_server.url))))
        assert "stopped: ChildRefusedError" in done.stdout, done.stdout + done.stderr
    assert hit_server.hits == 0


@needs_curl
def test_a_python_childs_allowed_command_runs_as_it_is(
    hit_server: HitServer, empty_recording: Path
) -> None:
    with openprogram.record_replay(
        empty_recording, mode="replay", children="refuse", allowed_commands=["curl"]
    ):
        _run(python_argv(_starts(curl_plain(hit_server.url))))
    assert hit_server.hits == 1


def test_children_held_in_two_threads_and_left_out_of_order_restore_the_environment(
    empty_recording: Path, tmp_path: Path
) -> None:
    """``record_replay()`` blocks end in the reverse order they began; the children's part
    of them (the environment) also copes with two threads leaving in the other order."""
    before = dict(os.environ)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, str] = {}

    def first() -> None:
        with children_module.block_children(RecordReplayPlan("replay", empty_recording)):
            first_in.set()
            second_in.wait(CLIENT_TIMEOUT)
        first_out.set()  # left while the second block, begun after it, still runs

    def second() -> None:
        first_in.wait(CLIENT_TIMEOUT)
        with children_module.block_children(RecordReplayPlan("record", tmp_path / "r.jsonl")):
            second_in.set()
            first_out.wait(CLIENT_TIMEOUT)
            seen["mode"] = json.loads(os.environ[PLAN_VARIABLE])["mode"]

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CLIENT_TIMEOUT * 3)
    assert seen == {"mode": "record"}  # the block begun last still decides for children
    assert dict(os.environ) == before
    assert children_module._ACTIVE == []


def test_a_python_childs_unrecorded_connection_is_listed(
    hit_server: HitServer, tmp_path: Path
) -> None:
    with openprogram.record_replay(tmp_path / "r.jsonl", mode="record") as active:
        _run(python_argv(_socket_connect(hit_server.port)))
    assert hit_server.hits == 1
    assert any(f"127.0.0.1:{hit_server.port}" in line for line in active.children_not_recorded)
