"""``--seed N``, ``--clock-start MS`` and ``--clock-step MS``: the deterministic sources a
recording draws ``openprogram.now()`` and ``openprogram.random()`` from, as ``exec`` and
``recordings record`` take them (see :mod:`openprogram.deterministic_sources`).

``--clock-start`` takes milliseconds since the Unix epoch (UTC) or an ISO 8601 time with its
zone; ``--clock-step`` needs ``--clock-start`` (default step: 1000 ms). A bad value is one
line and exit 2, before anything is created or run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from openprogram.cli.output import EXIT_USAGE, abort

if TYPE_CHECKING:
    from openprogram.deterministic_sources import RecordingSources

SEED = typer.Option(
    None,
    "--seed",
    metavar="N",
    help="Draw openprogram.random() and seeded_random()'s seeds from this seed while "
    "recording (0 to 2**63-1).",
)
CLOCK_START = typer.Option(
    None,
    "--clock-start",
    metavar="MS",
    help="openprogram.now() reads this time first while recording: milliseconds since "
    "1970-01-01T00:00:00Z, or a time with its zone (2025-07-03T00:00:00Z); the program runs "
    "in UTC.",
)
CLOCK_STEP = typer.Option(
    None,
    "--clock-step",
    metavar="MS",
    help="With --clock-start: how far the clock moves at each reading, in milliseconds "
    "(default 1000; 0 stands still).",
)


def recording_sources(
    seed: int | None, clock_start: str | None, clock_step: int | None
) -> RecordingSources | None:
    """The sources the three options give (None: none given); a bad value aborts with one
    line naming the option (exit 2)."""
    from openprogram.deterministic_sources import sources_of_options

    try:
        return sources_of_options(seed, clock_start, clock_step)
    except ValueError as error:
        abort(str(error), EXIT_USAGE)
