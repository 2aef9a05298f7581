"""``openprogram recordings import CASSETTE... [--into DIR | --name NAME]``: vcrpy cassettes
made into recordings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from openprogram.body_limit import MAX_BODY_SIZE_MB, MEBIBYTE
from openprogram.cli.output import (
    EXIT_FAILURE,
    EXIT_USAGE,
    abort,
    complain,
    plural,
    print_json,
    reporting_errors,
    say,
)
from openprogram.cli.recordings.scan import REDACTOR
from openprogram.errors import RecordingNameError

if TYPE_CHECKING:
    from openprogram.importing.vcr_cassettes import CassetteOutcome

CASSETTES = typer.Argument(
    ..., metavar="CASSETTE", help="vcrpy cassettes (.yaml, .yml, .json), or folders of them."
)
INTO = typer.Option(
    None,
    "--into",
    metavar="DIR",
    help="Write each recording under DIR, at the cassette's path below the folder given "
    "(its suffix .jsonl), instead of into the store.",
)
NAME = typer.Option(
    None, "--name", metavar="NAME", help="The store name of the recording (one cassette)."
)
PYTEST_LAYOUT = typer.Option(
    False,
    "--pytest-recording",
    help="The folders given are test folders whose cassettes pytest-recording keeps "
    "(<folder>/cassettes/<module>/<test>.yaml): write each where the openprogram_recording "
    "fixture reads that test's recording (DIR/<module>/<test>.jsonl; DIR: tests/recordings).",
)

MAX_BODY_SIZE = typer.Option(
    MAX_BODY_SIZE_MB,
    "--max-body-size",
    metavar="MB",
    help="The largest body imported, decoded (gzip, deflate, br): the default is the recording "
    "proxy's. A cassette file, its YAML aliases written out, and its bodies together may "
    "be 4 times that.",
)


def import_cassettes(
    cassettes: list[Path] = CASSETTES,
    into: Path | None = INTO,
    name: str | None = NAME,
    pytest_layout: bool = PYTEST_LAYOUT,
    redactor: str | None = REDACTOR,
    max_body_size: int = MAX_BODY_SIZE,
    force: bool = typer.Option(False, "--force", help="Replace recordings that exist."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Import vcrpy cassettes (vcrpy 4 to 9, YAML or JSON) as recordings.

    Each interaction becomes an HTTP call as openprogram records one: the request's
    method, URL and the headers that change its meaning, its body parsed when JSON; the
    response's status, headers and body — a text/event-stream body split into its events,
    so an SDK replays it as it read it live. Credentials are removed (cassettes often hold
    authorization headers and keys in URLs) and counted, never printed. YAML is read with a
    loader that builds only the tags vcrpy writes: a cassette holding any other is refused
    with its line. Reading is bounded: only regular files, no body larger than
    --max-body-size decoded, nesting 128 levels at most. By default each cassette goes into
    the store under its file name; --into DIR writes DIR/<path below the folder given>.jsonl
    (a pytest-recording cassettes folder into tests/recordings, say). Exits 1 when a
    cassette could not be imported (the others are), 2 for bad arguments (a path given that
    is missing, or neither a file nor a folder)."""
    from openprogram.cli.recordings.scan import configured_user_redaction
    from openprogram.importing import vcr_cassettes

    found = _cassettes_given(
        cassettes, into=into, name=name, pytest_layout=pytest_layout, max_body_size=max_body_size
    )
    if pytest_layout and into is None:
        into = Path("tests/recordings")
    user = configured_user_redaction(redactor)
    with reporting_errors(usage_errors=(RecordingNameError,)):
        outcomes = [
            _shown(outcome, as_json=as_json)
            for outcome in vcr_cassettes.import_cassettes(
                found,
                user,
                into=into,
                name=name,
                pytest_layout=pytest_layout,
                max_body_size=max_body_size * MEBIBYTE,
                force=force,
            )
        ]
    failed = sum(outcome.error is not None for outcome in outcomes)
    skipped = sum(outcome.skipped is not None for outcome in outcomes)
    if as_json:
        results = [outcome.to_json() for outcome in outcomes]
        print_json({"imported": results, "failed": failed, "skipped": skipped})
    elif len(found) > 1:
        imported_count = len(found) - failed - skipped
        tail = f", {skipped} not a test's" if skipped else ""
        say(f"{plural(imported_count, 'cassette')} imported, {failed} failed{tail}")
    if failed:
        raise typer.Exit(EXIT_FAILURE)


def _cassettes_given(
    cassettes: list[Path],
    *,
    into: Path | None,
    name: str | None,
    pytest_layout: bool,
    max_body_size: int,
) -> list[tuple[Path, Path]]:
    """The cassettes the arguments name, each with its path below the folder given; exit 2
    for options that exclude each other or are out of range, and for paths that name no
    cassette."""
    from openprogram.errors import CassetteError
    from openprogram.importing.vcr_cassettes import cassette_files

    if into is not None and name is not None:
        abort("--into and --name exclude each other: give one of them", EXIT_USAGE)
    if pytest_layout and name is not None:
        abort("--pytest-recording names each recording after its test: drop --name", EXIT_USAGE)
    if max_body_size < 1:
        abort("--max-body-size is 1 (MB) or more", EXIT_USAGE)
    try:
        found = cassette_files([path.expanduser() for path in cassettes])
    except CassetteError as error:
        abort(str(error), EXIT_USAGE)
    if not found:
        abort("no cassettes (.yaml, .yml or .json files) in the folders given", EXIT_USAGE)
    if name is not None and len(found) > 1:
        given = plural(len(found), "cassette")
        abort(f"--name names one recording, but {given} were given", EXIT_USAGE)
    return found


def _shown(outcome: CassetteOutcome, *, as_json: bool) -> CassetteOutcome:
    """``outcome`` told as it happens: an error on stderr, else (without ``--json``) a line."""
    if outcome.error is not None:
        complain(outcome.error)
    elif as_json:
        pass
    elif outcome.imported is None:
        say(f"- {outcome.cassette}: {outcome.skipped}")
    else:
        say(f"✔ {outcome.cassette} → {outcome.destination}: {outcome.imported.summary()}")
    return outcome


def register(app: typer.Typer) -> None:
    app.command("import")(import_cassettes)
