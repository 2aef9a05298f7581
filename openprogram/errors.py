"""The exception tree of openprogram, and the one place to import any of its errors from.

    OpenProgramError                      base of every error openprogram raises on purpose
    ├── ConfigError                       config.toml or an OPENPROGRAM_* variable is wrong
    ├── ActiveRecordingUnknownError       the configuration cannot be read, so delete and
    │                                     prune cannot tell which recording is active
    ├── ModelReferenceError (+ValueError) a model is not written ``api:model-id``
    ├── UnknownApiError (+LookupError)    no provider is registered for ``model.api``
    ├── MissingApiKeyError                a provider needs a key and none was found
    ├── ProviderRuntimeError              the provider runtime failed to initialize
    ├── RecordReplayBlockedError          record/replay is configured but could not start
    ├── ToolDefinitionError (+TypeError)  a function cannot be made into an agent tool
    ├── ToolInputError                    a built-in tool cannot do what the model asked
    ├── UnrecordableValueError (+ValueError)
    │                                     a request or event a recording cannot hold
    ├── UserRedactionError (+ValueError)  a redaction pattern or function that cannot be
    │                                     used (a bad regular expression, a failing function)
    ├── RecordingFileError                a recording cannot be read (file, line, call)
    ├── CassetteError                     a vcrpy cassette cannot be imported (file, line)
    ├── ReplayMismatch (+AssertionError)  an incoming request differs from the recording
    │   ├── RecordingTruncatedError       replay reached a call the recording cut short
    │   ├── ReplayInAnotherProcessError   ``exec``: a second process of the command asked
    │   │                                 for a call of the recording another one replays
    │   └── ToolTapesMissingError         a tool is to be replayed or checked, but the
    │                                     recording holds no tool results: record again
    ├── UnconsumedCallsError (+AssertionError)
    │                                     recorded calls were never requested (or tape
    │                                     entries never read)
    ├── RecordedProviderError             replay of a provider error of a non-builtin type
    ├── TapeValueError (+ValueError)      a value a tape cannot record, or a recorded
    │                                     result it cannot rebuild
    ├── RecordedTapeError                 replay of an exception a taped function raised,
    │                                     of a type replay cannot raise itself
    ├── ClockExhaustedError (+LookupError)
    │                                     a sequence clock was read more often than it
    │                                     has times
    ├── CanonicalJSONError (+ValueError)  a value the transcript hash cannot carry
    ├── RecordingNameError                a recording name that is empty, too long or invalid
    ├── RecordingExistsError              ``record NAME``: that name is taken in the store
    ├── RecordingNotFoundError            no recording by that name or path
    ├── RecordingRefusedError             a delete openprogram will not do (``reason``)
    ├── RecordingDeleteError              the operating system refused to remove a recording
    ├── PruneCriteriaError (+ValueError)  ``prune`` got no criterion, or a negative one
    ├── RecordingCallNotFoundError (+IndexError)
    │                                     ``show --call N``: the recording has no call N
    ├── VerifySetupError                  a recorded session that verify cannot re-run
    ├── ExecSetupError                    ``exec``: a command that cannot run with
    │                                     record/replay active, or that ran without it
    ├── ServeSetupError                   ``serve``: a server that cannot start (its port
    │                                     taken, a host not on loopback, no aiohttp)
    ├── RecordingMissingError             pytest: replay-only, and the test has no recording
    ├── RecordingOnCiRefusedError         pytest: a test would record (or call live) on CI
    ├── ReplayConnectionRefusedError      a connection under replay that no recording serves
    ├── ChildRefusedError                 under replay, a child process refused before it
    │                                     started (``children="refuse"``)
    ├── ChildReplayError (+AssertionError)
    │                                     a child process of a block broke its replay or
    │                                     recording (its problems, one line each)
    └── NetworkBlockedError               pytest: a test connected to another machine with
                                          the network blocked

Every one of them is defined here, and the modules that raise them import them from here: ``from
openprogram.errors import ReplayMismatch``. This module is the bottom of the house: importing it
imports nothing else of openprogram (the messages that show a field path or a set of calls load
:mod:`openprogram.recording.report`, itself a leaf, when the first such error is made).

Messages say what happened and what to do next, on one line (the replay mismatch report is
the one error allowed two lines). The facts are attributes, so callers never parse messages.
One exception raised on purpose is deliberately outside this tree: ``RecordReplayEscape``
(``openprogram.recording.mismatch``), a ``BaseException`` that is not an ``Exception``. It is
a carrier, not an error of its own: the HTTP boundary raises it from inside an HTTP client
with an ``OpenProgramError`` as ``.error`` (a ``ReplayMismatch``, a
``RecordReplayBlockedError``, a ``RecordingFileError``) and the same message, so that SDK
retry loops, which catch every ``Exception``, cannot catch, retry or rewrap that error. The
ways in (``record_replay()``, the pytest fixture, ``exec``) turn it back into ``.error``."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = [
    "ActiveRecordingUnknownError",
    "CanonicalJSONError",
    "CassetteError",
    "ChildRefusedError",
    "ChildReplayError",
    "ClockExhaustedError",
    "ConfigError",
    "ExecSetupError",
    "MissingApiKeyError",
    "ModelReferenceError",
    "NetworkBlockedError",
    "OpenProgramError",
    "ProviderRuntimeError",
    "PruneCriteriaError",
    "RecordReplayBlockedError",
    "RecordedProviderError",
    "RecordedTapeError",
    "RecordingCallNotFoundError",
    "RecordingDeleteError",
    "RecordingExistsError",
    "RecordingFileError",
    "RecordingMissingError",
    "RecordingNameError",
    "RecordingNotFoundError",
    "RecordingOnCiRefusedError",
    "RecordingRefusedError",
    "RecordingTruncatedError",
    "ReplayConnectionRefusedError",
    "ReplayInAnotherProcessError",
    "ReplayMismatch",
    "ServeSetupError",
    "TapeValueError",
    "ToolDefinitionError",
    "ToolInputError",
    "ToolTapesMissingError",
    "UnconsumedCallsError",
    "UnknownApiError",
    "UnrecordableValueError",
    "UserRedactionError",
    "VerifySetupError",
]


class OpenProgramError(Exception):
    """Base of every error openprogram raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take their facts as arguments, not the message: rebuild from the
        # message and the attributes, so errors survive pickling (pytest-xdist, processes).
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))


