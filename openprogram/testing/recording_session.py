"""One test's recording: record or replay it at both boundaries, for that test only.

:func:`open_recording_session` decides from the record mode and whether the file exists:

* ``none`` replays, and refuses a missing recording (:class:`RecordingMissingError`);
* ``once`` replays an existing recording and records a missing one;
* ``all`` records afresh.

Recording writes into a private temporary folder next to the recording and moves the file
into place only when the test passed (:meth:`RecordingSession.finish`): a test that fails
while recording leaves the previous recording, if any, as it was, and never leaves half a
session behind. Recording refuses to run on CI (``CI`` set to ``true``, ``1`` or ``yes``)
unless explicitly allowed (:class:`RecordingOnCiRefusedError`).

:meth:`RecordingSession.installed` installs record or replay on both boundaries — the
provider registry (a process-wide registry scope of its own, so it overrides whatever mode
the user's configuration set, and the registry is exactly as before once the test ends) and
every httpx / httpx2 client (the official SDKs stand on them) — for every thread and task
of the process while the test runs: its body, the fixtures it uses, the asyncio tasks they
start, and threads and executor workers too. Record wraps every registered api in a
``RecordingProvider`` and records every HTTP exchange, all into the test's one file; replay
answers every api, registered or not, with one ``ReplayProvider`` and every HTTP request
from the same replay session, each request paired with a recorded call by the session's
matching (by content unless the test asks for ``order``). Under replay ``OPENAI_API_KEY`` and
``ANTHROPIC_API_KEY`` are set to a placeholder while the test runs, when unset.

Taped functions and agent tools (``openprogram.tapes``) record into the same file and replay
from the same session: a tape entry that differs fails the test like a call that differs,
and entries never read fail it like calls never requested.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from openprogram.activation.boundaries import both_boundaries_active
from openprogram.activation.placeholders import set_placeholder_keys
from openprogram.errors import OpenProgramError, RecordingFileError
from openprogram.http.boundary import HttpBoundary
from openprogram.private_files import make_private_dirs
from openprogram.providers.activation import record_transform, replay_transform
from openprogram.providers.replay import ReplayProvider
from openprogram.recording.matching import DEFAULT_MATCHING
from openprogram.recording.mismatch import ReplayMismatch, UnconsumedCallsError
from openprogram.recording.writers import forget_writer, writer_for
from openprogram.tapes.deck import TapePlayer, TapeRecorder
from openprogram.testing.record_modes import RecordMode, env_flag, record_command


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
    """A test would record on CI, where recordings are replayed, not made."""

    def __init__(self, path: str, ci_value: str) -> None:
        self.path = path
        self.ci_value = ci_value
        super().__init__(
            f"refusing to record {path} on CI (CI={ci_value}): record locally and commit the "
            "recording, or pass --openprogram-allow-record-on-ci "
            "(or set OPENPROGRAM_ALLOW_RECORD_ON_CI=1) to record here anyway"
        )


class RecordingSession:
    """What the ``openprogram_recording`` fixture yields.

    ``path`` is where the test's recording lives, ``mode`` is ``"record"`` or ``"replay"``,
    ``replay`` the :class:`ReplayProvider` answering the test's calls (None when recording).
    While recording, the calls go to a temporary file that becomes ``path`` when the test
    passes.
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
        passthrough_hosts: Iterable[str] = (),
        http_headers: Iterable[str] = (),
    ) -> None:
        self.path = path
        self.record_mode: RecordMode = record_mode
        self.mode: Literal["record", "replay"] = "replay" if replay is not None else "record"
        self.replay = replay
        self.display_path = display_path
        self.test_argument = test_argument
        self._write_path = write_path
        self.passthrough_hosts = frozenset(passthrough_hosts)
        """Hosts whose HTTP requests are sent live and never recorded."""
        self.http_headers = frozenset(http_headers)
        """Request headers stored and compared besides the semantic ones."""
        self._mismatches_reported = 0

    def __repr__(self) -> str:
        return f"<RecordingSession {self.mode} {self.display_path}>"

    @property
    def rerecord_command(self) -> str:
        return record_command("all", self.test_argument)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Record or replay at both boundaries, in every thread and task, inside this block
        (see the module's docstring)."""
        hosts, headers = self.passthrough_hosts, self.http_headers
        if self.replay is None:
            assert self._write_path is not None
            transform = record_transform(self._write_path)
            writer = writer_for(self._write_path)
            http = HttpBoundary(
                "record", writer=writer, passthrough_hosts=hosts, extra_headers=headers
            )
            with both_boundaries_active(transform, http, TapeRecorder(writer)):
                yield
            return
        http = HttpBoundary(
            "replay", session=self.replay.session, passthrough_hosts=hosts, extra_headers=headers
        )
        restore_keys = set_placeholder_keys()
        tapes = TapePlayer(self.replay.session)
        try:
            with both_boundaries_active(replay_transform(self.replay), http, tapes):
                yield
        finally:
            restore_keys()

    def problem_after_call(self) -> str | None:
        """Why a test whose body passed fails after all: a replay mismatch the code under
        test caught, or recorded calls it never made. None if there is nothing wrong."""
        if self.replay is None:
            return None
        problem = self._new_mismatch_problem()
        if problem is not None:
            return problem
        try:
            self.replay.assert_consumed()
        except UnconsumedCallsError as error:
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
        if self.replay is None:
            error.add_note(
                "openprogram: the test failed while recording, so its new recording was "
                f"discarded ({self.display_path} is unchanged)"
            )
            return
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
        """Close the recording; when recording, keep it only if the test ``passed``."""
        if self._write_path is None:
            return
        write_path, folder = self._write_path, self._write_path.parent
        forget_writer(write_path)
        try:
            if passed:
                _flush_to_disk(write_path)
                os.replace(write_path, self.path)
        except OSError as exc:
            raise RecordingFileError(
                self.display_path,
                f"cannot save the new recording ({exc.strerror or exc})",
                advice="check the recordings folder is writable and the disk has space",
            ) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _caused_by(error: BaseException, cause: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if current is cause:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _flush_to_disk(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
    environ: Mapping[str, str] = os.environ,
) -> RecordingSession:
    """Prepare the recording at ``path``: validate it for replay, or open a temporary file
    to record into (the caller must then :meth:`~RecordingSession.finish` it).

    ``tools`` says how replay treats each agent tool, by name or ``"*"``: ``live`` (the
    default), ``replay`` or ``check`` (see :mod:`openprogram.recording.tool_policies`).

    Raises :class:`RecordingMissingError`, :class:`RecordingOnCiRefusedError`, or
    :class:`~openprogram.errors.RecordingFileError` when the recording cannot be read or the
    folder cannot be written.
    """
    if record_mode != "all" and path.exists():
        replay = ReplayProvider(path, ignore_fields=ignore_fields, match=match)
        TapePlayer(replay.session).use_tool_policies(dict(tools or {}))
        return RecordingSession(
            path,
            record_mode=record_mode,
            display_path=display_path,
            test_argument=test_argument,
            replay=replay,
            passthrough_hosts=passthrough_hosts,
            http_headers=http_headers,
        )
    if record_mode == "none":
        raise RecordingMissingError(display_path, record_command("once", test_argument))
    if env_flag(environ, "CI") and not (
        allow_record_on_ci or env_flag(environ, "OPENPROGRAM_ALLOW_RECORD_ON_CI")
    ):
        raise RecordingOnCiRefusedError(display_path, environ["CI"])
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
        writer_for(write_path).open()  # the header, so a test making no call still records
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return RecordingSession(
        path,
        record_mode=record_mode,
        display_path=display_path,
        test_argument=test_argument,
        write_path=write_path,
        passthrough_hosts=passthrough_hosts,
        http_headers=http_headers,
    )
