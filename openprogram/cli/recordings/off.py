"""``openprogram recordings off``: turn record/replay off, repairing a broken config."""

from __future__ import annotations

import typer

from openprogram.cli.output import print_json, reporting_errors, say, warn
from openprogram.cli.recordings.switching import describe_change, warn_about_overrides


def off(
    as_json: bool = typer.Option(False, "--json", help="Print the change as JSON."),
) -> None:
    """Set mode=off (from the next start). Works whatever state the config is in."""
    from openprogram.store.switch import turn_off

    with reporting_errors():
        change = turn_off()
    if as_json:
        print_json(describe_change(change))
        return
    for note in change.config.repaired:
        warn(f"repaired {change.config.path}: {note}")
    if change.config.backup is not None:
        warn(f"the original is kept at {change.config.backup}")
    say("Mode is now off: processes started from now on call providers directly.")
    warn_about_overrides(change)


def register(app: typer.Typer) -> None:
    app.command("off")(off)