def _rebuild_error(
    cls: type[OpenProgramError], args: tuple[Any, ...], state: dict[str, Any]
) -> OpenProgramError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


def _plural(count: int, noun: str) -> str:
    """``1 call``, ``2 calls`` (as ``openprogram.recording.report.plural`` writes it)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _field_words(field_path: str, otherwise: str) -> str:
    """``field a.b`` (a long path cut as a report line shows it), or ``otherwise`` for the
    empty path."""
    # Imported here, as in ReplayMismatch: importing errors.py loads nothing else.
    from openprogram.recording import report

    return f"field {report.format_report_path(field_path)}" if field_path else otherwise


# --- configuration -------------------------------------------------------------------------

_REPAIR_ADVICE = "fix it or run `openprogram recordings off` to repair"
_ENV_ADVICE = "unset it or fix its value"


class ConfigError(OpenProgramError):
    """The configuration cannot be read or would be invalid.

    ``path``/``line``/``column`` say where in the file, ``key`` is the dotted key,
    ``env_var`` the environment variable at fault (then ``path`` is ``None``) and ``env_value``
    its value, unless it may hold a secret."""

    def __init__(
        self,
        problem: str,
        *,
        path: Path | None = None,
        line: int | None = None,
        column: int | None = None,
        key: str | None = None,
        env_var: str | None = None,
        env_value: str | None = None,
        advice: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = path
        self.line = line
        self.column = column
        self.key = key
        self.env_var = env_var
        self.env_value = env_value
        default_advice = _ENV_ADVICE if env_var else _REPAIR_ADVICE
        self.advice = advice if advice is not None else default_advice
        parts = [_config_place(path, line, column, env_var, env_value)]
        if key is not None and env_var is None:
            parts.append(key)
        message = ": ".join([*(part for part in parts if part), problem])
        super().__init__(f"{message}; {self.advice}" if self.advice else message)


def _config_place(
    path: Path | None,
    line: int | None,
    column: int | None,
    env_var: str | None,
    env_value: str | None,
) -> str:
    """Where a configuration problem is: ``VAR=value``, or the file, line and column."""
    if env_var is not None:
        return env_var if env_value is None else f"{env_var}={env_value}"
    if path is None:
        return ""
    if line is None:
        return str(path)
    if column is None:
        return f"{path}, line {line}"
    return f"{path}, line {line}, column {column}"


class ActiveRecordingUnknownError(OpenProgramError):
    """The configuration cannot be read, so which recording is active is unknown."""

    def __init__(self, config_path: Path, cause: str) -> None:
        self.config_path = config_path
        self.cause = cause
        super().__init__(
            f"the active recording is unknown: the configuration cannot be read ({cause}); "
            "fix the configuration or run `openprogram recordings off` first; nothing was deleted"
        )


# --- models and providers ------------------------------------------------------------------


class ModelReferenceError(OpenProgramError, ValueError):
    """A model reference is not ``api:model-id`` (see
    :func:`openprogram.config.models.split_model_reference`)."""

    def __init__(self, reference: str) -> None:
        self.reference = reference
        super().__init__(
            f"model {reference!r} is not api:model-id; write it like echo:echo or "
            "openai-completions:gpt-4o-mini (split at the first colon)"
        )


class UnknownApiError(OpenProgramError, LookupError):
    """No provider is registered for an api; ``closest`` is the registered api it most
    likely meant (a typo), or None."""

    def __init__(self, api: str, registered: list[str]) -> None:
        self.api = api
        self.registered = registered
        close = difflib.get_close_matches(api, registered, n=1)
        self.closest: str | None = close[0] if close else None
        known = ", ".join(registered) if registered else "none"
        super().__init__(
            f"no provider registered for api {api!r} (registered: {known}); "
            "register one with register_api_provider() or fix model.api"
        )


class MissingApiKeyError(OpenProgramError):
    """A provider requires credentials and none were given."""

    def __init__(self, api: str, env_var: str | None) -> None:
        self.api = api
        self.env_var = env_var
        where = f"set {env_var} or " if env_var else ""
        super().__init__(f"no API key for api {api!r}: {where}pass options.api_key")


class ProviderRuntimeError(OpenProgramError):
    """The provider runtime could not initialize; ``stage`` says where it failed."""

    def __init__(self, stage: str, cause: str) -> None:
        self.stage = stage
        self.cause = cause
        super().__init__(f"provider runtime failed during {stage}: {cause}")


_RECOVERY_COMMANDS = (
    "run `openprogram recordings status` to see why, "
    "or `openprogram recordings off` to turn record/replay off"
)


class RecordReplayBlockedError(OpenProgramError):
    """Record/replay is configured but could not start; no call may reach a provider."""

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(f"record/replay is blocked: {cause}; {_RECOVERY_COMMANDS}")


class RecordedProviderError(OpenProgramError):
    """Replay of a recorded provider error whose type is not a Python built-in.

    ``original_type`` is the recorded type name; the message is the recorded message."""

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        super().__init__(message)


# --- agent tools ---------------------------------------------------------------------------


class ToolDefinitionError(OpenProgramError, TypeError):
    """A tool cannot be built as given: ``tool`` names it, ``problem`` says why."""

    def __init__(self, tool: str, problem: str) -> None:
        self.tool = tool
        self.problem = problem
        super().__init__(f"tool {tool!r}: {problem}")


class ToolInputError(OpenProgramError):
    """A built-in tool cannot do what the model asked; the message says why."""


# --- recording -----------------------------------------------------------------------------


class UnrecordableValueError(OpenProgramError, ValueError):
    """A request or event holds a value a recording cannot hold faithfully.

    ``field_path`` is the whole path of the value within the row (``options.temperature``,
    ``event.tool_call.arguments.x``); ``problem`` says what is wrong with it."""

    def __init__(
        self, path: str, field_path: str, problem: str, advice: str, call_index: int | None
    ) -> None:
        self.path = path
        self.field_path = field_path
        self.problem = problem
        self.call_index = call_index
        call = "" if call_index is None else f" (call {call_index})"
        where = _field_words(field_path, "the row")
        super().__init__(f"cannot record into {path}{call}: {where} {problem}; {advice}")


class UserRedactionError(OpenProgramError, ValueError):
    """A redaction pattern that is not a usable regular expression, or a redaction function
    that failed or returned something other than a string."""


class RecordingFileError(OpenProgramError):
    """A recording cannot be read or written as one: the file, line and call say where."""

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        line: int | None = None,
        call_index: int | None = None,
        advice: str = "re-record the session, or fix or remove that line",
    ) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        self.call_index = call_index
        self.advice = advice
        where = path if line is None else f"{path}, line {line}"
        call = "" if call_index is None else f" (call {call_index})"
        tail = f"; {advice}" if advice else ""
        super().__init__(f"{where}: {problem}{call}{tail}")


class CassetteError(OpenProgramError):
    """A vcrpy cassette cannot be imported: the file, and the line, say where."""

    def __init__(self, path: str, problem: str, *, line: int | None = None) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"{where}: {problem}")


# --- replay --------------------------------------------------------------------------------


class ReplayMismatch(OpenProgramError, AssertionError):
    """An incoming request (or read position) differs from the recording.

    It subclasses :class:`AssertionError` as well, so a test runner reports it as a failure,
    not an error. ``difference`` is the :class:`~openprogram.recording.report.FirstDifference`
    it reports; the message is that difference as
    :func:`~openprogram.recording.report.format_report` writes it, the one message allowed two
    lines (three with a note). The other attributes are the difference's own fields."""

    def __init__(
        self,
        call_index: int,
        field_path: str,
        recorded: Any,
        incoming: Any,
        *,
        event_index: int | None = None,
        detail: str | None = None,
        note: str | None = None,
        tape: str | None = None,
    ) -> None:
        # Imported here, not at the top: errors.py is the bottom of the house, importing it
        # loads nothing, so the report formatter (a leaf) is loaded when a report is first
        # written; and called through its module: one formatter, wherever a report is written.
        from openprogram.recording import report

        self.difference = report.FirstDifference(
            call_index,
            field_path,
            recorded,
            incoming,
            event_index=event_index,
            detail=detail,
            note=note,
            tape=tape,
        )
        self.tape = tape
        """The tape whose entry ``call_index`` differs, when the drift is in a tape."""
        self.call_index = call_index
        self.field_path = field_path
        self.recorded = recorded
        self.incoming = incoming
        self.event_index = event_index
        self.note = note
        super().__init__(report.format_report(self.difference))


