"""The recordings one server records and replays at once: its own, and one per test.

Test runners run test files in parallel against one server (Vitest, Jest), so a request
names its recording itself — never a "current" recording the server would switch:

* a request under a session path (``/__openprogram/s/<id>/openai/v1/…``) belongs to the
  session the control API opened (``POST /__openprogram/sessions``) and returned that path
  for; ``DELETE`` ends it and answers its account;
* a request with the header ``x-openprogram-recording: NAME`` belongs to the session of that
  name, opened at its first request (``x-openprogram-mode`` gives its mode); it ends when the
  server stops;
* any other request belongs to the server's own recording (``serve --record/--replay``, or
  the configured mode), and is refused when the server has none.

A session's mode is ``replay`` (served from the recording, which must exist), ``record`` (recorded
anew: the calls go to a file beside the recording, which replaces it when the session ends and keeps
it — a session that fails part-way never spoils a good recording) or ``once`` (replay when the
recording holds calls, else record). Names are the store's recording names, and ``/`` between them
makes folders: ``agent-test/streams-a-reply`` becomes ``<folder>/agent-test/streams-a-reply.jsonl``
under the server's recordings folder — never a link, never through a linked folder, never a file
that is not a regular one. A session opened through the control API has an id of 128 random bits.

Each session's :class:`SessionAccount` says what it did: the calls it recorded or served,
every mismatch, the recorded calls never requested."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from openprogram.activation.boundaries import prepare_boundaries
from openprogram.activation.configured import recording_plan
from openprogram.activation.plan import RecordReplayPlan
from openprogram.errors import OpenProgramError, RecordingFileError, RecordingNameError
from openprogram.private_files import make_private_dirs
from openprogram.provider_boundary.codec import read_for_replay
from openprogram.recording.writer import forget_writer
from openprogram.serving.replay_passes import ReplayPasses, RequestSections
from openprogram.serving.trust import RECORDING_HEADER
from openprogram.store.names import RECORDING_SUFFIX, refuse_links_below, validate_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from openprogram.config.models import RecordReplaySettings
    from openprogram.http_boundary.boundary import HttpBoundary

__all__ = [
    "MODE_HEADER",
    "RECORDING_HEADER",
    "SESSION_MODES",
    "ProxySession",
    "SessionAccount",
    "SessionRefused",
    "SessionTable",
]

MODE_HEADER = "x-openprogram-mode"
SESSION_MODES = ("replay", "record", "once")
SessionMode = Literal["replay", "record", "once"]
PARTIAL_SUFFIX = ".recording"
"""What a recording recorded anew is written to until its session ends."""
SESSION_ADVICE = "use another name"
_ORIGIN = ("url.scheme", "url.host", "url.port")


class SessionRefused(Exception):
    """A request or control call the server refuses: ``status`` and ``kind`` (the error body's
    type) for its answer."""

    def __init__(self, message: str, *, status: int = 412, kind: str = "openprogram_refused"):
        self.status = status
        self.kind = kind
        super().__init__(message)


@dataclass
class SessionAccount:
    """What one session did."""

    name: str
    mode: str
    path: str | None
    calls: int = 0
    """record: the calls recorded; replay: the calls served."""
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    """Each mismatch: ``report`` (the two-line report), ``call_index``, ``field_path``."""
    unconsumed: list[int] = field(default_factory=list)
    """The calls never requested (of the last pass, when there were several)."""
    unconsumed_reports: list[str] = field(default_factory=list)
    """What each pass left unrequested, a line each (``pass N: …`` when there were several)."""
    refused: list[str] = field(default_factory=list)
    """Why requests were refused (blocked record/replay, a recording that cannot be written)."""
    kept: bool = True
    """record: the recording was kept (False: a session ended with ``keep: false``)."""
    passes: int = 1
    """replay: the passes over the recording, one per run of the program
    (:mod:`~openprogram.serving.replay_passes`); each problem names its pass when several."""
    passes_with_problems: int = 0
    """replay: the passes with a mismatch or calls never requested."""

    @property
    def unconsumed_report(self) -> str | None:
        """The calls never requested, in a line per pass that left some (None: none)."""
        return "\n".join(self.unconsumed_reports) or None

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.unconsumed_report or self.refused)

    @property
    def problems(self) -> list[str]:
        """The mismatch reports, the refusals, then the unconsumed report (calls left
        unrequested are often what a mismatch left), one string each."""
        return (
            [entry["report"] for entry in self.mismatches] + self.refused + self.unconsumed_reports
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "path": self.path,
            "ok": self.ok,
            "report": "\n".join(self.problems) or None,
            "calls": self.calls,
            "mismatches": self.mismatches,
            "unconsumed": self.unconsumed,
            "unconsumed_report": self.unconsumed_report,
            "refused": self.refused,
            "kept": self.kept,
            "passes": self.passes,
        }


class ProxySession:
    """One recording the server records or replays (or, ``blocked``, refuses every request
    of), through its own HTTP boundary."""

    def __init__(
        self,
        name: str,
        plan: RecordReplayPlan,
        *,
        target: Path | None = None,
        session_id: str | None = None,
        opened_mode: str | None = None,
        missing: str | None = None,
        again: bool = False,
    ) -> None:
        self.name = name
        self.plan = plan
        self.missing = missing
        """Why a session to replay has no recording: each request is refused with it (a
        test that makes no call needs none)."""
        self.opened_mode = opened_mode or plan.mode
        """The mode it was opened in (``once`` too)."""
        self.target = target
        """record anew: the recording the file recorded into replaces when the session ends."""
        self.session_id = session_id
        # relays: what a recorded client stopped reading is cut, not a mismatch (the
        # server reads every byte; the client behind it decides)
        # The upstream is the server's to choose, not the program's: replay compares the
        # path a request asks for, not the origin it would have been forwarded to.
        self.passes: ReplayPasses | None = None
        """replay: the passes over the recording (``again``: a new one per run of the
        program, see :mod:`~openprogram.serving.replay_passes`; else one)."""
        if plan.mode == "replay" and missing is None:
            plan = dataclasses.replace(plan, ignore_fields=(*plan.ignore_fields, *_ORIGIN))
            self.passes = ReplayPasses(again=again)
        make_session = None if self.passes is None else self.passes.first
        self.boundary: HttpBoundary = dataclasses.replace(
            prepare_boundaries(plan, make_session=make_session).http, relays=True
        )
        self.calls = 0
        self.refused: list[str] = []
        self.ended: SessionAccount | None = None

    @property
    def mode(self) -> str:
        return self.plan.mode

    @property
    def path(self) -> Path | None:
        """The recording (for one recorded anew, the recording it will replace)."""
        return self.target or self.plan.path

    def boundary_for(
        self, request: Callable[[], RequestSections]
    ) -> tuple[HttpBoundary, str | None]:
        """The boundary a request is taken by, beginning a new pass over the recording first
        when the request begins one (``request`` makes its sections, only if that must be
        decided); and why a pass began (None: none did)."""
        began = None if self.passes is None else self.passes.begin_if_new(request)
        if began is not None:
            assert self.passes is not None
            self.boundary = dataclasses.replace(self.boundary, session=self.passes.current)
        return self.boundary, began

    @classmethod
    def without_recording(cls, name: str, target: Path, reason: str) -> ProxySession:
        """A session to replay ``target``, which holds nothing: its requests are refused
        with ``reason``."""
        return cls(name, RecordReplayPlan.blocked(reason, target), missing=reason)

    def refuse(self, reason: str) -> None:
        """Note a request refused for ``reason`` (each reason once)."""
        if reason not in self.refused:
            self.refused.append(reason)

    def account(self) -> SessionAccount:
        """What the session did so far."""
        path = None if self.path is None else str(self.path)
        account = SessionAccount(self.name, self.mode, path, refused=list(self.refused))
        if self.passes is None:
            account.calls = self.calls
            return account
        passes = self.passes.account()
        account.calls = passes.calls
        account.passes = passes.passes
        account.passes_with_problems = passes.with_problems
        account.mismatches = passes.mismatches
        account.unconsumed = passes.unconsumed
        account.unconsumed_reports = passes.unconsumed_reports
        return account

    def end(self, *, keep: bool = True) -> SessionAccount:
        """End the session (once): a recording recorded anew replaces the one it was recorded
        for (``keep``) or is thrown away."""
        if self.ended is not None:
            return self.ended
        account = self.account()
        recorded = self.plan.path
        if self.plan.mode == "record" and recorded is not None and self.target is not None:
            # a session recorded anew: it replaces its recording, unless it is thrown away
            # or recorded no call (a test that makes none needs no recording)
            forget_writer(recorded)
            account.kept = keep and self.calls > 0
            if account.kept:
                os.replace(recorded, self.target)
            else:
                with contextlib.suppress(OSError):
                    recorded.unlink()
        self.ended = account
        return account


class SessionTable:
    """The server's sessions: its own, the control API's (by id) and the header's (by
    name). Used from the server's one event loop."""

    def __init__(
        self,
        own: ProxySession | None,
        *,
        folder: Path,
        settings: RecordReplaySettings,
        again: bool = False,
    ) -> None:
        self.own = own
        self.folder = folder
        self.settings = settings
        self.again = again
        """A session named by the header replays its recording again for each run of the
        program (a pass each, :mod:`~openprogram.serving.replay_passes`), as the server's
        own does; a session of the control API is one run, opened and ended by its test."""
        self.default_mode: SessionMode = (
            "record" if own is not None and own.mode == "record" else "replay"
        )
        """A session's mode when its opener names none: the server's own recording's."""
        self.by_id: dict[str, ProxySession] = {}
        self.by_name: dict[str, ProxySession] = {}
        self.ended: list[SessionAccount] = []

    def for_request(
        self, session_id: str | None, name: str | None, mode: str | None
    ) -> ProxySession:
        """The session a request belongs to: the control API's ``session_id`` (from its
        path), else the header's recording ``name`` (opened in ``mode`` at its first
        request), else the server's own; :class:`SessionRefused` when there is none."""
        if session_id is not None:
            session = self.by_id.get(session_id)
            if session is None:
                raise SessionRefused(
                    f"no open session {session_id!r}: it ended, or was never opened "
                    "(POST /__openprogram/sessions opens one)",
                    status=404,
                    kind="openprogram_no_session",
                )
            return session
        if name is not None:
            session = self.by_name.get(name)
            if session is None:
                return self.open(name, mode, by_header=True)
            if mode is not None and mode != session.opened_mode:
                raise SessionRefused(
                    f"recording {name!r} is open in mode {session.opened_mode!r}, "
                    f"not {mode!r}: one mode per recording and server run",
                    status=409,
                    kind="openprogram_session_conflict",
                )
            return session
        if self.own is None:
            raise SessionRefused(
                "this request names no recording, and the server has none of its own: send "
                f"the header {RECORDING_HEADER}: NAME, use a session's base URL "
                "(POST /__openprogram/sessions), or start the server with --record or --replay",
                kind="openprogram_no_recording",
            )
        return self.own

    def open(self, name: str, mode: str | None, *, by_header: bool = False) -> ProxySession:
        """Open a session recording or replaying ``name`` in ``mode`` (None: the default);
        :class:`SessionRefused` for a bad name or mode, a name in use, or a recording that
        cannot be used."""
        chosen = self._mode(mode)
        target = self.path_of(name)
        own = self.own
        if name in self.by_name or (own is not None and own.path == target):
            raise SessionRefused(
                f"a session already records or replays {name!r}: end it first, or use another name",
                status=409,
                kind="openprogram_session_conflict",
            )
        session = self._session(name, chosen, target, again=by_header and self.again)
        if not by_header:
            session.session_id = secrets.token_urlsafe(16)  # 128 bits: never guessed
            self.by_id[session.session_id] = session
        self.by_name[name] = session
        return session

    def _mode(self, mode: str | None) -> SessionMode:
        if mode is None or mode == "":
            return self.default_mode
        if mode not in SESSION_MODES:
            raise SessionRefused(
                f"mode {mode!r} is not one of {', '.join(SESSION_MODES)}",
                status=400,
                kind="openprogram_bad_session",
            )
        return mode  # type: ignore[return-value]

    def path_of(self, name: str) -> Path:
        """The recording ``name`` means: names separated by ``/``, each a store name, under
        the server's folder — never through a link (a folder or the recording itself),
        never a file that is not a regular one."""
        parts = name.split("/")
        try:
            for part in parts:
                validate_name(part)
        except RecordingNameError as error:
            raise SessionRefused(
                f"recording {name!r}: {error} ('/' may separate folders)",
                status=400,
                kind="openprogram_bad_session",
            ) from None
        path = self.folder.joinpath(*parts[:-1], parts[-1] + RECORDING_SUFFIX)
        try:
            refuse_links_below(
                self.folder, path, folder_name="the server's folder", advice=SESSION_ADVICE
            )
        except RecordingFileError as error:
            raise SessionRefused(
                f"recording {name!r}: {error}", status=400, kind="openprogram_bad_session"
            ) from None
        return path

    def _session(
        self, name: str, opened: SessionMode, target: Path, *, again: bool
    ) -> ProxySession:
        mode = opened
        holds_calls = _holds_calls(target)
        if mode == "once":
            mode = "replay" if holds_calls else "record"
        try:
            if mode == "replay" and not holds_calls:
                reason = (
                    f"recording {name!r} does not exist or holds no call ({target}): record "
                    "it first (mode once or record)"
                )
                return ProxySession.without_recording(name, target, reason)
            if mode == "replay":
                plan = recording_plan("replay", target, self.settings)
                return ProxySession(name, plan, opened_mode=opened, again=again)
            make_private_dirs(target.parent)
            partial = target.with_name(target.name + PARTIAL_SUFFIX)
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()  # what a server killed part-way left
            plan = recording_plan("record", partial, self.settings)
            return ProxySession(name, plan, target=target, opened_mode=opened)
        except (OpenProgramError, OSError) as error:
            raise SessionRefused(
                f"recording {name!r}: {error}", status=400, kind="openprogram_bad_session"
            ) from None

    def close(self, session_id: str, *, keep: bool = True) -> SessionAccount:
        """End the control API's session ``session_id``; its account."""
        session = self.by_id.pop(session_id, None)
        if session is None:
            raise SessionRefused(
                f"no open session {session_id!r}", status=404, kind="openprogram_no_session"
            )
        self.by_name.pop(session.name, None)
        account = session.end(keep=keep)
        self.ended.append(account)
        return account

    def end_all(self) -> list[SessionAccount]:
        """End every session still open (the server stops); every session's account, the
        server's own first."""
        accounts: list[SessionAccount] = []
        if self.own is not None:
            accounts.append(self.own.end())
        for session in list(self.by_name.values()):
            self.ended.append(session.end())
        self.by_id.clear()
        self.by_name.clear()
        return accounts + self.ended

    def open_sessions(self) -> list[ProxySession]:
        return list(self.by_name.values())


def _holds_calls(path: Path) -> bool:
    """Whether the recording at ``path`` exists and holds something to replay."""
    try:
        if os.stat(path).st_size == 0:
            return False
    except OSError:
        return False
    try:
        recording = read_for_replay(path)
    except OpenProgramError:
        return True  # replay says what is wrong with it
    return bool(recording.calls or recording.tapes)
