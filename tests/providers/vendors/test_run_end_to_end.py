"""Issue 4, end to end: record a real-provider session with the server up, replay it with the
server stopped, as separate processes — the way a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sse_server import Script, ScriptedServer, cut
from vendor_streams import VENDORS, Vendor

SOCKETS_DISABLED = (
    "import socket\n"
    "def refuse(*args, **kwargs):\n"
    "    raise OSError('sockets are disabled')\n"
    "socket.socket.connect = refuse\n"
    "socket.create_connection = refuse\n"
)
RUN_CLI = (
    "import sys\n"
    "from openprogram.cli import main\n"
    "sys.argv = ['openprogram', *sys.argv[1:]]\n"
    "main()\n"
)


def cli(
    folder: Path, env: dict[str, str], *args: str, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    code = (SOCKETS_DISABLED if offline else "") + RUN_CLI
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("vendor", VENDORS, ids=[vendor.api for vendor in VENDORS])
def test_record_with_the_server_up_replay_with_it_stopped(tmp_path: Path, vendor: Vendor) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "README.md").write_text("# Demo project\n")
    home = tmp_path / "openprogram-home"
    env = {**os.environ, "OPENPROGRAM_HOME": str(home), "NO_COLOR": "1"}
    server = ScriptedServer()
    base_url = f"{server.base_url}/v1" if vendor.api == "openai-completions" else server.base_url
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(f'[providers.{vendor.api}]\nbase_url = "{base_url}"\n')
    server.serve(
        Script(pieces=cut(vendor.tool_reply("call_1", "read_file", '{"path": "README.md"}'))),
        Script(pieces=cut(vendor.text_reply("The README says: ", "# Demo project"), every=7)),
    )
    model = f"--model={vendor.api}:test-model"
    try:
        assert cli(folder, env, "recordings", "record", "s1").returncode == 0
        live = cli(folder, env, "run", model, "read the readme")
        assert live.returncode == 0, live.stderr
        assert "The README says: # Demo project" in live.stdout
        assert len(server.received) == 2
    finally:
        server.stop()

    assert cli(folder, env, "recordings", "replay", "s1").returncode == 0
    replayed = cli(folder, env, "run", model, "read the readme", offline=True)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == live.stdout
    assert replayed.stderr == live.stderr

    changed = cli(folder, env, "run", model, "read the other file", offline=True)
    assert changed.returncode == 1
    assert "replay mismatch at call 0, field context.messages[0].content:" in changed.stderr

    verified = cli(folder, env, "recordings", "verify", "s1", offline=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