class RecordingTruncatedError(ReplayMismatch):
    """Replay reached a call the recording cut short (the recording process stopped)."""

    def __init__(self, path: str, call_index: int, event_count: int) -> None:
        self.path = path
        super().__init__(
            call_index,
            "event_index",
            event_count,
            event_count,
            event_index=event_count,
            detail=(
                f"the recording {path} was cut short here: call {call_index} has no "
                f"call_end after {event_count} events (the recording process stopped); "
                "re-record the session"
            ),
        )


class ReplayInAnotherProcessError(ReplayMismatch):
    """A process of an ``openprogram exec`` command asked for a call of the recording that
    another of its processes (``owner_pid``) replays: one recording is served by one process,
    in order, so a second one is refused instead of being served calls out of turn."""

    def __init__(self, call_index: int, owner_pid: int, pid: int) -> None:
        self.owner_pid = owner_pid
        self.pid = pid
        super().__init__(
            call_index,
            "process",
            owner_pid,
            pid,
            detail=(
                f"process {pid} asked for a call, but process {owner_pid} of this command "
                "replays the recording: one recording is replayed by one process; make the "
                "model calls from one process, or record each process into its own recording"
            ),
        )


class ToolTapesMissingError(ReplayMismatch):
    """A tool's policy is ``replay`` or ``check``, but the recording holds no tool results:
    it was made before agent tools were taped. Record it again. ``tape`` is the tape the
    tool's results would be on."""

    def __init__(self, path: str, tool: str, policy: str, *, tape: str) -> None:
        self.path = path
        self.tool = tool
        self.policy = policy
        super().__init__(
            0,
            "tape",
            None,
            tool,
            tape=tape,
            detail=(
                f"tool {tool!r} is to be replayed with policy {policy!r}, but {path} holds no "
                "tool results (it was recorded before agent tools were taped): record again"
            ),
        )


