"""``record_replay()``: record or replay both boundaries for a block of code.

::

    import openprogram

    with openprogram.record_replay("agent.jsonl", mode="record"):
        run_my_agent()  # openai / anthropic SDK calls and openprogram provider calls

    with openprogram.record_replay("agent.jsonl", mode="replay"):
        run_my_agent()  # answered from agent.jsonl, offline

For the length of the block, in every thread and task of the process, the provider
registry and every httpx / httpx2 client (the official SDKs stand on them) record into, or
replay from, the one recording: one writer under record, one replay session under replay,
so calls of both boundaries form one call sequence.

Under replay the block is checked when it ends: the first replay mismatch is raised — also
when the code in the block caught it and carried on — or, if every request matched,
:class:`~openprogram.errors.UnconsumedCallsError` when recorded calls were never
requested. A mismatch at the HTTP boundary travels out of the SDK as a
:class:`~openprogram.recording.mismatch.RecordReplayEscape` (no SDK retry loop can catch
it); leaving the block it becomes the :class:`ReplayMismatch` it carries. While the block
runs, ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` are set to a placeholder when unset (see
:mod:`openprogram.activation.boundaries`), so SDK clients build without a key.

The block's child processes are held to it too (:mod:`openprogram.activation.children`): a
Python child records into, or replays from, the same recording, as under ``openprogram
exec``; under replay any other child runs in a loopback-only network namespace, or is
refused (``children="refuse"``); leaving the block raises
:class:`~openprogram.errors.ChildReplayError` for what a child did wrong."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from openprogram.activation.boundaries import (
    both_boundaries_active,
    prepare_boundaries,
    set_placeholder_keys,
)
from openprogram.activation.children import (
    BlockChildren,
    ChildrenRule,
    block_children,
    check_children_rule,
)
from openprogram.activation.configured import check_appendable
from openprogram.activation.connection_guard import REPLAY_GUARD, Connection, not_recorded_message
from openprogram.activation.plan import RecordReplayPlan, check_match
from openprogram.deterministic_sources import RecordingSources, local_time_in_utc
from openprogram.errors import ChildRefusedError, ChildReplayError
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.writer import forget_writer

if TYPE_CHECKING:
    from openprogram.deterministic_sources import Clock
    from openprogram.errors import ReplayConnectionRefusedError, ReplayMismatch
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.user_redaction import Redactor

__all__ = ["RecordReplay", "record_replay"]

logger = logging.getLogger("openprogram")


@dataclass(frozen=True)
class RecordReplay:
    """What ``with record_replay(...) as active:`` gives: the recording, the mode, and under
    replay the session serving the block's calls."""

    path: Path
    mode: Literal["record", "replay"]
    session: ReplaySession | None = None
    """replay: ``calls_consumed``, ``unconsumed_calls``, ``mismatches``."""
    not_recorded: list[Connection] = field(default_factory=list)
    """record, once the block ended: the connections (one per host and port) that no
    boundary captured — a client library openprogram does not record, a raw socket. They
    are logged too (the ``openprogram`` logger, a warning); a replay will refuse them."""
    appended_to: int = 0
    """record: the calls the recording held before the block (its calls come after them;
    logged as a warning when there were any)."""
    unenforced: list[str] = field(default_factory=list)
    """replay: the child processes that could not replay in-process and ran with nothing
    holding their connections (no network namespace can be made here), and why; each is
    warned of (:class:`~openprogram.activation.children.UnenforcedChildWarning`)."""
    children_not_recorded: list[str] = field(default_factory=list)
    """record, once the block ended: the connections its Python child processes opened that
    no boundary captured (logged as a warning too)."""

    @property
    def mismatches(self) -> list[ReplayMismatch]:
        """Every mismatch raised so far (none under record). A block that expects one on
        purpose clears it once checked: ``active.mismatches.clear()``."""
        return [] if self.session is None else self.session.mismatches


