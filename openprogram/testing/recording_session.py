"""Opening one test's recording: which session its record mode asks for, or why none.

:func:`open_recording_session` decides from the record mode and whether the file exists:

* ``none`` replays, and refuses a missing recording (:class:`RecordingMissingError`);
* ``drift`` is ``none`` for the test (it replays; a missing recording is refused); after the
  test's body passed, the plugin sends the calls it was served live and compares the answers
  (:mod:`~openprogram.testing.drift_mode`);
* ``once`` replays an existing recording and records a missing one;
* ``new_episodes`` records a missing recording; for an existing one, it replays each request
  the recording holds an equal unconsumed call for and records every other live (a
  :class:`~openprogram.recording.rewriting.RecordingMerge`);
* ``all`` (and its other name ``rewrite``) records afresh;
* ``live`` installs nothing that records or replays: every call goes to the real providers.

Recording writes into a private temporary folder next to the recording, opened here with the
recording's header, so a test that makes no call still records. Recording — and calling live
— refuses to run on CI (``CI`` set to ``true``, ``1`` or ``yes``) unless explicitly allowed
(:class:`RecordingOnCiRefusedError`). The user's own redaction (patterns, a function) applies
to everything the test writes and to both sides of every comparison.

What the session then does — installed at both boundaries while the test runs, judged after,
finished — is :class:`~openprogram.testing.session_lifecycle.RecordingSession`, importable
from this module too."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import RecordingFileError, RecordingMissingError, RecordingOnCiRefusedError
from openprogram.private_files import make_private_dirs
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.recording.difference import DEFAULT_MATCHING
from openprogram.recording.writer import writer_for
from openprogram.testing.recording_paths import TEMPORARY_FOLDER_PREFIX
from openprogram.testing.recording_settings import RecordMode, env_flag, record_command
from openprogram.testing.session_lifecycle import RecordingSession

if TYPE_CHECKING:
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["open_recording_session"]


def open_recording_session(
    path: Path,
    *,
    record_mode: RecordMode,
    display_path: str,
    test_argument: str,
    allow_record_on_ci: bool = False,
    ignore_fields: Iterable[str] = (),
    compare_loopback_ports: bool = False,
    match: str = DEFAULT_MATCHING,
    passthrough_hosts: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    http_headers: Iterable[str] = (),
    tools: Mapping[str, str] | None = None,
    user_redaction: UserRedaction | None = None,
    environ: Mapping[str, str] = os.environ,
) -> RecordingSession:
    """Prepare the recording at ``path``: validate it for replay, or open a temporary file
    to record into (the caller must then :meth:`~RecordingSession.finish` it).

    ``tools`` says how replay treats each agent tool, by name or ``"*"``: ``live`` (the default),
    ``replay`` or ``check`` (see :mod:`openprogram.recording.tape_replay`). ``user_redaction``: the
    user's own redaction, applied to everything written and to both sides of every comparison.

    Raises :class:`RecordingMissingError`, :class:`RecordingOnCiRefusedError`, or
    :class:`~openprogram.errors.RecordingFileError` when the recording cannot be read or the
    folder cannot be written."""

    def session(**kind: Any) -> RecordingSession:
        return RecordingSession(
            path,
            record_mode=record_mode,
            display_path=display_path,
            test_argument=test_argument,
            passthrough_hosts=passthrough_hosts,
            allowed_hosts=allowed_hosts,
            http_headers=http_headers,
            user_redaction=user_redaction,
            **kind,
        )

    def replay() -> ReplayProvider:
        return ReplayProvider(
            path,
            ignore_fields=ignore_fields,
            compare_loopback_ports=compare_loopback_ports,
            match=match,
            redaction=user_redaction,
            tools=tools,
        )

    exists = path.exists()
    if record_mode in ("none", "once", "drift") and exists:
        return session(replay=replay(), existed=True)
    if record_mode in ("none", "drift"):
        raise RecordingMissingError(
            display_path, record_command("once", test_argument), mode=record_mode
        )
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
        folder = Path(tempfile.mkdtemp(prefix=TEMPORARY_FOLDER_PREFIX, dir=path.parent))
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
