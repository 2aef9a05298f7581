"""Tapes: replay the world, not only the model.

A recording freezes the model; a *tape* freezes anything else a session depends on — a tool,
a web API, the clock, a random draw — so that a replay runs with no network and no drift::

    import openprogram

    @openprogram.taped
    def fetch_weather(city: str) -> dict: ...      # replayed from its tape, not run

    stamp = openprogram.now()                      # the recorded time under replay

    taped_functions  ``taped``: any function, sync or async, on a tape of its own; ``now()``,
                     ``random()``, ``seeded_random()``: the clock and randomness, drawn
                     while recording from the recording's deterministic sources, if any
                     (``stepping_clock``, ``sequence_clock``, a seed: exported here from
                     ``openprogram.deterministic_sources``)
    tools            agent tools on tapes, replayed ``live``, ``replay`` or ``check``
    values           what arguments and results may be (``TapeValueError``), and recorded
                     exceptions raised again (``RecordedTapeError``)
    deck             where taped calls go while record or replay is active, and the
                     redaction of what they write

The rows are ``tape`` rows of the recording (``openprogram.recording.tape_rows``); replay
serves them from the session that serves the calls (``openprogram.recording.tape_replay``).
Which taped call covers the code running now — for the entries and calls made within it, and
the HTTP requests of a taped function — is ``openprogram.recording.tape_rows``.
Exports are loaded on first use: importing this package imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.deterministic_sources import sequence_clock, stepping_clock
    from openprogram.tape_boundary.taped_functions import now, random, seeded_random, taped

_EXPORTS: dict[str, str] = {
    "now": "openprogram.tape_boundary.taped_functions",
    "random": "openprogram.tape_boundary.taped_functions",
    "seeded_random": "openprogram.tape_boundary.taped_functions",
    "sequence_clock": "openprogram.deterministic_sources",
    "stepping_clock": "openprogram.deterministic_sources",
    "taped": "openprogram.tape_boundary.taped_functions",
}
__all__ = [*_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
