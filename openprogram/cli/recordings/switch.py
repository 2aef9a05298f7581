"""``openprogram recordings record|replay|off``: switch the configured mode (from the next start).

    record [NAME]    create a recording in the store and set mode=record, with the
                     deterministic sources ``--seed``, ``--clock-start``, ``--clock-step``
    replay NAME|PATH check a recording, then set mode=replay
    off              set mode=off, repairing a broken configuration

The three share their JSON form (:func:`describe_change`), their usage errors and the warning
about environment variables that still override the change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from openprogram.cli.output import note, plural, print_json, reporting_errors, say, warn
from openprogram.cli.recording_sources import CLOCK_START, CLOCK_STEP, SEED, recording_sources
from openprogram.errors import RecordingFileError, RecordingNameError

if TYPE_CHECKING:
    from openprogram.store.status import ModeChange


def record(
    name: str | None = typer.Argument(
        None, help="Name for the new recording (default: rec-YYYYMMDD-HHMMSS)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the change as JSON."),
    seed: int | None = SEED,
    clock_start: str | None = CLOCK_START,
    clock_step: int | None = CLOCK_STEP,
) -> None:
    """Create a new recording in the store and set mode=record (from the next start).

    --seed, --clock-start and --clock-step are kept in the configuration with the recording:
    while it records, openprogram.now() and random() draw from them."""
    from openprogram.store.status import start_recording

    sources = recording_sources(seed, clock_start, clock_step)  # before anything is created
    with reporting_errors(usage_errors=usage_errors()):
        change = start_recording(name, sources=sources)
    if as_json:
        print_json(describe_change(change))
        return
    assert change.recording is not None
    say(f"Created recording {change.name!r} at {change.recording}")
    say("Mode is now record: Python processes started from now on record their model calls.")
    if change.sources is not None:
        zone = " (and runs in UTC)" if change.sources.clock is not None else ""
        say(f"It draws openprogram.now() and random() from {change.sources}{zone}.")
    note_sources_removed(change)
    note_what_the_mode_covers()
    warn_about_overrides(change)


def replay(
    recording: str = typer.Argument(..., help="A recording name in the store, or a path."),
    as_json: bool = typer.Option(False, "--json", help="Print the change as JSON."),
) -> None:
    """Validate the recording, then set mode=replay (from the next start)."""
    from openprogram.store.status import start_replay

    with reporting_errors(usage_errors=usage_errors()):
        change = start_replay(recording)
    if as_json:
        print_json(describe_change(change))
        return
    say(f"Replaying {change.recording} ({plural(change.calls, 'call')})")
    say("Mode is now replay: Python processes started from now on replay their model calls.")
    note_sources_removed(change)
    note_what_the_mode_covers()
    warn_about_overrides(change)


def note_what_the_mode_covers() -> None:
    """What the configured mode covers and what not, in two lines on stderr, whenever a
    command turns recording or replay on."""
    from openprogram.store.status import WHAT_THE_MODE_COVERS

    for line in WHAT_THE_MODE_COVERS:
        note(line)


def off(as_json: bool = typer.Option(False, "--json", help="Print the change as JSON.")) -> None:
    """Set mode=off (from the next start). Works whatever state the config is in."""
    from openprogram.store.status import turn_off

    with reporting_errors():
        change = turn_off()
    if as_json:
        print_json(describe_change(change))
        return
    for repair in change.config.repaired:
        warn(f"repaired {change.config.path}: {repair}")
    if change.config.backup is not None:
        warn(f"the original is kept at {change.config.backup}")
    say("Mode is now off: processes started from now on call models directly.")
    warn_about_overrides(change)


def note_sources_removed(change: ModeChange) -> None:
    """Say which deterministic sources of the recording configured before the change were
    removed with it (they drove that recording, not this one)."""
    removed = change.config.sources_removed
    if removed:
        keys = ", ".join(f"record_replay.{entry}" for entry in removed)
        note(f"removed {keys}: they drove the recording configured before")


def describe_change(change: ModeChange) -> dict[str, Any]:
    from openprogram.config.editing import source_values

    return {
        "mode": change.mode,
        "recording": str(change.recording) if change.recording else None,
        "name": change.name,
        "calls": change.calls,
        "config": str(change.config.path),
        "config_created": change.config.created,
        "config_backup": str(change.config.backup) if change.config.backup else None,
        "repaired": change.config.repaired,
        "env_forced_mode": change.env_forced_mode,
        "env_overrides": change.env_overrides or {},
        "takes_effect": "at the next start of a process",
        "sources": source_values(change.sources) or None,
        "sources_removed": change.config.sources_removed,
    }


def usage_errors() -> tuple[type[BaseException], ...]:
    """Bad names and unreadable file arguments exit 2."""
    return (RecordingNameError, RecordingFileError)


def warn_about_overrides(change: ModeChange) -> None:
    """Say which environment variables still override the change just made."""
    for name, value in sorted((change.env_overrides or {}).items()):
        if change.env_forced_mode is not None and "FILE" not in name.upper():
            what = f"{name} still forces mode {change.env_forced_mode!r}"
        else:
            what = f"{name}={value} still overrides the configuration"
        warn(f"{what}: unset it for {change.mode} to take effect")


def register(app: typer.Typer) -> None:
    app.command("record")(record)
    app.command("replay")(replay)
    app.command("off")(off)
