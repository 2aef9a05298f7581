"""One test's recording: record or replay it at both boundaries, for that test only.

:func:`open_recording_session` decides from the record mode and whether the file exists:

* ``none`` replays, and refuses a missing recording (:class:`RecordingMissingError`);
* ``once`` replays an existing recording and records a missing one;
* ``new_episodes`` records a missing recording; for an existing one, it replays each request
  the recording holds an equal unconsumed call for and records every other live (a
  :class:`~openprogram.recording.merging.RecordingMerge`);
* ``all`` (and its other name ``rewrite``) records afresh;
* ``live`` installs nothing that records or replays: every call goes to the real providers.

Recording writes into a private temporary folder next to the recording, and the recording
changes only when the test passed (:meth:`RecordingSession.finish`, see
:mod:`~openprogram.testing.saving`): a test that fails while recording leaves the previous
recording, if any, as it was, and never leaves half a session behind. Recording — and
calling live — refuses to run on CI (``CI`` set to ``true``, ``1`` or ``yes``) unless
explicitly allowed (:class:`RecordingOnCiRefusedError`).

:meth:`RecordingSession.installed` installs record, replay or both on both boundaries — the
provider registry (a process-wide registry scope of its own, so it overrides whatever mode
the user's configuration set, and the registry is exactly as before once the test ends) and
every httpx / httpx2 client (the official SDKs stand on them) — for every thread and task
of the process while the test runs: its body, the fixtures it uses, the asyncio tasks they
start, and threads and executor workers too. Record wraps every registered api in a
``RecordingProvider`` and records every HTTP exchange, all into the test's one file; replay
answers every api, registered or not, with one ``ReplayProvider`` and every HTTP request
from the same replay session, each request paired with a recorded call by the session's
matching (by content unless the test asks for ``order``). Under replay ``OPENAI_API_KEY`` and
``ANTHROPIC_API_KEY`` are set to a placeholder while the test runs, when unset; a test that
calls live never sends the placeholder (it is unset while the test runs).

Taped functions and agent tools (``openprogram.tapes``) record into the same file and replay
from the same session: a tape entry that differs fails the test like a call that differs,
and entries never read fail it like calls never requested. Under ``new_episodes`` they run
live and their entries are recorded afresh. The user's own redaction (patterns, a function)
applies to everything the test writes and to both sides of every comparison.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from openprogram.activation.boundaries import both_boundaries_active
from openprogram.activation.placeholders import hide_placeholder_keys, set_placeholder_keys
from openprogram.errors import OpenProgramError, RecordingFileError
from openprogram.http.boundary import HttpBoundary
from openprogram.private_files import make_private_dirs
from openprogram.providers.activation import record_transform, replay_transform
from openprogram.providers.replay import ReplayProvider
from openprogram.recording.matching import DEFAULT_MATCHING
from openprogram.recording.merging import RecordingMerge
from openprogram.recording.mismatch import ReplayMismatch, UnconsumedCallsError
from openprogram.recording.writers import forget_writer, writer_for
from openprogram.tapes.deck import TapePlayer, TapeRecorder
from openprogram.testing.outcome import OutcomeKind, TestOutcome
from openprogram.testing.record_modes import RecordMode, env_flag, record_command
from openprogram.testing.saving import SavedRecording, merge_recording, save_recording

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall
    from openprogram.recording.user_redaction import UserRedaction
    from openprogram.testing.recording_settings import RecordingSettings

SessionMode = Literal["record", "replay", "replay_or_record", "live"]


class RecordingMissingError(OpenProgramError):
    """Replay-only mode and the test has no recording yet."""

    def __init__(self, path: str, command: str) -> None:
        self.path = path
        self.command = command
        super().__init__(
            f"no recording at {path} (record mode 'none' only replays); record it with "
            f"`{command}`, then commit it"
        )


class RecordingOnCiRefusedError(OpenProgramError):
    """A test would record (or call live) on CI, where recordings are replayed, not made."""

    def __init__(self, path: str, ci_value: str, *, live: bool = False) -> None:
        self.path = path
        self.ci_value = ci_value
        self.live = live
        allow = "pass --openprogram-allow-record-on-ci (or set OPENPROGRAM_ALLOW_RECORD_ON_CI=1)"
        if live:
            message = (
                f"refusing to call live providers for {path} on CI (CI={ci_value}): run it "
                f"live locally, or {allow} to call them here anyway"
            )
        else:
            message = (
                f"refusing to record {path} on CI (CI={ci_value}): record locally and commit "
                f"the recording, or {allow} to record here anyway"
            )
        super().__init__(message)


class RecordingSession:
    """What the ``openprogram_recording`` fixture yields.

    ``path`` is where the test's recording lives; ``mode`` is ``"replay"``, ``"record"``,
    ``"replay_or_record"`` (``new_episodes`` with a recording) or ``"live"``; ``replay`` the
    :class:`ReplayProvider` answering the test's calls from the recording (None when
    recording afresh or live). While recording, the calls go to a temporary file; the
    recording changes when the test passes.
    """

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
        http_headers: Iterable[str] = (),
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
        self.http_headers = frozenset(http_headers)
        """Request headers stored and compared besides the semantic ones."""
        self.settings: RecordingSettings | None = None
        """The settings the fixture opened the session with (None outside the fixture)."""
        self.saved: SavedRecording | None = None
        """What :meth:`finish` made of the recording (None: it was left as it was)."""
        self.left_calls_unconsumed = False
        """Whether the test's body returned with recorded calls never requested (replay)."""
        self._mismatches_reported = 0

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
        block (see the module's docstring)."""
        hosts, headers = self.passthrough_hosts, self.http_headers
        if self.mode == "replay":
            assert self.replay is not None
            http = HttpBoundary(
                "replay",
                session=self.replay.session,
                passthrough_hosts=hosts,
                extra_headers=headers,
            )
            restore_keys = set_placeholder_keys()
            tapes = TapePlayer(self.replay.session)
            try:
                with both_boundaries_active(replay_transform(self.replay), http, tapes):
                    yield
            finally:
                restore_keys()
            return
        restore_keys = hide_placeholder_keys()
        try:
            with self._live_boundaries():
                yield
        finally:
            restore_keys()

    @contextmanager
    def _live_boundaries(self) -> Iterator[None]:
        hosts, headers = self.passthrough_hosts, self.http_headers
        if self.mode == "live":
            from openprogram.providers.api_registry import process_wide_scope

            with process_wide_scope(transform=None):  # whatever the configured mode says
                yield
            return
        if self.merge is not None:
            from openprogram.providers.replay_or_record import replay_or_record_transform

            http = HttpBoundary(
                "replay_or_record", merge=self.merge, passthrough_hosts=hosts, extra_headers=headers
            )
            transform = replay_or_record_transform(self.merge)
            with both_boundaries_active(transform, http, TapeRecorder(self.merge.writer)):
                yield
            return
        assert self._write_path is not None
        writer = writer_for(self._write_path)
        http = HttpBoundary("record", writer=writer, passthrough_hosts=hosts, extra_headers=headers)
        with both_boundaries_active(record_transform(self._write_path), http, TapeRecorder(writer)):
            yield

    def problem_after_call(self) -> str | None:
        """Why a test whose body passed fails after all: a replay mismatch the code under
        test caught, or recorded calls it never made (not under ``new_episodes``, which
        drops them). None if there is nothing wrong."""
        if self.replay is None:
            return None
        problem = self._new_mismatch_problem()
        if problem is not None or self.merge is not None:
            return problem
        try:
            self.replay.assert_consumed()
        except UnconsumedCallsError as error:
            self.left_calls_unconsumed = True
            return f"{error}\nif the change is intended, re-record: {self.rerecord_command}"
        return None

    def problem_at_teardown(self) -> str | None:
        """A mismatch caught and swallowed after the test body (in a fixture's teardown)."""
        return None if self.replay is None else self._new_mismatch_problem()

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
        if isinstance(error, ReplayMismatch | UnconsumedCallsError):
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
        saved = self.saved
        if saved is not None:
            outcome.recorded_calls = saved.live_calls
            outcome.dropped_calls = saved.dropped_calls
            outcome.difference = saved.difference
        if self.replay is None:
            return outcome
        session = self.replay.session
        served = self.merge.replayed_calls if self.merge is not None else session.served_calls
        outcome.replayed_calls = served
        if self.merge is None:
            outcome.unconsumed_calls = session.unconsumed_calls
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
    from openprogram.recordings.call_usage import call_tokens

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


def open_recording_session(
    path: Path,
    *,
    record_mode: RecordMode,
    display_path: str,
    test_argument: str,
    allow_record_on_ci: bool = False,
    ignore_fields: Iterable[str] = (),
    match: str = DEFAULT_MATCHING,
    passthrough_hosts: Iterable[str] = (),
    http_headers: Iterable[str] = (),
    tools: Mapping[str, str] | None = None,
    user_redaction: UserRedaction | None = None,
    environ: Mapping[str, str] = os.environ,
) -> RecordingSession:
    """Prepare the recording at ``path``: validate it for replay, or open a temporary file
    to record into (the caller must then :meth:`~RecordingSession.finish` it).

    ``tools`` says how replay treats each agent tool, by name or ``"*"``: ``live`` (the
    default), ``replay`` or ``check`` (see :mod:`openprogram.recording.tool_policies`).
    ``user_redaction``: the user's own redaction, applied to everything written and to both
    sides of every comparison.

    Raises :class:`RecordingMissingError`, :class:`RecordingOnCiRefusedError`, or
    :class:`~openprogram.errors.RecordingFileError` when the recording cannot be read or the
    folder cannot be written.
    """

    def session(**kind: Any) -> RecordingSession:
        return RecordingSession(
            path,
            record_mode=record_mode,
            display_path=display_path,
            test_argument=test_argument,
            passthrough_hosts=passthrough_hosts,
            http_headers=http_headers,
            **kind,
        )

    def replay() -> ReplayProvider:
        provider = ReplayProvider(
            path, ignore_fields=ignore_fields, match=match, redaction=user_redaction
        )
        TapePlayer(provider.session).use_tool_policies(dict(tools or {}))
        return provider

    exists = path.exists()
    if record_mode in ("none", "once") and exists:
        return session(replay=replay(), existed=True)
    if record_mode == "none":
        raise RecordingMissingError(display_path, record_command("once", test_argument))
    if env_flag(environ, "CI") and not (
        allow_record_on_ci or env_flag(environ, "OPENPROGRAM_ALLOW_RECORD_ON_CI")
    ):
        raise RecordingOnCiRefusedError(display_path, environ["CI"], live=record_mode == "live")
    if record_mode == "live":
        return session(live=True, existed=exists)
    replayed = None
    if record_mode == "new_episodes" and exists:  # else: once, all, rewrite record afresh
        replayed = replay()
    write_path = _new_write_path(path, display_path, user_redaction)
    return session(replay=replayed, write_path=write_path, existed=exists)


def _new_write_path(path: Path, display_path: str, user_redaction: UserRedaction | None) -> Path:
    """A private temporary file next to ``path`` holding a new recording's header."""
    try:
        make_private_dirs(path.parent)
        folder = Path(tempfile.mkdtemp(prefix=".openprogram-recording-", dir=path.parent))
    except OSError as exc:
        raise RecordingFileError(
            display_path,
            f"cannot create the recording ({exc.strerror or exc})",
            advice="check the recordings folder is writable",
        ) from None
    write_path = folder / path.name
    try:
        writer = writer_for(write_path)
        writer.user_redaction = user_redaction
        writer.open()  # the header, so a test making no call still records
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return write_path
