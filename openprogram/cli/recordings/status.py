"""``openprogram recordings status``: what is configured, and whether it would work."""

from __future__ import annotations

import typer

from openprogram.cli.output import EXIT_FAILURE, plural, print_json, reporting_errors, say


def status(as_json: bool = typer.Option(False, "--json", help="Print the status as JSON.")) -> None:
    """Show the mode, the recording and whether it is valid, and where the config came from.

    Exits 1 when the configured state is broken, saying what to do."""
    from openprogram.store.status import configured_status

    with reporting_errors():
        report = configured_status()
    if as_json:
        print_json(report.to_json())
    else:
        _render(report)
    if report.broken:
        raise typer.Exit(EXIT_FAILURE)


def _render(report: object) -> None:
    from openprogram.store.status import StatusReport, not_recorded_note

    assert isinstance(report, StatusReport)

    def line(label: str, *parts: str, style: str = "bold") -> None:
        say((label, style), *parts)

    line("mode:    ", report.mode or "unknown (the config is broken)")
    if report.recording is not None:
        state = report.recording
        if not state.exists:
            validity = "missing"
        elif state.valid:
            truncated = (
                f", call {state.truncated_calls[0]} truncated" if state.truncated_calls else ""
            )
            calls = plural(state.calls, "call")
            if state.sessions > 1:  # a replay serves them as one: say so
                calls += f" in {state.sessions} sessions"
            version = "" if state.format_version is None else f", format {state.format_version}"
            validity = f"valid, {calls}{version}{truncated}"
            if state.calls == 0 and report.mode == "replay":
                validity += "; empty: nothing to replay"
        else:
            validity = "INVALID"
        if state.link is not None and report.mode == "record":
            validity = f"a symbolic link to {state.link}: never recorded through"
        elif state.link is not None:  # replay reads through it
            validity = f"a symbolic link to {state.link}; {validity}"
        line("file:    ", str(state.path), f" ({validity})")
        if state.not_recorded:
            line("note:    ", not_recorded_note(state.not_recorded))
    elif report.file_setting:
        line("file:    ", report.file_setting)
    where = "" if report.config_exists else " (not created yet: defaults apply)"
    line("config:  ", str(report.config_path), f" [from {report.config_source}]{where}")
    for name, value in sorted(report.env_overrides.items()):
        line("override:", f" {name}={value}")
    if report.config_changed_at:
        line(
            "changed: ",
            f"{report.config_changed_at}; processes started before then keep their old mode"
            " until they restart",
        )
    for note in report.notes:
        line("note:    ", note)
    for problem in report.problems:
        line("problem: ", problem, style="bold red")
    for advice in report.advice:
        line("to fix:  ", advice)


def register(app: typer.Typer) -> None:
    app.command("status")(status)
