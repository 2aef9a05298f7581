"""One test's :class:`RecordingSession`, from the moment it is opened until it is finished.

:func:`~openprogram.testing.recording_session.open_recording_session` decides which kind of
session a test gets; this module is what the session then does while the test runs and after.

:meth:`RecordingSession.installed` installs record, replay or both on both boundaries — the provider
registry (a process-wide registry scope of its own, so it overrides whatever mode the user's
configuration set, and the registry is exactly as before once the test ends) and every httpx /
httpx2 client (the official SDKs stand on them) — for every thread and task of the process while the
test runs: its body, the fixtures it uses, the asyncio tasks they start, and threads and executor
workers too. Record wraps every registered api in a ``RecordingProvider`` and records every HTTP
exchange, all into the test's one file; replay answers every api, registered or not, with one
``ReplayProvider`` and every HTTP request from the same replay session, each request paired with a
recorded call by the session's matching (by content unless the test asks for ``order``). Under
replay ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` are set to a placeholder while the test runs,
when unset; a test that calls live never sends the placeholder (it is unset while the test runs).
Taped functions and agent tools (``openprogram.tape_boundary``) record into the same file and replay
from the same session; under ``new_episodes`` they run live and their entries are recorded afresh.

In ``drift`` mode, :meth:`RecordingSession.suspended` leaves the replay for the check of the
live answers once the body has passed, and enters it again on the same replay session, so the
fixtures' teardowns still replay; the check's report is :attr:`RecordingSession.drift`.

Once the body has run, the session judges it: :meth:`RecordingSession.problem_after_call`
and :meth:`RecordingSession.problem_at_teardown` find a replay mismatch the code under test
caught and carried on past, or recorded calls (and tape entries) it never requested;
:meth:`RecordingSession.explain_failure` notes on a failed test's exception what replay saw
and how to re-record.

Recording writes into a private temporary file, and :meth:`RecordingSession.finish` changes
the recording only when the test passed (see :mod:`~openprogram.testing.saving`): the new
recording replaces the old one, or the run's calls are merged into it; a test that fails
while recording leaves the previous recording, if any, as it was, and never leaves half a
session behind. :meth:`RecordingSession.outcome` then tells the suite summary what the test
did with its recording."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from openprogram.activation.boundaries import (
    both_boundaries_active,
    hide_placeholder_keys,
    set_placeholder_keys,
)
from openprogram.activation.children import BlockChildren, block_children
from openprogram.activation.connection_guard import REPLAY_GUARD, Connection
from openprogram.activation.plan import RecordReplayPlan
from openprogram.errors import ChildReplayError, ReplayMismatch, UnconsumedCallsError
from openprogram.http_boundary.boundary import HttpBoundary
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.provider_boundary.replay_or_record import replay_or_record_transform
from openprogram.provider_boundary.transforms import record_transform, replay_transform
from openprogram.providers.registry import current_scope, process_wide_scope
from openprogram.recording.rewriting import RecordingMerge
from openprogram.recording.writer import forget_writer, writer_for
from openprogram.tape_boundary.deck import TapePlayer, TapeRecorder
from openprogram.testing.recording_settings import RecordMode, record_command
from openprogram.testing.saving import SavedRecording, merge_recording, save_recording
from openprogram.testing.suite_summary import OutcomeKind, TestOutcome
from openprogram.vendors import call_tokens

if TYPE_CHECKING:
    from openprogram.deterministic_sources import RecordingSources
    from openprogram.drift.check import DriftReport
    from openprogram.providers.registry import ProviderScope
    from openprogram.recording.format import RecordedCall
    from openprogram.recording.user_redaction import UserRedaction
    from openprogram.testing.recording_settings import RecordingSettings

__all__ = ["RecordingSession", "SessionMode"]

SessionMode = Literal["record", "replay", "replay_or_record", "live"]


class RecordingSession:
    """What the ``openprogram_recording`` fixture yields.

    ``path`` is where the test's recording lives; ``mode`` is ``"replay"``, ``"record"``,
    ``"replay_or_record"`` (``new_episodes`` with a recording) or ``"live"``; ``replay`` the
    :class:`ReplayProvider` answering the test's calls from the recording (None when
    recording afresh or live). While recording, the calls go to a temporary file; the
    recording changes when the test passes."""

    def __init__(
        self,
        path: Path,
        *,
        record_mode: RecordMode,
        display_path: str,
        test_argument: str,
        replay: ReplayProvider | None = None,
        write_path: Path | None = None,
        live: bool = False,
        existed: bool = False,
        passthrough_hosts: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        http_headers: Iterable[str] = (),
        user_redaction: UserRedaction | None = None,
    ) -> None:
        self.path = path
        self.record_mode: RecordMode = record_mode
        self.replay = replay
        self.display_path = display_path
        self.test_argument = test_argument
        self.existed = existed
        """Whether the recording existed when the test started."""
        self._write_path = write_path
        self.merge: RecordingMerge | None = None
        self._read_stat: os.stat_result | None = None
        if replay is not None and write_path is not None:
            self.merge = RecordingMerge(replay.session, writer_for(write_path))
            self._read_stat = _stat_or_none(path)
        self.mode: SessionMode = (
            "live"
            if live
            else "replay_or_record"
            if self.merge is not None
            else "replay"
            if replay is not None
            else "record"
        )
        self.passthrough_hosts = frozenset(passthrough_hosts)
        """Hosts whose HTTP requests are sent live and never recorded."""
        self.allowed_hosts = frozenset(allowed_hosts)
        """Hosts a replaying test may connect to live besides the passthrough hosts; every
        other connection is refused under replay."""
        self._refusals_reported = len(REPLAY_GUARD.refusals)
        self.http_headers = frozenset(http_headers)
        """Request headers stored and compared besides the semantic ones."""
        self.settings: RecordingSettings | None = None
        """The settings the fixture opened the session with (None outside the fixture)."""
        self.saved: SavedRecording | None = None
        """What :meth:`finish` made of the recording (None: it was left as it was)."""
        self.not_recorded: list[Connection] = []
        """While recording: the connections no boundary captured (a client library
        openprogram does not record, a raw socket); a replay would refuse them."""
        self.left_calls_unconsumed = False
        """Whether the test's body returned with recorded calls never requested (replay)."""
        self.user_redaction = user_redaction
        """The user's redaction the session records and compares with."""
        self.drift: DriftReport | None = None
        """``drift`` mode: the check of the live answers, once the test's body passed."""
        self._mismatches_reported = 0
        self._children_reported = False
        self.children: BlockChildren | None = None
        """The child processes the test started, while and after it ran (None: ``live``,
        ``new_episodes`` with a recording, or not installed yet)."""
        self._replay_scope: ExitStack | None = None
        self._scope_entered: ProviderScope | None = None

    def __repr__(self) -> str:
        return f"<RecordingSession {self.mode} {self.display_path}>"

    @property
    def calls_live(self) -> bool:
        """Whether the session may call providers live (record, merge, live)."""
        return self.mode != "replay"

    @property
    def rerecord_command(self) -> str:
        return record_command("all", self.test_argument)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Record, replay or both at both boundaries, in every thread and task, inside this
        block (see the module's docstring); the child processes the test starts are held to
        it (:mod:`openprogram.activation.children`)."""
        with self._children_held(), self._boundaries_installed():
            yield

    @contextmanager
    def _children_held(self) -> Iterator[None]:
        plan = self._children_plan()
        if plan is None:
            yield
            return
        settings = self.settings
        with block_children(
            plan,
            rule=None if settings is None else settings.children,
            allowed_commands=None if settings is None else settings.allowed_commands,
        ) as children:
            self.children = children
            if self.replay is None:
                yield
                return
            undo = children.claim_for_block(self.replay.session)
            try:
                yield
            finally:
                undo()

    def _children_plan(self) -> RecordReplayPlan | None:
        """The plan a Python child of the test activates: the test's replay, or its
        recording into the temporary file (None: ``live`` and ``new_episodes`` with a
        recording, whose children run as they are)."""
        settings = self.settings
        if self.mode == "replay":
            mode: Literal["record", "replay"] = "replay"
            path = self.path
        elif self.mode == "record" and self._write_path is not None:
            mode, path = "record", self._write_path
        else:
            return None
        return RecordReplayPlan(
            mode,
            path,
            ignore_fields=() if settings is None else settings.ignore_fields,
            compare_loopback_ports=False if settings is None else settings.compare_loopback_ports,
            match="content" if settings is None else settings.match,
            passthrough_hosts=self.passthrough_hosts,
            allowed_hosts=self.allowed_hosts,
            http_headers=self.http_headers,
            redact_patterns=() if settings is None else settings.redact_patterns,
            tools=() if settings is None else settings.tools,
            sources=self.sources,
        )

    @contextmanager
    def _boundaries_installed(self) -> Iterator[None]:
        if self.mode == "replay":
            with ExitStack() as scope:
                scope.enter_context(self._replay_boundaries())
                self._replay_scope = scope
                try:
                    yield
                finally:
                    self._replay_scope = None
            return
        restore_keys = hide_placeholder_keys()
        try:
            with self._live_boundaries():
                yield
        finally:
            restore_keys()

    @contextmanager
    def suspended(self) -> Iterator[bool]:
        """Replay left for the block, and entered again after it on the same replay session:
        what the ``drift`` check runs in, so that its live sends are neither served from the
        recording nor refused, while whatever the test's fixtures do after it is replayed
        again. Yields whether replay was left: not outside :meth:`installed`, nor while a
        record/replay scope entered after the test's (a fixture's own ``record_replay``) is
        still active, since scopes are left in the reverse order they were entered."""
        scope = self._replay_scope
        if scope is None or current_scope() is not self._scope_entered:
            yield False
            return
        scope.close()
        try:
            yield True
        finally:
            scope.enter_context(self._replay_boundaries())

    @contextmanager
    def _replay_boundaries(self) -> Iterator[None]:
        assert self.replay is not None
        http = HttpBoundary(
            "replay",
            session=self.replay.session,
            passthrough_hosts=self.passthrough_hosts,
            extra_headers=self.http_headers,
        )
        restore_keys = set_placeholder_keys()
        tapes = TapePlayer(self.replay.session)
        try:
            self._refusals_reported = len(REPLAY_GUARD.refusals)
            with both_boundaries_active(
                replay_transform(self.replay), http, tapes, allowed_hosts=self.allowed_hosts
            ):
                self._scope_entered = current_scope()
                yield
        finally:
            self._scope_entered = None
            restore_keys()

    @contextmanager
    def _live_boundaries(self) -> Iterator[None]:
        hosts, headers = self.passthrough_hosts, self.http_headers
        if self.mode == "live":
            with process_wide_scope(transform=None):  # whatever the configured mode says
                yield
            return
        if self.merge is not None:
            http = HttpBoundary(
                "replay_or_record", merge=self.merge, passthrough_hosts=hosts, extra_headers=headers
            )
            transform = replay_or_record_transform(self.merge)
            tapes = TapeRecorder(self.merge.writer, self.sources)
            with both_boundaries_active(transform, http, tapes) as report:
                yield
            self.not_recorded = report.not_recorded
            return
        assert self._write_path is not None
        writer = writer_for(self._write_path)
        http = HttpBoundary("record", writer=writer, passthrough_hosts=hosts, extra_headers=headers)
        with both_boundaries_active(
            record_transform(self._write_path), http, TapeRecorder(writer, self.sources)
        ) as report:
            yield
        self.not_recorded = report.not_recorded

    @property
    def sources(self) -> RecordingSources | None:
        """What ``now()`` and ``random()`` draw from while the test records (the settings'
        ``seed`` and ``clock``; None: the real clock and randomness)."""
        return None if self.settings is None else self.settings.sources

    def problem_after_call(self) -> str | None:
        """Why a test whose body passed fails after all: a replay mismatch the code under
        test caught, or recorded calls it never made (not under ``new_episodes``, which
        drops them). None if there is nothing wrong."""
        if self.replay is None:
            return self._children_problem()
        problem = (
            self._new_mismatch_problem() or self._new_refusal_problem() or self._children_problem()
        )
        if problem is not None or self.merge is not None:
            return problem
        if self.children is not None and self.children.claimed_by_child:
            return None  # the child that replayed the recording reported what it left
        try:
            self.replay.assert_consumed()
        except UnconsumedCallsError as error:
            self.left_calls_unconsumed = True
            return f"{error}\nif the change is intended, re-record: {self.rerecord_command}"
        return None

    def problem_at_teardown(self) -> str | None:
        """A mismatch caught and swallowed after the test body (in a fixture's teardown)."""
        if self.replay is None:
            return self._children_problem()
        return (
            self._new_mismatch_problem() or self._new_refusal_problem() or self._children_problem()
        )

    def _children_problem(self) -> str | None:
        """What the test's child processes did wrong (they have ended by now), once."""
        if self.children is None or self._children_reported:
            return None
        problems = self.children.problems()
        if not problems:
            return None
        self._children_reported = True
        return str(ChildReplayError(problems))

    def _new_refusal_problem(self) -> str | None:
        new = REPLAY_GUARD.refusals_since(self._refusals_reported)
        self._refusals_reported += len(new)
        if not new:
            return None
        caught = "connection" if len(new) == 1 else f"{len(new)} connections; the first"
        return (
            f"{new[0]}\n(the code under test carried on after the refused {caught}; "
            "list the host in --openprogram-allowed-hosts or openprogram_allowed_hosts if the "
            "test may reach it live)"
        )

    def _new_mismatch_problem(self) -> str | None:
        assert self.replay is not None
        mismatches = self.replay.mismatches
        new = mismatches[self._mismatches_reported :]
        self._mismatches_reported = len(mismatches)
        if not new:
            return None
        caught = "a replay mismatch" if len(new) == 1 else f"{len(new)} replay mismatches"
        first = "" if len(new) == 1 else "; the first"
        return (
            f"{new[0]}\n(the code under test caught {caught} and carried on{first}; "
            f"the recording is {self.display_path}; if the change is intended, re-record: "
            f"{self.rerecord_command})"
        )

    def explain_failure(self, error: BaseException) -> None:
        """Add notes to the exception a test failed with: what replay saw, what to do."""
        self._mismatches_reported = len(self.replay.mismatches) if self.replay else 0
        if self.mode == "live":
            return
        if self.mode != "replay":
            error.add_note(
                "openprogram: the test failed while recording, so its new recording was "
                f"discarded ({self.display_path} is unchanged)"
            )
            return
        assert self.replay is not None
        mismatches = self.replay.mismatches
        if isinstance(error, ReplayMismatch) and error.field_path.partition(".")[0] == "url":
            error.add_note(
                f"openprogram: replaying {self.display_path}; the request went to another URL "
                "than the recorded one, most often a client pointed at another server (the "
                "note says what differs: the fix is in the client's base URL, or "
                "@pytest.mark.openprogram(ignore_fields=[...]) for the part that may change); "
                f"if the change is intended, re-record: {self.rerecord_command}"
            )
        elif isinstance(error, ReplayMismatch | UnconsumedCallsError):
            error.add_note(
                f"openprogram: replaying {self.display_path}; if the change is intended, "
                f"re-record: {self.rerecord_command}"
            )
        # A mismatch the code caught (in a thread, say) comes first, and is often the cause.
        if mismatches and mismatches[0] is not error and not _caused_by(error, mismatches[0]):
            error.add_note(
                "openprogram: earlier, the code under test caught this replay mismatch:\n"
                f"{mismatches[0]}"
            )

    def finish(self, *, passed: bool) -> None:
        """Close the recording; when recording, change it only if the test ``passed``: the
        new recording replaces the old one (``record``), or the run's calls are merged into
        it (``replay_or_record``)."""
        if self._write_path is None:
            return
        write_path, folder = self._write_path, self._write_path.parent
        forget_writer(write_path)
        try:
            if passed and self.merge is not None:
                self.saved = merge_recording(
                    self.merge, write_path, self.path, expected=self._read_stat
                )
            elif passed:
                self.saved = save_recording(
                    write_path, self.path, self.display_path, replaced=self.existed
                )
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def outcome(self, nodeid: str, *, passed: bool) -> TestOutcome:
        """What the test did with its recording, once :meth:`finish` ran."""
        outcome = TestOutcome(
            nodeid=nodeid,
            recording=self.display_path,
            record_mode=self.record_mode,
            kind=self._outcome_kind(passed),
        )
        outcome.not_recorded = [str(connection) for connection in self.not_recorded]
        if self.children is not None and self.mode == "record":
            outcome.not_recorded += self.children.not_recorded()
        if self.drift is not None:
            outcome.drift = self.drift.to_json()
        saved = self.saved
        if saved is not None:
            outcome.recorded_calls = saved.live_calls
            outcome.dropped_calls = saved.dropped_calls
            outcome.difference = saved.difference
            outcome.differences = saved.differences
        if self.replay is None:
            return outcome
        session = self.replay.session
        served = self.merge.replayed_calls if self.merge is not None else session.served_calls
        outcome.replayed_calls = served
        if self.merge is None:
            outcome.mismatched_calls = session.mismatched_calls
            outcome.unconsumed_calls = session.never_requested_calls
            if session.mismatches:
                outcome.difference = str(session.mismatches[0])
        outcome.tokens_replayed = _tokens(session.recording.calls, served)
        return outcome

    def _outcome_kind(self, passed: bool) -> OutcomeKind:
        if self.mode == "live":
            return "live"
        if self.mode == "replay":
            assert self.replay is not None
            if self.replay.mismatches:
                return "mismatched"
            return "unconsumed" if self.left_calls_unconsumed else "replayed"
        if not passed:
            return "failed"
        if self.saved is None or not self.saved.changed:
            return "replayed"
        return "re-recorded" if self.existed else "recorded"


def _tokens(calls: list[RecordedCall], served: list[int]) -> int | None:
    """The tokens the ``served`` calls' recorded usage counts; None when none recorded any."""

    found = (call_tokens(calls[index]) for index in served)
    counts = [tokens for tokens in found if tokens is not None]
    return sum(counts) if counts else None


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _caused_by(error: BaseException, cause: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if current is cause:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
