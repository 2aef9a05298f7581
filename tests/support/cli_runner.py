"""``openprogram`` run in this process, as the CLI tests run it.

:func:`openprogram` invokes the typer app with :class:`typer.testing.CliRunner`, which keeps
stdout and stderr apart; :func:`next_start` does what a new process would do before its first
provider call.
"""

from __future__ import annotations

from typer.testing import CliRunner, Result

from openprogram.cli.app import app
from openprogram.providers.registry import reset_provider_runtime
from openprogram.recording.writer import close_recording_writers


def openprogram(*argv: str, input: str | None = None) -> Result:
    """``openprogram ARGV``, in this process."""
    return CliRunner().invoke(app, list(argv), input=input)


def run(*args: str, input: str | None = None) -> Result:
    """``openprogram recordings ARGS``, in this process."""
    return openprogram("recordings", *args, input=input)


def error_lines(result: Result) -> list[str]:
    """The ``error:`` lines on stderr."""
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def error_line(result: Result) -> str:
    """The one ``error:`` line of a failed command; stderr holds nothing else but warnings."""
    lines = result.stderr.splitlines()
    errors = error_lines(result)
    others = [line for line in lines if not line.startswith(("error: ", "warning: "))]
    assert len(errors) == 1, f"expected one error line, got:\n{result.stderr}"
    assert not others, f"stderr holds more than one-line messages:\n{result.stderr}"
    return errors[0]


def next_start() -> None:
    """What a new process would do: close the recording and read the configuration afresh."""
    close_recording_writers()
    reset_provider_runtime()
