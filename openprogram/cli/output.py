"""Where command output and errors leave the CLI.

Every command runs its library call inside :func:`reporting_errors`: an
:class:`~openprogram.errors.OpenProgramError` becomes one line on stderr and exit 1 — or
exit 2 for bad arguments and file arguments that are missing, unreadable or unparseable.
An error that carries a difference (``ReplayMismatch.difference``) is shown as its report,
the one error of more than one line. A traceback is shown only with ``OPENPROGRAM_DEBUG=1``.

Destructive commands ask on a terminal, and need ``--yes`` anywhere else."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import typer

from openprogram.errors import OpenProgramError
from openprogram.visible_text import visible as visible
from openprogram.wording import plural as plural

if TYPE_CHECKING:
    from rich.console import Console


EXIT_FAILURE = 1

EXIT_USAGE = 2


def debug_enabled() -> bool:
    return os.environ.get("OPENPROGRAM_DEBUG", "") not in ("", "0")


def stdout() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    """Machine output: plain JSON on stdout, no colour, no wrapping."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def print_lines(lines: list[str]) -> None:
    """Lines already laid out to the terminal's width and made :func:`visible` (a table),
    written to stdout at once: no markup, no wrapping (a thousand ``Console.print`` calls
    cost more than building the table)."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))


def _labelled(label: str, style: str, message: str) -> None:
    _write_line(((label, style), " ", message), err=True)


def say(*parts: str | tuple[str, str]) -> None:
    """One line on stdout, taken literally (paths and ids may hold brackets), with control
    characters made :func:`visible`; a part given with a style (``("mode:", "bold")``) is
    shown in it on a terminal."""
    _write_line(parts)


def _write_line(parts: tuple[str | tuple[str, str], ...], *, err: bool = False) -> None:
    # Text, not markup: messages hold brackets ("[secret removed]", "messages[2]").
    stream = sys.stderr if err else sys.stdout
    if _unstyled(stream):
        text = "".join(visible(part if isinstance(part, str) else part[0]) for part in parts)
        stream.write(text.expandtabs() + "\n")
        return
    from rich.text import Text

    console = stderr() if err else stdout()
    console.print(
        Text.assemble(
            *(
                visible(part) if isinstance(part, str) else (visible(part[0]), part[1])
                for part in parts
            )
        )
    )


def _unstyled(stream: TextIO) -> bool:
    """Whether the console would write no style to ``stream``, so that a line is written as
    it is without loading the console (as a script's or a CI job's pipe receives it): not a
    terminal, and neither ``TTY_COMPATIBLE`` nor ``FORCE_COLOR`` asks for styles (the
    console's own rules, which also expand tabs)."""
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return True


def complain(message: str) -> None:
    """One error line on stderr, for a command that goes on (it decides its exit code)."""
    _labelled("error:", "red", message)


def warn(message: str) -> None:
    """One warning line on stderr."""
    _labelled("warning:", "yellow", message)


def note(message: str) -> None:
    """One note line on stderr: something the user may not expect, not a problem."""
    _labelled("note:", "cyan", message)


def abort(
    problem: str | BaseException,
    code: int = EXIT_FAILURE,
    *,
    redact: Callable[[str], str] | None = None,
) -> NoReturn:
    """Print ``problem`` as the error and exit with ``code``: one line, or — for an error
    that carries a difference (a replay mismatch) — that difference's report. ``redact``
    is applied to the text first."""
    if debug_enabled() and sys.exc_info()[0] is not None:
        traceback.print_exc()
    text = error_text(problem)
    _labelled("error:", "red", text if redact is None else redact(text))
    raise typer.Exit(code)


def error_text(problem: str | BaseException) -> str:
    """What the error line says: the report of an error carrying a difference (its ``difference``,
    written by the one report formatter, with its line breaks), else the message on one line."""
    from openprogram.recording import report

    difference = getattr(problem, "difference", None)
    if isinstance(difference, report.FirstDifference):
        return report.format_report(difference)
    return " ".join(str(problem).split())


@contextmanager
def reporting_errors(
    *, usage_errors: tuple[type[BaseException], ...] = (), session: bool = False
) -> Iterator[None]:
    """Turn openprogram errors into one line and an exit code.

    ``usage_errors`` exit 2 (bad arguments, a file argument missing or unparseable); any
    other :class:`OpenProgramError` exits 1; an ``OSError`` is a file argument that cannot
    be read (exit 2).

    With ``session`` the block runs an agent session, so providers run inside it: every
    message is redacted first (a provider's exception may quote a URL with a password), an
    ``OSError`` is a provider failing, not a bad file argument, and any other exception a
    provider raises is one line and exit 1 as well."""

    redact = redacted if session else None
    try:
        yield
    except typer.Exit:
        raise
    except usage_errors as error:
        abort(error, EXIT_USAGE, redact=redact)
    except OpenProgramError as error:
        abort(error, EXIT_FAILURE, redact=redact)
    except OSError as error:
        if session:
            abort(redacted(f"{type(error).__name__}: {error}"))
        abort(f"{error.strerror or error}: {error.filename or ''}".rstrip(": "), EXIT_USAGE)
    except Exception as error:
        if not session:
            raise
        abort(redacted(f"{type(error).__name__}: {error}"))


def redacted(message: str) -> str:
    """``message`` with every credential removed (a URL's password, a known key, ...)."""
    from openprogram.recording.redaction import SecretRedactor

    return SecretRedactor().redact_text(message)


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def confirm_or_abort(question: str, *, yes: bool) -> None:
    """Destructive commands ask on a terminal, and need ``--yes`` anywhere else."""
    if yes:
        return
    if not stdin_is_terminal():
        abort(f"{question.rstrip('?')}: not a terminal, so pass --yes to confirm", EXIT_USAGE)
    if not typer.confirm(question, default=False):
        abort("nothing was deleted", EXIT_FAILURE)
