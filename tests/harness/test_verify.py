"""``openprogram recordings verify``: re-run a recorded session under replay."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import Result

from openprogram.agent.file_tools import builtin_tools
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers.runtime import RuntimeState, provider_runtime_status
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.tool_sessions import record_agent_session

READ_README = '/tool read_file {"path": "README.md"}'


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "README.md").write_text("# Hello\nbody\n")
    monkeypatch.chdir(folder)
    return folder


def record_session(path: Path, prompt: str = READ_README, *, tools: list | None = None) -> None:
    """The session a user records: ``prompt`` with the built-in tools (unless given)."""
    tools = builtin_tools(Path.cwd()) if tools is None else tools
    record_agent_session(path, prompt, system_prompt="You read files.", tools=tools)


def verify(*args: str) -> Result:
    return run("verify", *args)


def test_an_unchanged_session_verifies_with_its_hash(workdir: Path) -> None:
    path = workdir / "s1.jsonl"
    record_session(path)
    result = verify(str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("✔ ")
    assert transcript_hash(read_recording(path)) in result.stdout
    data = json.loads(verify(str(path), "--json").stdout)
    assert data == {
        "path": str(path),
        "ok": True,
        "transcript_hash": transcript_hash(read_recording(path)),
        "calls": 2,
        "divergence": None,
    }


def test_a_changed_tool_result_is_the_first_divergence(workdir: Path) -> None:
    path = workdir / "s1.jsonl"
    record_session(path)
    (workdir / "README.md").write_text("# Changed\n")
    result = verify(str(path))
    assert result.exit_code == 1
    assert "replay mismatch at call 1, field context.messages[2].content[0].text:" in result.stdout
    assert "recorded '# Hello\\nbody\\n', incoming '# Changed\\n'" in result.stdout


def test_fewer_calls_than_recorded_is_a_divergence(workdir: Path) -> None:
    path = workdir / "two.jsonl"
    record_session(path)
    record_session(path)  # a second session appended to the same recording
    result = verify(str(path))
    assert result.exit_code == 1
    assert "calls 2..3" in result.stdout


def test_the_session_s_own_tools_come_from_tools(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workdir / "my_tools.py").write_text(
        "from openprogram.agent.tools import tool\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        '    """Say it louder."""\n'
        "    return text.upper()\n"
        "TOOLS = [shout]\n"
    )
    monkeypatch.syspath_prepend(str(workdir))
    from my_tools import TOOLS  # type: ignore[import-not-found]

    path = workdir / "own.jsonl"
    record_session(path, '/tool shout {"text": "hi"}', tools=TOOLS)
    assert verify(str(path), "--tools", "my_tools:TOOLS").exit_code == 0
    missing = verify(str(path))
    assert missing.exit_code == 2
    assert "shout" in missing.stderr
    assert "--tools" in missing.stderr
    bad = verify(str(path), "--tools", "no_such_module:X")
    assert bad.exit_code == 2


def test_verify_ignores_the_configured_mode_and_never_starts_the_runtime(workdir: Path) -> None:
    path = workdir / "s1.jsonl"
    record_session(path)
    home = Path(os.environ["OPENPROGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[record_replay]\nmode = "record"\nfile = "elsewhere"\n')
    from openprogram.providers.registry import reset_provider_runtime

    reset_provider_runtime()
    result = verify(str(path))
    assert result.exit_code == 0, result.output
    assert provider_runtime_status().state is RuntimeState.NEW
    assert not (home / "recordings" / "elsewhere.jsonl").exists()


def test_unusable_recordings_exit_2(workdir: Path) -> None:
    assert verify(str(workdir / "gone.jsonl")).exit_code == 2
    empty = workdir / "empty.jsonl"
    empty.write_text('{"type":"header","format_version":1}\n')
    result = verify(str(empty))
    assert result.exit_code == 2
    assert "holds no calls" in result.stderr