class UnconsumedCallsError(OpenProgramError, AssertionError):
    """Recorded calls were never requested, or recorded tape entries never read: the run
    ended earlier than the recording.

    ``unconsumed`` are the calls' indexes; ``tapes`` maps each tape with entries never read
    to their indexes and the number of entries the tape holds; ``appended_sessions`` the
    first call of each session recorded into the file after its first one (a file that holds
    several sessions is replayed as one, so one run of the program leaves the later ones)."""

    def __init__(
        self,
        path: str,
        unconsumed: list[int],
        total: int,
        *,
        tapes: Mapping[str, tuple[list[int], int]] | None = None,
        appended_sessions: list[int] | None = None,
    ) -> None:
        # Imported here, as in ReplayMismatch: importing errors.py loads nothing else.
        from openprogram.wording import which_calls

        self.path = path
        self.unconsumed = unconsumed
        self.total = total
        self.tapes = dict(tapes or {})
        self.appended_sessions = list(appended_sessions or [])
        parts: list[str] = []
        if unconsumed:
            which = which_calls(unconsumed)
            if total == 1:
                parts.append(f"the 1 recorded call was never requested ({which})")
            else:
                parts.append(
                    f"{len(unconsumed)} of {total} recorded calls never requested ({which})"
                )
        for tape, (entries, length) in self.tapes.items():
            which = which_calls(entries, unit=("entry", "entries"))
            if length == 1:
                parts.append(f"tape {tape}: the 1 recorded entry was never read ({which})")
            else:
                parts.append(
                    f"tape {tape}: {len(entries)} of {length} entries never read ({which})"
                )
        ending = "the run stopped before the recorded session did"
        if self.appended_sessions:
            later = len(self.appended_sessions)
            starts = which_calls(self.appended_sessions)
            ending = (
                f"the file holds {later + 1} sessions recorded one after the other (the later "
                f"{'one starts' if later == 1 else 'ones start'} at {starts}), and a replay "
                "serves them as one: record each session into its own file"
            )
        super().__init__(f"replay incomplete: {'; '.join(parts)} from {path}; {ending}")


