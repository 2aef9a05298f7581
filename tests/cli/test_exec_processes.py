"""``openprogram exec`` and the Python processes of a command: child processes inherit
the activation (recording from several appends to one recording; replaying is one
process's), the user's own ``sitecustomize`` still runs, and the working folder is never
added to the path."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.provider_boundary.codec import read_recording
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.http_agent import answering, write_agent
from tests.support.recording_rows import stored
from tests.support.sse_server import ScriptedServer

TWO_PROCESSES = """\
import subprocess
import sys

import httpx

base_url = sys.argv[1]


def ask(question):
    reply = httpx.post(base_url + "/ask", json={"question": question}, timeout=10)
    return reply.json()["answer"]


if sys.argv[2:] == ["child"]:
    print("child:", ask("from the child"))
else:
    print("parent:", ask("from the parent"))
    sys.stdout.flush()
    subprocess.run([sys.executable, __file__, base_url, "child"], check=True)
"""

FORKING = """\
import os
import sys

import httpx

base_url = sys.argv[1]


def ask(question):
    return httpx.post(base_url + "/ask", json={"question": question}, timeout=10).json()


print("parent:", ask("one")["answer"])
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    try:
        ask("two")
    except BaseException as error:
        print("child refused:", type(error).__name__, error.error.pid != os.getppid())
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = user_environment(tmp_path / "openprogram-home")
    environ.pop("PYTHONPATH", None)
    return environ


def test_child_processes_record_into_one_recording_and_a_second_one_cannot_replay_it(
    server: ScriptedServer, tmp_path: Path, env: dict[str, str]
) -> None:
    server.serve(answering("to the parent"), answering("to the child"))
    program = write_agent(tmp_path, TWO_PROCESSES)
    command = ("--", sys.executable, str(program), server.base_url)
    recorded = openprogram_process("exec", "--record", "two", *command, env=env)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "parent: to the parent\nchild: to the child\n"
    assert "recorded 2 calls into" in recorded.stderr
    calls = read_recording(stored("two")).calls
    assert [call.request["body"]["question"] for call in calls] == [
        "from the parent",
        "from the child",
    ]
    replayed = openprogram_process("exec", "--replay", "two", *command, env=env)
    assert replayed.stdout.startswith("parent: to the parent\n")
    assert replayed.returncode == 1
    assert "openprogram: replay mismatch at call 0, field process:" in replayed.stderr
    assert "one recording is replayed by one process" in replayed.stderr
    assert len(server.received) == 2  # while recording only


def test_a_child_forked_after_the_claim_is_refused_too(
    server: ScriptedServer, tmp_path: Path, env: dict[str, str]
) -> None:
    server.serve(answering("first"), answering("second"))
    program = write_agent(tmp_path, FORKING)
    command = ("--", sys.executable, str(program), server.base_url)
    recorded = openprogram_process("exec", "--record", "forked", *command, env=env)
    assert recorded.returncode == 0, recorded.stderr
    assert len(read_recording(stored("forked")).calls) == 2  # the forked child recorded too
    replayed = openprogram_process("exec", "--replay", "forked", *command, env=env)
    assert "child refused: RecordReplayEscape True" in replayed.stdout
    assert replayed.returncode == 1
    assert "field process:" in replayed.stderr


SHOW_PATH = """\
import json
import os
import sys

import sitecustomize

print(json.dumps({
    "path": sys.path,
    "cwd": os.getcwd(),
    "user_sitecustomize": getattr(sitecustomize, "MARK", None),
    "ran": os.environ.get("USER_SITECUSTOMIZE_RAN"),
}))
"""


@pytest.mark.parametrize("user_pythonpath", [None, "", "user-site"])
def test_the_users_sitecustomize_runs_and_the_working_folder_is_not_added(
    tmp_path: Path, env: dict[str, str], user_pythonpath: str | None
) -> None:
    user_site = tmp_path / "user-site"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text(
        "import os\nMARK = 'the user\\'s own'\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n"
    )
    if user_pythonpath is not None:
        env["PYTHONPATH"] = str(user_site) if user_pythonpath else ""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    program = write_agent(scripts, SHOW_PATH)
    result = openprogram_process(
        "exec", "--record", "paths", "--", sys.executable, str(program), env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["cwd"] not in seen["path"]
    assert "" not in seen["path"]
    assert not any("openprogram-exec-" in entry for entry in seen["path"])
    if user_pythonpath:
        assert (seen["user_sitecustomize"], seen["ran"]) == ("the user's own", "1")
    else:
        assert seen["ran"] is None
