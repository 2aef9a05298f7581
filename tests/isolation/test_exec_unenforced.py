"""``openprogram exec`` where no network namespace can be made (macOS, a container that
forbids them, Ubuntu's AppArmor restriction): a replay says in one line at start that it is
enforced for Python only and runs as it would without; an explicit ``--isolate`` is refused
before anything runs; ``--no-isolate`` silences the line. The machine's own answer is
replaced by one that says no (``openprogram.isolation.unavailable_reason``), in this
process: exec itself runs here, its command in a process of its own. And ``--isolate`` with
record/replay off, which has nothing to hold, is refused too."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openprogram import isolation
from tests.support.cli_runner import error_line, next_start, openprogram
from tests.support.exec_replays import ONE_CALL

REASON = "unprivileged user namespaces are restricted (apparmor_restrict_unprivileged_userns)"
LINE = (
    f"openprogram: replay is enforced for Python only here: {REASON} (--no-isolate silences this)"
)


@pytest.fixture
def unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "unavailable_reason", lambda: REASON)


@pytest.fixture
def recorded() -> str:
    """``quiet``: one call to the echo model (no network), recorded by exec."""
    done = openprogram("exec", "--record", "quiet", "--", sys.executable, "-c", ONE_CALL)
    assert done.exit_code == 0, done.stderr
    next_start()
    return "quiet"


def test_a_replay_says_it_is_enforced_for_python_only_and_runs(
    recorded: str, unavailable: None, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    program = ONE_CALL + f"open({str(marker)!r}, 'w').close()\n"
    result = openprogram("exec", "--replay", recorded, "--", sys.executable, "-c", program)
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert " ".join(lines[:-1]) == LINE  # one line, however the terminal wraps it
    assert lines[-1].startswith("openprogram: 1 call replayed from ")
    assert marker.exists()


def test_no_isolate_silences_the_line(recorded: str, unavailable: None) -> None:
    result = openprogram(
        "exec", "--replay", recorded, "--no-isolate", "--", sys.executable, "-c", ONE_CALL
    )
    assert result.exit_code == 0, result.stderr
    assert "enforced" not in result.stderr


def test_record_needs_no_namespace_and_says_nothing(unavailable: None) -> None:
    result = openprogram("exec", "--record", "live", "--", sys.executable, "-c", ONE_CALL)
    assert result.exit_code == 0, result.stderr
    assert "enforced" not in result.stderr


@pytest.mark.parametrize("mode", ["--record", "--replay"])
def test_an_explicit_isolate_is_refused_before_anything_runs(
    recorded: str, unavailable: None, tmp_path: Path, mode: str
) -> None:
    marker = tmp_path / "ran"
    name = "new" if mode == "--record" else recorded
    result = openprogram("exec", mode, name, "--isolate", "--", "touch", str(marker))
    assert result.exit_code == 2
    assert error_line(result) == (
        f"error: --isolate cannot make a network namespace here ({REASON}); nothing was run, "
        "and exec does not run the command unisolated instead: run without --isolate"
    )
    assert not marker.exists()


def test_isolate_with_record_replay_off_is_refused_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = openprogram("exec", "--isolate", "--", "touch", str(marker))
    assert result.exit_code == 2
    assert error_line(result) == (
        "error: --isolate holds a recording or a replay, and record/replay is off here (no "
        "--record or --replay, and the configured mode is off): add --replay NAME or --record "
        "NAME (nothing was run)"
    )
    assert not marker.exists()