# --- tapes ---------------------------------------------------------------------------------


class TapeValueError(OpenProgramError, ValueError):
    """A value a tape cannot record faithfully, or a recorded result it cannot rebuild.

    ``tape`` names the tape, ``field_path`` the value (``args.city``, ``result.temps[2]``)."""

    def __init__(self, tape: str, field_path: str, problem: str, advice: str) -> None:
        self.tape = tape
        self.field_path = field_path
        self.problem = problem
        where = _field_words(field_path, "the value")
        super().__init__(f"tape {tape}: {where} {problem}; {advice}")


class RecordedTapeError(OpenProgramError):
    """Replay of an exception a taped function raised whose type replay cannot raise itself:
    ``original_type`` is the recorded type name, the message the recorded message."""

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        super().__init__(f"{original_type}: {message}")


class ClockExhaustedError(OpenProgramError, LookupError):
    """A recording's sequence clock (``openprogram.sequence_clock``) was read once more than
    it has times: ``clock`` describes it, ``read`` says how many readings it gave."""

    def __init__(self, *, clock: str, read: int) -> None:
        self.clock = clock
        self.read = read
        super().__init__(
            f"the clock {clock} was read {read} times and has no time left for another "
            "reading: give sequence_clock() a time for every reading, or use stepping_clock()"
        )


# --- the store of recordings ---------------------------------------------------------------


class CanonicalJSONError(OpenProgramError, ValueError):
    """A value that canonical JSON cannot carry faithfully."""

    def __init__(self, field_path: str, problem: str) -> None:
        self.field_path = field_path
        self.problem = problem
        where = f" at {field_path}" if field_path else ""
        super().__init__(f"cannot write canonical JSON{where}: {problem}")


class RecordingNameError(OpenProgramError):
    """A recording name that is empty, too long, or holds characters a name may not."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(problem)


class RecordingExistsError(OpenProgramError):
    """``create_recording`` found a recording (or anything) under that name already."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        super().__init__(
            f"recording {name!r} already exists ({path}): choose another name or delete it first"
        )


class RecordingNotFoundError(OpenProgramError):
    """No recording by that name or path."""

    def __init__(self, path: Path, name: str | None) -> None:
        self.path = path
        self.name = name
        what = f"recording {name!r}" if name is not None else "recording"
        super().__init__(f"no {what} at {path}: check the name with `openprogram recordings list`")


class RecordingRefusedError(OpenProgramError):
    """A delete that openprogram will not do; ``reason`` says why."""

    def __init__(self, path: Path, name: str | None, reason: str) -> None:
        self.path = path
        self.name = name
        self.reason = reason
        super().__init__(f"refusing to delete {path}: {reason}")


class RecordingDeleteError(OpenProgramError):
    """The operating system refused to remove a recording."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot delete {path} ({reason}): check the store's permissions")


class PruneCriteriaError(OpenProgramError, ValueError):
    """``prune`` was given no criterion, or a negative one."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


