"""``openprogram recordings prune``: delete old inactive recordings from the store."""

from __future__ import annotations

import typer

from openprogram.cli.output import (
    EXIT_FAILURE,
    confirm_or_abort,
    plural,
    print_json,
    reporting_errors,
    say,
    warn,
)
from openprogram.errors import PruneCriteriaError


def prune(
    older_than: float | None = typer.Option(
        None, "--older-than", metavar="DAYS", help="Delete recordings older than DAYS days."
    ),
    keep: int | None = typer.Option(
        None, "--keep", metavar="N", help="Keep the N newest recordings, delete the rest."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would go; delete nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask to confirm."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Delete old recordings (give --older-than, --keep, or both). Never the active one."""
    from openprogram.config.paths import recordings_dir
    from openprogram.config.settings import protected_recordings
    from openprogram.store.names import resolve_store
    from openprogram.store.store import check_prune_criteria, prune_recordings, select_for_prune

    store = resolve_store(recordings_dir())  # a symlinked store: act inside its target only
    with reporting_errors(usage_errors=(PruneCriteriaError,)):
        check_prune_criteria(older_than_days=older_than, keep=keep)
        # With a broken configuration, what it names is kept; if even that is unknown, stop.
        active = protected_recordings()
        selected, _ = select_for_prune(store, older_than_days=older_than, keep=keep, active=active)
    if selected and not dry_run:
        confirm_or_abort(f"Delete {plural(len(selected), 'recording')} from {store}?", yes=yes)
    with reporting_errors(usage_errors=(PruneCriteriaError,)):
        result = prune_recordings(
            store, older_than_days=older_than, keep=keep, active=active, dry_run=dry_run
        )
    if as_json:
        print_json(
            {
                "dry_run": result.dry_run,
                "removed": [str(path) for path in result.removed],
                "kept": [str(path) for path in result.kept],
                "failed": [{"path": str(path), "reason": why} for path, why in result.failed],
            }
        )
    else:
        verb = "Would delete" if dry_run else "Deleted"
        for path in result.removed:
            say(f"{verb} {path}")
        say(
            f"{verb} {len(result.removed)}, kept {len(result.kept)}"
            + (f", failed {len(result.failed)}" if result.failed else "")
        )
        for path, why in result.failed:
            warn(f"could not delete {path}: {why}; it is kept")
    if result.failed:
        raise typer.Exit(EXIT_FAILURE)


def register(app: typer.Typer) -> None:
    app.command("prune")(prune)
