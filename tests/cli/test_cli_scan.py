"""``openprogram recordings scan``: one line per secret, exit 0 clean / 1 found / 2
unreadable, ``--json``, ``--fix`` (then clean), ``--redactor``, the configured patterns, what
no PATH means; and the pre-commit hook that runs it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

from openprogram.providers import RecordingProvider
from openprogram.recording.writer import close_recording_writers
from tests.support.cli_runner import error_line, run
from tests.support.config_files import write_config
from tests.support.secret_samples import GITHUB_TOKEN
from tests.support.split_stream import SplitStreamProvider, run_session

ROOT = Path(__file__).resolve().parents[2]


def record(path: Path, *text_pieces: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    provider = RecordingProvider(SplitStreamProvider(text_pieces, ['{"cmd": "ls"}']), path)
    asyncio.run(run_session(provider))
    close_recording_writers()
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_clean_recording_exits_0(project: Path) -> None:
    path = record(project / "clean.jsonl", "all ", "clear")
    result = run("scan", str(path))
    assert (result.exit_code, result.stdout) == (0, "✔ no secrets in 1 recording\n")


def test_each_secret_is_one_line_and_the_exit_is_1(project: Path) -> None:
    path = record(project / "split.jsonl", "key ", GITHUB_TOKEN[:9], GITHUB_TOKEN[9:])
    result = run("scan", str(path))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}:6: call 0, field event[3..4].delta: github-token",
        "✘ 1 secret in 1 recording: `--fix` replaces them",
    ]
    assert GITHUB_TOKEN[:9] not in result.stdout + result.stderr


def test_json_lists_the_findings(project: Path) -> None:
    path = record(project / "split.jsonl", "key ", GITHUB_TOKEN[:9], GITHUB_TOKEN[9:])
    result = run("scan", "--json", str(path))
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "scanned": [str(path)],
        "findings": [
            {
                "file": str(path),
                "line": 6,
                "call": 0,
                "tape": None,
                "field": "event[3..4].delta",
                "kind": "github-token",
            }
        ],
        "fixed": False,
        "unreadable": 0,
    }


def test_fix_replaces_them_exits_1_and_the_next_scan_is_clean(project: Path) -> None:
    path = record(project / "split.jsonl", "key ", GITHUB_TOKEN[:9], GITHUB_TOKEN[9:])
    fixed = run("scan", "--fix", str(path))
    assert fixed.exit_code == 1
    assert fixed.stdout.splitlines()[-1] == (
        "✔ replaced 1 secret in 1 recording: add the fixed files"
    )
    assert GITHUB_TOKEN[:9] not in path.read_text()
    assert run("scan", str(path)).exit_code == 0


def test_an_unreadable_recording_exits_2_naming_it_after_scanning_the_others(
    project: Path,
) -> None:
    good = record(project / "good.jsonl", "key ", GITHUB_TOKEN[:9], GITHUB_TOKEN[9:])
    broken = project / "broken.jsonl"
    broken.write_text('{"type":"header","format_version":1}\n{oops\n')
    result = run("scan", str(broken), str(good))
    assert result.exit_code == 2
    assert error_line(result).startswith(f"error: {broken}, line 2: ")
    assert f"{good}:6: call 0, field event[3..4].delta: github-token" in result.stdout
    missing = run("scan", str(project / "none.jsonl"))
    assert missing.exit_code == 2
    assert error_line(missing).startswith(f"error: {project / 'none.jsonl'}: cannot read it")


def test_no_path_scans_tests_recordings_of_the_current_folder(project: Path) -> None:
    record(project / "tests" / "recordings" / "mod" / "t.jsonl", "all ", "clear")
    record(project / "elsewhere.jsonl", "key ", GITHUB_TOKEN[:9], GITHUB_TOKEN[9:])
    result = run("scan")
    assert (result.exit_code, result.stdout) == (0, "✔ no secrets in 1 recording\n")


def test_the_configured_patterns_apply_and_a_bad_one_exits_2(project: Path) -> None:
    path = record(project / "r.jsonl", "order AC", "ME-123456")
    assert run("scan", str(path)).exit_code == 0
    write_config("[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    found = run("scan", str(path))
    assert found.exit_code == 1
    assert f"{path}:5: call 0, field event[2..3].delta: user-pattern" in found.stdout
    write_config("[record_replay]\nredact_patterns = ['ACME-(']\n")
    broken = run("scan", str(path))
    assert broken.exit_code == 2
    assert "'ACME-(' is not a regular expression" in error_line(broken)


def test_a_redactor_function_is_loaded_from_module_attr(project: Path) -> None:
    (project / "house_rules.py").write_text(
        "def redact(text):\n    return text.replace('tenant-77', '[secret removed]')\n"
    )
    path = record(project / "r.jsonl", "for tenant", "-77 only")
    result = run("scan", "--redactor", "house_rules:redact", str(path))
    assert result.exit_code == 1
    assert f"{path}:5: call 0, field event[2..3].delta: user-redactor" in result.stdout
    for spec, problem in [
        ("house_rules", "a redactor is named module:attr"),
        ("house_rules:nothing", "cannot load the redactor house_rules:nothing"),
    ]:
        bad = run("scan", "--redactor", spec, str(path))
        assert bad.exit_code == 2
        assert problem in error_line(bad)


# --- pre-commit ---------------------------------------------------------------------------


def hooks() -> list[dict[str, object]]:
    """``.pre-commit-hooks.yaml``: YAML written in its JSON form (which every YAML reader
    reads), after its comment lines."""
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    loaded: list[dict[str, object]] = json.loads(body)
    return loaded


def test_the_pre_commit_hooks_run_scan_through_the_console_script() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    found = {str(hook["id"]): hook for hook in hooks()}
    assert set(found) == {"openprogram-scan", "openprogram-scan-fix"}
    for hook in found.values():
        assert {"id", "name", "entry", "language", "files"} <= set(hook)
        assert hook["language"] == "python"
        program, *arguments = str(hook["entry"]).split()
        assert program in scripts
        assert arguments[:2] == ["recordings", "scan"]
    assert str(found["openprogram-scan-fix"]["entry"]).endswith(" --fix")


def test_the_hook_entry_runs_as_pre_commit_runs_it(project: Path) -> None:
    """pre-commit runs the entry with the staged files as arguments: the installed console
    script, in a process of its own."""
    clean = record(project / "clean.jsonl", "all ", "clear")
    dirty = record(project / "dirty.jsonl", "key ", GITHUB_TOKEN[:9], GITHUB_TOKEN[9:])
    script = Path(sys.executable).with_name("openprogram")
    entry = str(hooks()[0]["entry"]).split()
    environment = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(script), *entry[1:], str(clean), str(dirty)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"{dirty}:6: call 0, field event[3..4].delta: github-token" in done.stdout
    assert orjson.loads(dirty.read_bytes().splitlines()[0])["type"] == "header"


def test_a_configured_providers_key_is_found_whatever_its_variables_name(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "gpubox-5f3a9c1e7b2d4086"  # no credential's shape: known only as the key
    path = record(project / "split.jsonl", "the key is ", key[:9], key[9:])
    monkeypatch.setenv("GPU_BOX_KEY", key)
    assert run("scan", str(path)).exit_code == 0  # an unknown variable's value is no secret

    write_config('[providers.openai-completions]\napi_key_env = "GPU_BOX_KEY"\n')
    result = run("scan", str(path))

    assert result.exit_code == 1, result.output
    assert "field event[3..4].delta" in result.stdout
    assert key[:9] not in result.stdout + result.stderr


def test_a_transport_errors_reason_is_scanned_and_fixed_in_place(project: Path) -> None:
    path = project / "refused.jsonl"
    request = {"type": "request", "call_index": 0, "boundary": "http", "method": "POST"}
    request |= {"url": "http://127.0.0.1:9/v1/messages", "headers": {}}
    reason = f"[Errno 111] proxy said token={GITHUB_TOKEN}"
    end = {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "error"}
    end["error"] = {"type": "httpx2.ConnectError", "message": "refused", "reason": reason}
    header = {"type": "header", "format_version": 1, "features": ["http"]}
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in (header, request, end)))
    result = run("scan", str(path))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"{path}:3: call 0, field error.reason: github-token"
    assert run("scan", "--fix", str(path)).exit_code == 1
    fixed = orjson.loads(path.read_bytes().splitlines()[-1])["error"]
    assert fixed["message"] == "refused"
    assert fixed["reason"] == "[Errno 111] proxy said token=[secret removed]"
    assert run("scan", str(path)).exit_code == 0