class RecordingCallNotFoundError(OpenProgramError, IndexError):
    """``--call N`` names a call the recording does not hold."""

    def __init__(self, path: Path, call_index: int, calls: int) -> None:
        self.path = path
        self.call_index = call_index
        self.calls = calls
        if calls == 0:
            advice = "it holds no calls yet"
        else:
            advice = f"it holds {_plural(calls, 'call')}: choose 0 to {calls - 1}"
        super().__init__(f"{path} has no call {call_index}; {advice}")


# --- verify and exec -----------------------------------------------------------------------


class VerifySetupError(OpenProgramError):
    """The recorded session cannot be re-run as given (a usage problem: exit 2).

    When a recorded field is at fault, ``path``, ``call_index`` and ``field`` say which."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        call_index: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.call_index = call_index
        self.field = field
        super().__init__(message)


class ExecSetupError(OpenProgramError):
    """``openprogram exec`` cannot run the command with record/replay active, or the command
    ran without it (a usage problem: exit 2). ``cause`` says why."""

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(cause)


class ServeSetupError(OpenProgramError):
    """``openprogram serve`` cannot start: its port is taken, its host is not a loopback one, or
    aiohttp (the ``serve`` extra) is missing (a usage problem: exit 2). ``cause`` says why."""

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(cause)


# --- the pytest plugin ---------------------------------------------------------------------


class RecordingMissingError(OpenProgramError):
    """Replay-only mode and the test has no recording yet."""

    def __init__(self, path: str, command: str, *, mode: str = "none") -> None:
        self.path = path
        self.command = command
        super().__init__(
            f"no recording at {path} (record mode {mode!r} only replays); record it with "
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


class ReplayConnectionRefusedError(OpenProgramError):
    """Under replay, a program opened a network connection that no recording boundary
    serves: refused before it was made. ``library`` is the client library that opened it
    (``urllib3``, ``aiohttp``, …), or ``raw socket`` when none is known."""

    def __init__(
        self,
        host: str,
        port: object,
        library: str,
        name: str | None = None,
        *,
        conflict: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.library = library
        self.name = name
        self.conflict = conflict
        """Both sides, when a recording runs inside the replay that refused it."""
        where = f"{host}:{port}" + (f" ({name})" if name and name != host else "")
        if conflict is not None:
            super().__init__(f"replay refused a connection to {where} ({library}): {conflict}")
            return
        super().__init__(
            f"replay refused a connection to {where} ({library}) that no recording serves: "
            "openprogram records and replays requests of httpx, httpx2 (the openai and "
            "anthropic SDKs), urllib3 (requests, botocore) and aiohttp; a host the replay may "
            "reach live (a test database, a local "
            "tool server, a telemetry collector) goes in record_replay.allowed_hosts "
            "(record_replay(allowed_hosts=...), pytest --openprogram-allowed-hosts)"
        )


class NetworkBlockedError(OpenProgramError):
    """A test opened a connection to a host that is not this machine, with the network
    blocked. ``test`` is the test's node id (None during collection)."""

    def __init__(self, test: str | None, host: str, port: object, name: str | None) -> None:
        self.test = test
        self.host = host
        self.port = port
        self.name = name
        where = f"{host} port {port}" + (f" ({name})" if name and name != host else "")
        who = f"from {test}" if test is not None else "during collection"
        super().__init__(
            f"blocked a connection to {where} {who}: the network is blocked "
            "(--openprogram-block-network); replay the test's calls with the "
            "openprogram_recording fixture, or list the host in openprogram_allowed_hosts"
        )


class ChildRefusedError(OpenProgramError):
    """Under replay, a child process that cannot replay in-process was refused before it
    started (``children="refuse"``, or an ``os.exec*`` that would leave the block)."""

    def __init__(self, command: str, reason: str) -> None:
        self.command = command
        self.reason = reason
        super().__init__(
            f"replay refused to start {command}: {reason}; list its command in "
            "record_replay.allowed_commands to run it as it is"
        )


class ChildReplayError(OpenProgramError, AssertionError):
    """A child process of a ``record_replay()`` block (or of a test using the fixture) broke
    the block's replay or recording: ``problems`` holds one line for each (the first is the
    message's, with the count of the others)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        more = len(self.problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''} of child processes)"
        super().__init__(f"{self.problems[0]}{tail if more else ''}")
