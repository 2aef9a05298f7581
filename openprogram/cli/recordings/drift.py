"""``openprogram recordings drift NAME|PATH...``: re-send recorded calls live and say how the
provider's answers drifted, field by field."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from openprogram.cli.output import (
    EXIT_FAILURE,
    EXIT_USAGE,
    abort,
    plural,
    print_json,
    reporting_errors,
    say,
)
from openprogram.errors import RecordingFileError, RecordingNameError

if TYPE_CHECKING:
    from openprogram.drift.check import DriftReport
    from openprogram.drift.origins import BaseUrls
    from openprogram.drift.response_shapes import DriftClass

FAIL_ON = ("breaking", "additive", "content")

RECORDINGS = typer.Argument(
    ..., metavar="NAME|PATH", help="Recording names in the store, or paths."
)
HEADER = typer.Option(
    None,
    "--header",
    metavar="'NAME: VALUE'",
    help="A header to send with every request (a credential the environment lacks); like "
    "a key, it goes only to a trusted origin (see --base-url).",
)
BASE_URL = typer.Option(
    None,
    "--base-url",
    metavar="VENDOR|HOST=ORIGIN",
    help="Trust ORIGIN (scheme://host[:port]) with credentials. VENDOR=ORIGIN (openai, "
    "anthropic, google, aws): ORIGIN is the vendor's API; its calls recorded there or to its "
    "official API go to ORIGIN. HOST=ORIGIN: the calls recorded to HOST (or host:port) go to "
    "ORIGIN, each with its vendor's key. Repeatable.",
)
CALL = typer.Option(None, "--call", metavar="N", help="Check only call N (repeatable).")
SAVE = typer.Option(
    None, "--save", metavar="FILE", help="Write the live answers to FILE (one recording)."
)


def drift(
    recordings: list[str] = RECORDINGS,
    header: list[str] | None = HEADER,
    base_url: list[str] | None = BASE_URL,
    fail_on: str = typer.Option(
        "breaking",
        "--fail-on",
        metavar="CLASS",
        help="Exit 1 on drift of this class or worse: breaking, additive or content.",
    ),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Calls sent at once."),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Seconds per call."),
    max_calls: int | None = typer.Option(
        None, "--max-calls", min=0, help="Send at most N calls in all (the rest are skipped)."
    ),
    call: list[int] | None = CALL,
    save: Path | None = SAVE,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Re-send each recorded request live and report how the provider's answers drifted.

    Each call's recorded request is sent as recorded, with the credentials of its vendor
    from the environment its SDK reads (OPENAI_API_KEY, ANTHROPIC_API_KEY,
    GOOGLE_API_KEY / GEMINI_API_KEY, AWS credentials, or --header), and its live answer is
    compared with the recorded one by shape, per JSON path and per stream event type.
    Keys go only to a vendor's official API (api.openai.com, api.anthropic.com,
    generativelanguage.googleapis.com, bedrock-runtime.REGION.amazonaws.com, over https),
    an origin --base-url names, or a configured providers.<api>.base_url: a call recorded
    to any other origin, loopback included, is skipped and nothing is sent to it. Drift is
    breaking (a status, a field gone, a type or a kind outside the recorded ones, an event
    type no longer sent, tool-call arguments outside the tool's schema), additive (a new
    field, event type or header) or content (the same shape with other values). Calls that
    depend on server-side state, hold a redacted value, or have no key are skipped, with
    the reason. The recording is never changed. Exits 1 on breaking drift (or worse than
    --fail-on) or when a call could not be sent, 2 when a recording or an option cannot be
    used."""
    from openprogram.drift.check import check_recordings
    from openprogram.drift.credentials import Credentials

    if fail_on not in FAIL_ON:
        abort(f"--fail-on takes breaking, additive or content, found {fail_on!r}", EXIT_USAGE)
    if save is not None and len(recordings) > 1:
        abort("--save writes the live answers of one recording: name one", EXIT_USAGE)
    credentials = Credentials.from_environment(
        _headers(header or []), other_way=" (or pass --header)"
    )
    base_urls = _base_urls(base_url or [])
    from openprogram.cli.recordings.scan import configured_user_redaction

    user = configured_user_redaction(None)
    reports: list[DriftReport] = []
    with reporting_errors(usage_errors=(RecordingNameError, RecordingFileError)):
        for report in check_recordings(
            recordings,
            credentials=credentials,
            base_urls=base_urls,
            concurrency=concurrency,
            timeout=timeout,
            max_calls=max_calls,
            only=call,
            fail_on=cast("DriftClass", fail_on),
            user=user,
            over_budget=f"over --max-calls {max_calls}",
            save=save,
        ):
            reports.append(report)
            if not as_json:
                _render(report)
    _conclude(reports, save=save, as_json=as_json)


def _conclude(reports: list[DriftReport], *, save: Path | None, as_json: bool) -> None:
    """The end of the output (the JSON report, or where the live answers went and how to
    accept them), and the exit code."""
    from openprogram.drift.check import ACCEPTING

    drifted = any(report.counts()[kind] for report in reports for kind in FAIL_ON)
    if as_json:
        print_json(
            {
                "recordings": [report.to_json() for report in reports],
                "failed": any(report.failed for report in reports),
                "accepting": ACCEPTING if drifted else None,
            }
        )
    else:
        if save is not None:
            say(f"live answers saved to {save} (show and diff read it; replay refuses it)")
        if drifted:
            say(f"note: {ACCEPTING}")
    if any(report.failed for report in reports):
        raise typer.Exit(EXIT_FAILURE)


def _render(report: DriftReport) -> None:
    for checked in report.calls:
        for line in checked.lines():
            say(line)
    for reason, count in report.skipped_reasons().items():
        say(f"{plural(count, 'call')} skipped: {reason}")
    counts = report.counts()
    drifted = [
        f"{counts[kind]} {kind}" for kind in ("breaking", "additive", "content") if counts[kind]
    ]
    parts = []
    if drifted:
        calls = plural(sum(counts[kind] for kind in FAIL_ON), "call")
        parts.append(f"{calls} drifted ({', '.join(drifted)})")
    parts += [f"{counts[key]} {key}" for key in ("unchanged", "skipped", "failed") if counts[key]]
    sent = len(report.calls) - counts["skipped"]
    # nothing sent is no pass: a check whose every call was skipped (no key) says so
    mark = "✘" if report.failed else "✔" if sent else "-"
    summary = "; ".join(parts) if parts else "no calls"
    if not sent and report.calls:
        summary += ": nothing was sent"
    say(f"{mark} {report.path}: {summary}")


def _headers(given: list[str]) -> tuple[tuple[str, str], ...]:
    headers = []
    for text in given:
        name, colon, value = text.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            # never echoed: the value is a credential
            abort("--header takes 'NAME: VALUE', a colon after the name", EXIT_USAGE)
        headers.append((name.strip(), value.strip()))
    return tuple(headers)


def _base_urls(given: list[str]) -> BaseUrls:
    """The origins trusted beside the vendors' own: ``--base-url``'s, and the configured
    providers' ``base_url``; exit 2 when either is unusable."""
    from openprogram.config.settings import load_config
    from openprogram.drift.origins import BaseUrlError, configured_base_urls, parse_base_urls

    try:
        named = parse_base_urls(given)
    except BaseUrlError as error:
        abort(str(error), EXIT_USAGE)
    loaded = load_config()
    if loaded.error is not None:
        abort(loaded.error, EXIT_USAGE)
    assert loaded.settings is not None
    return replace(named, configured=configured_base_urls(loaded.settings))


def register(app: typer.Typer) -> None:
    app.command("drift")(drift)