@contextmanager
def record_replay(
    path: str | os.PathLike[str],
    *,
    mode: Literal["record", "replay"] = "record",
    ignore_fields: Iterable[str] = (),
    compare_loopback_ports: bool = False,
    match: str | None = None,
    passthrough_hosts: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    http_headers: Iterable[str] = (),
    redact: Redactor | None = None,
    redact_name: str | None = None,
    redact_patterns: Iterable[str] = (),
    tools: Mapping[str, str] | None = None,
    seed: int | None = None,
    clock: Clock | None = None,
    children: ChildrenRule | None = None,
    allowed_commands: Iterable[str] | None = None,
) -> Iterator[RecordReplay]:
    """Record the block's calls into ``path``, or replay them from it (see the module's docstring).

    ``ignore_fields``: request fields replay leaves out of the comparison (names, or dotted paths
    with ``[*]`` and ``*``; an HTTP call's ``url``, its parts ``url.port``, ``url.query.<name>``…,
    and ``headers.<name>``). ``compare_loopback_ports``: compare the port of a URL whose host is a
    loopback one (127.0.0.1, ::1, localhost), which replay leaves out by default so that a local
    server restarted on another port replays. ``match``: how requests are paired with recorded
    calls: ``"content"`` (the default: the earliest unconsumed call of the boundary whose request
    equals it, whatever order calls arrive in) or ``"order"`` (the next recorded call).
    ``passthrough_hosts``: hosts (``host`` or ``host:port``) whose HTTP requests are sent live and
    never recorded (telemetry). ``allowed_hosts``: hosts (``host`` or ``host:port``) a replay may
    connect to live besides the passthrough hosts (a test database, a local tool server); under
    replay every other connection — loopback included, whatever the client library — is refused
    before it is made, with :class:`~openprogram.errors.ReplayConnectionRefusedError`, and leaving
    the block raises the first refusal even if the code swallowed it. ``http_headers``: request
    headers to store and compare besides ``content-type``, ``anthropic-version``, ``anthropic-beta``
    and ``openai-beta``. ``tools``: how replay treats each agent tool, by name or ``"*"``:
    ``"live"`` (the default: run it), ``"replay"`` (serve its taped result) or ``"check"`` (run it,
    and fail when its result differs from the taped one). Taped functions (``openprogram.taped``)
    record into and replay from the same recording.

    ``seed`` and ``clock``: the deterministic sources the block's ``openprogram.random()`` (and the
    seeds ``seeded_random()`` draws) and ``openprogram.now()`` read while recording — a whole number
    from 0 to 2**63 - 1, and ``openprogram.stepping_clock(start_ms, step_ms)`` or
    ``openprogram.sequence_clock(times)`` (milliseconds since the Unix epoch, UTC), read from their
    start by this block. The same session recorded twice with the same seed and clock reads the same
    times and numbers, and hashes alike. A clock also makes the local zone UTC for the block, so a
    time shown in the local zone reads the same on every machine: give it under replay too — the
    times replayed are the recorded ones (nothing is drawn under replay, and the seed is not used),
    but the zone they are shown in is the clock's.

    ``redact``: a function ``str -> str`` replacing the user's own secrets in every string
    (named ``redact_name`` in the recording's fingerprint, default ``module:qualname``);
    ``redact_patterns``: regular expressions whose matches are replaced. Both apply, with
    the function :func:`~openprogram.recording.user_redaction.register_redactor` registered,
    to everything written and to both sides of every comparison under replay: replay a
    recording with the redaction it was recorded with.

    ``children``: what becomes of a child process started in the block that cannot replay
    in-process (not Python, ``python -S``) under replay: ``"isolate"`` runs it in a
    loopback-only network namespace (where none can be made: as it is, named as unenforced)
    and ``"refuse"`` refuses it before it starts; ``allowed_commands``: the commands (the
    file name of ``argv[0]``, such as ``"git"``) a child runs as it is. None: the
    configuration's ``record_replay.children`` and ``record_replay.allowed_commands``
    (default ``"isolate"`` and none). A Python child inherits the block: it records into,
    or replays from, the same recording (see :mod:`openprogram.activation.children`).

    Recording into an existing recording appends to it, and says so (a warning of the
    ``openprogram`` logger, and :attr:`RecordReplay.appended_to`): a replay then serves both
    sessions' calls, in order. Raises :class:`~openprogram.errors.RecordingFileError` at the start
    when the recording cannot be read (replay) or written (record); ``ValueError`` for an unknown
    ``mode`` or ``match``, a bad ``seed`` or something that is no clock;
    :class:`~openprogram.errors.UserRedactionError` for a bad pattern."""

    if mode not in ("record", "replay"):
        raise ValueError(f"record_replay() mode must be 'record' or 'replay', not {mode!r}")
    recording = Path(os.path.abspath(path))
    sources = RecordingSources.of(seed, clock)
    plan = RecordReplayPlan(
        mode,
        recording,
        ignore_fields=tuple(ignore_fields),
        compare_loopback_ports=compare_loopback_ports,
        match=check_match(match),
        passthrough_hosts=frozenset(passthrough_hosts),
        allowed_hosts=frozenset(allowed_hosts),
        http_headers=frozenset(http_headers),
        redact_patterns=tuple(redact_patterns),
        tools=tuple((tools or {}).items()),
        sources=sources,
    )
    rule = None if children is None else check_children_rule(children)
    commands = None if allowed_commands is None else tuple(allowed_commands)
    if mode == "record":
        check_appendable(recording)  # a damaged recording blocks recording as it blocks replay
    prepared = prepare_boundaries(plan, redact=redact, redact_name=redact_name)
    session = prepared.session
    writer = prepared.http.writer
    appended_to = writer.existing_calls if mode == "record" and writer is not None else 0
    active = RecordReplay(recording, mode, session, appended_to=appended_to)
    if appended_to and writer is not None:
        writer.mark_new_session()
        logger.warning(
            "openprogram: %s already holds %s: this block's calls are appended after them, "
            "and a replay of it serves both sessions in order; record into a new file to keep "
            "one session per recording",
            recording,
            "1 call" if writer.existing_calls == 1 else f"{writer.existing_calls} calls",
        )
    restore_keys = set_placeholder_keys() if mode == "replay" else None
    refused_before = len(REPLAY_GUARD.refusals)
    zone = local_time_in_utc() if clock is not None else nullcontext()
    try:
        with (
            zone,
            block_children(plan, rule=rule, allowed_commands=commands) as kids,
            _claimed_by_block(kids, session),
            both_boundaries_active(
                prepared.transform, prepared.http, prepared.tapes, allowed_hosts=plan.allowed_hosts
            ) as report,
        ):
            try:
                yield active
            except RecordReplayEscape as escape:
                raise escape.error.with_traceback(escape.__traceback__) from None
            except BaseException as error:
                if session is not None and session.mismatches:
                    _raise_first_mismatch(session, error)
                _raise_first_refusal(REPLAY_GUARD.refusals_since(refused_before), error)
                _raise_children_problems(kids, error)
                raise
            finally:
                active.unenforced.extend(kids.all_unenforced())
            problems = kids.problems()
            active.children_not_recorded.extend(kids.not_recorded())
            claimed_by_child = kids.claimed_by_child
        if report.not_recorded:
            active.not_recorded.extend(report.not_recorded)
            logger.warning("openprogram: %s", not_recorded_message(report.not_recorded))
        if active.children_not_recorded:
            logger.warning(
                "openprogram: connections the block's child processes opened were not "
                "recorded: %s — a replay of this recording will refuse them",
                ", ".join(active.children_not_recorded),
            )
        if session is not None:
            if session.mismatches:
                _raise_first_mismatch(session, None)
            _raise_first_refusal(REPLAY_GUARD.refusals_since(refused_before), None)
        if problems:
            raise ChildReplayError(problems)
        if session is not None and not claimed_by_child:
            session.assert_consumed()  # else the child that replayed reported what it left
    finally:
        if restore_keys is not None:
            restore_keys()
        if mode == "record":
            forget_writer(recording)


