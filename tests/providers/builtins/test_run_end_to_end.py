"""End to end: record a vendor session with the server up, replay it with the server stopped,
as separate processes — the way a user would run it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.child_processes import openprogram_process, user_environment
from tests.support.sse_server import Script, ScriptedServer, cut
from tests.support.vendor_wire import ToolUse
from tests.support.vendors import VENDORS, Vendor, vendor_id


def cli(
    folder: Path, env: dict[str, str], *args: str, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    return openprogram_process(*args, env=env, cwd=folder, offline=offline)


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
def test_record_with_the_server_up_replay_with_it_stopped(tmp_path: Path, vendor: Vendor) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "README.md").write_text("# Demo project\n")
    home = tmp_path / "openprogram-home"
    env = user_environment(home)
    server = ScriptedServer()
    base_url = vendor.base_url(server.base_url)
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(f'[providers.{vendor.api}]\nbase_url = "{base_url}"\n')
    server.serve(
        Script(
            pieces=cut(
                vendor.wire.reply(ToolUse("call_1", "read_file", ('{"path": ', '"README.md"}')))
            )
        ),
        Script(pieces=cut(vendor.wire.text_reply("The README says: ", "# Demo project"), every=7)),
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
