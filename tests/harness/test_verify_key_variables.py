"""A key read from a variable named only by ``api_key_env`` (``GPU_BOX_KEY``) is known to the
redactor wherever the configuration is loaded for a run: the provider runtime's start, and
``recordings verify``, which never makes the vendor providers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprogram.agent.file_tools import builtin_tools
from openprogram.providers import initialize_provider_runtime
from openprogram.recording import redaction
from tests.support.cli_runner import run
from tests.support.tool_sessions import record_agent_session

KEY = "gpu-box-key-0123456789abcdef"
CONFIG = '[providers.gpu-box]\napi_key_env = "GPU_BOX_KEY"\n'


@pytest.fixture
def configured_key(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``GPU_BOX_KEY`` holds a key, the configuration names it, and no variable is
    remembered yet (a fresh process)."""
    monkeypatch.setattr(redaction, "_remembered_variables", set())
    monkeypatch.setenv("GPU_BOX_KEY", KEY)
    home = Path(os.environ["OPENPROGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CONFIG)
    return home


def test_the_runtime_start_remembers_every_configured_key_variable(configured_key: Path) -> None:
    assert KEY not in redaction.known_secret_values()
    initialize_provider_runtime()
    assert KEY in redaction.known_secret_values()


def test_the_runtime_start_remembers_the_builtin_default_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remembered: set[str] = set()
    monkeypatch.setattr(redaction, "_remembered_variables", remembered)
    initialize_provider_runtime()
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} <= remembered


def test_verify_redacts_a_key_from_a_configured_variable_as_the_recording_did(
    configured_key: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "key.txt").write_text(KEY)
    monkeypatch.chdir(work)
    path = work / "session.jsonl"

    redaction.remember_secret_variable("GPU_BOX_KEY")  # the recording process knew it
    record_agent_session(path, '/tool read_file {"path": "key.txt"}', tools=builtin_tools(work))
    assert KEY not in path.read_text()
    monkeypatch.setattr(redaction, "_remembered_variables", set())  # verify: a new process

    result = run("verify", str(path))

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("✔ ")
    assert KEY not in result.output