@contextmanager
def _claimed_by_block(kids: BlockChildren, session: ReplaySession | None) -> Iterator[None]:
    """Under replay, the block's own session serves calls once this process holds the
    recording's claim: the block and a replaying child never both serve a call."""
    if session is None:
        yield
        return
    undo = kids.claim_for_block(session)
    try:
        yield
    finally:
        undo()


def _raise_children_problems(kids: BlockChildren, error: BaseException) -> None:
    """Raise what the block's child processes did wrong, if anything, over the error the
    block raised (a child refused a connection is often why the block failed)."""
    if not isinstance(error, Exception) or isinstance(error, ChildReplayError | ChildRefusedError):
        return
    problems = kids.problems()
    if problems:
        raise ChildReplayError(problems) from error


def _raise_first_mismatch(session: ReplaySession, error: BaseException | None) -> None:
    """Raise the session's first mismatch, unless ``error`` (what the block raised) is that
    mismatch or was caused by it; a ``KeyboardInterrupt`` or ``SystemExit`` passes."""
    _raise_first(session.mismatches[0], error)


def _raise_first_refusal(
    refusals: list[ReplayConnectionRefusedError], error: BaseException | None
) -> None:
    """Raise the first connection the block's replay refused, if it refused one, unless
    ``error`` is that refusal or was caused by it."""
    if refusals:
        _raise_first(refusals[0], error)


def _raise_first(first: BaseException, error: BaseException | None) -> None:
    if error is not None:
        if not isinstance(error, Exception):
            return
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            if current is first:
                return
            seen.add(id(current))
            current = current.__cause__ or current.__context__
    raise first
