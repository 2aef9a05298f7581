"""``openprogram recordings import CASSETTE... [--into DIR | --name NAME]``: vcrpy cassettes
made into recordings."""

from __future__ import annotations

from pathlib import Path

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
    is missing, or neither a file nor a folder).
    """
    from openprogram.config.paths import recordings_dir
    from openprogram.errors import CassetteError, RecordingFileError
    from openprogram.importing.vcr_cassettes import cassette_files, import_cassette, write_imported
    from openprogram.store.names import RECORDING_SUFFIX, resolve_recording

    if into is not None and name is not None:
        abort("--into and --name exclude each other: give one of them", EXIT_USAGE)
    if pytest_layout and name is not None:
        abort("--pytest-recording names each recording after its test: drop --name", EXIT_USAGE)
    if max_body_size < 1:
        abort("--max-body-size is 1 (MB) or more", EXIT_USAGE)
    if pytest_layout and into is None:
        into = Path("tests/recordings")
    try:
        found = cassette_files([path.expanduser() for path in cassettes])
    except CassetteError as error:
        abort(str(error), EXIT_USAGE)
    if not found:
        abort("no cassettes (.yaml, .yml or .json files) in the folders given", EXIT_USAGE)
    if name is not None and len(found) > 1:
        given = plural(len(found), "cassette")
        abort(f"--name names one recording, but {given} were given", EXIT_USAGE)
    from openprogram.cli.recordings.scan import configured_user_redaction

    user = configured_user_redaction(redactor)
    results = []
    failed = skipped = 0
    with reporting_errors(usage_errors=(RecordingNameError,)):
        store = recordings_dir()
        for cassette, relative in found:
            if pytest_layout:
                assert into is not None
                base = into.expanduser().absolute().parent
                fixture_path = fixture_recording(cassette.absolute(), relative, base)
                if fixture_path is None:
                    skipped += 1
                    reason = "not a test's cassette where pytest-recording keeps one"
                    results.append({"cassette": str(cassette), "skipped": reason})
                    if not as_json:
                        say(f"- {cassette}: {reason}")
                    continue
                destination = into.expanduser().absolute() / fixture_path
            elif into is not None:
                destination = into.expanduser().absolute() / relative.with_suffix(RECORDING_SUFFIX)
            else:
                stem = name if name is not None else _store_name(relative)
                destination = resolve_recording(stem, store).path
            try:
                if destination.exists() and not force:
                    raise CassetteError(
                        str(cassette),
                        f"{destination} exists: pass --force to replace it (nothing was written)",
                    )
                imported = import_cassette(cassette, user, max_body_size=max_body_size * MEBIBYTE)
                write_imported(imported, destination)
            except (CassetteError, RecordingFileError) as error:
                failed += 1
                complain(str(error))
                results.append({"cassette": str(cassette), "error": str(error)})
                continue
            results.append({**imported.to_json(), "recording": str(destination)})
            if not as_json:
                say(f"✔ {cassette} → {destination}: {imported.summary()}")
    if as_json:
        print_json({"imported": results, "failed": failed, "skipped": skipped})
    elif len(found) > 1:
        imported_count = len(found) - failed - skipped
        tail = f", {skipped} not a test's" if skipped else ""
        say(f"{plural(imported_count, 'cassette')} imported, {failed} failed{tail}")
    if failed:
        raise typer.Exit(EXIT_FAILURE)


def _store_name(relative: Path) -> str:
    """A store name for a cassette found at ``relative``: its path's parts joined by ``-``,
    without the suffix, made a safe name (as a test's recording is)."""
    from openprogram.store.names import safe_file_name

    return safe_file_name("-".join(relative.with_suffix("").parts))


def fixture_recording(cassette: Path, relative: Path, base: Path) -> Path | None:
    """Where the ``openprogram_recording`` fixture reads the recording of the test whose
    pytest-recording cassette is ``cassette`` (found at ``relative`` below the folder
    given), or None when it is not at ``<test folder>/cassettes/<module>/<test>.<ext>``:
    ``<module path>/<test>.jsonl`` in the recordings folder, the module path being the test
    file's path relative to ``base`` (the folder that holds the recordings folder, as the
    fixture counts it) with its folders joined by ``.``; the test's ``[parameters]`` written
    ``-parameters``; each part made a safe name."""
    from openprogram.store.names import RECORDING_SUFFIX, safe_file_name

    parts = relative.parts
    if len(parts) < 3 or parts[-3] != "cassettes":
        return None
    test_folder = cassette.parent.parent.parent
    try:
        folders = test_folder.relative_to(base).parts
    except ValueError:
        folders = parts[:-3]
    module = ".".join((*folders, parts[-2]))
    test = relative.stem
    if test.endswith("]") and "[" in test:
        function, _, parameters = test[:-1].partition("[")
        test = f"{function}-{parameters}"
    return Path(safe_file_name(module)) / f"{safe_file_name(test)}{RECORDING_SUFFIX}"


def register(app: typer.Typer) -> None:
    app.command("import")(import_cassettes)
