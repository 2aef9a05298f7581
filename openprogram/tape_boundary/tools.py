"""Agent tools on tapes: each tool's result is taped under record, and replayed, checked or
run live under replay by the tool's policy (:mod:`openprogram.recording.tape_replay`).

The agent loop runs every tool call through :func:`run_taped_tool`. The tape of a tool is
``tool:<name>``; an entry's arguments are the tool call's arguments, its result what the model
reads: ``{"text": …, "is_error": …}`` (a tool that raised, or an unknown tool, is an error result,
never an exception). Both are redacted as conversation, as they are in the calls' rows.

* record — the tool runs; its result is taped;
* replay, ``live`` — the tool runs; its tape is not read;
* replay, ``replay`` — the tool does not run: the taped result is returned, found by the
  call's arguments (a mismatch is raised as for a taped function);
* replay, ``check`` — the tool runs and its live result is returned; one that differs from
  the taped result (or a call whose arguments equal no entry) is kept in the session's
  mismatches, so the run fails when it ends, naming the first differing entry.

Under ``replay`` and ``check`` a recording holding no tool tape at all (made before tools
were taped) fails with ``ToolTapesMissingError``: record again. HTTP requests a tool sends
are recorded and replayed as usual (a tool replayed ``live`` sends them again)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from openprogram.errors import ReplayMismatch
from openprogram.recording.format import TOOL_TAPE_PREFIX, TapeEntry
from openprogram.recording.tape_rows import enclosing_tape, enter_tape, leave_tape, tape_row
from openprogram.tape_boundary.deck import BlockedTapes, TapeRecorder, current_redactor
from openprogram.tape_boundary.taped_functions import active_tape_deck

__all__ = ["run_taped_tool"]

ToolRun = Callable[[], Awaitable[tuple[str, bool]]]
"""Runs the tool call; returns the result text and whether it is an error."""


async def run_taped_tool(tool: str, arguments: Mapping[str, Any], run: ToolRun) -> tuple[str, bool]:
    """The result the model reads for a call of ``tool`` with ``arguments``: ``run()``'s or
    the taped one, by the active deck and the tool's policy (see the module's docstring)."""
    __tracebackhide__ = True
    deck = active_tape_deck()
    if deck is None:
        return await run()
    if isinstance(deck, BlockedTapes):
        deck.refuse()
    if not isinstance(deck, TapeRecorder) and deck.tool_policy(tool) == "live":
        return await run()
    redactor = current_redactor(deck.user_redaction)
    tape = f"{TOOL_TAPE_PREFIX}{tool}"
    args = redactor.redact_model_output(dict(arguments))
    if isinstance(deck, TapeRecorder):
        within = enclosing_tape()
        token = enter_tape(tape, covers_http=False)
        try:
            text, is_error = await run()
        finally:
            leave_tape(token)
        result = redactor.redact_model_output({"text": text, "is_error": is_error})
        deck.record(tape_row(tape, args, result=result, within=within))
        return text, is_error
    policy = deck.tool_policy(tool)
    deck.check_tool_tapes(tool, policy)
    if policy == "replay":
        return _taped_result(deck.take(tape, args))
    text, is_error = await run()
    deck.compare(tape, args, redactor.redact_model_output({"text": text, "is_error": is_error}))
    return text, is_error


def _taped_result(entry: TapeEntry) -> tuple[str, bool]:
    result = entry.result
    if (
        entry.error is None
        and isinstance(result, dict)
        and isinstance(result.get("text"), str)
        and isinstance(result.get("is_error"), bool)
    ):
        return result["text"], result["is_error"]

    raise ReplayMismatch(
        entry.index,
        "result",
        result,
        None,
        tape=entry.tape,
        detail=f'the taped result of {entry.label} is not {{"text": str, "is_error": bool}}',
    )
