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
    ├── RecordingMissingError             pytest: replay-only, and the test has no recording
    ├── RecordingOnCiRefusedError         pytest: a test would record (or call live) on CI
    └── NetworkBlockedError               pytest: a test connected to another machine with
                                          the network blocked

Each lives beside the code that raises it; this tree is the map, and this module exports
every one of them: ``from openprogram.errors import ReplayMismatch``. Those defined elsewhere
are imported on first use (PEP 562), so importing this module imports nothing else.

Messages say what happened and what to do next, on one line (the replay mismatch report is
the one error allowed two lines). The facts are attributes, so callers never parse messages.
One exception raised on purpose is deliberately outside this tree: ``RecordReplayEscape``
(``openprogram.recording.mismatch``), a ``BaseException`` that is not an ``Exception``. It is
a carrier, not an error of its own: the HTTP boundary raises it from inside an HTTP client
with an ``OpenProgramError`` as ``.error`` (a ``ReplayMismatch``, a
``RecordReplayBlockedError``, a ``RecordingFileError``) and the same message, so that SDK
retry loops, which catch every ``Exception``, cannot catch, retry or rewrap that error. The
ways in (``record_replay()``, the pytest fixture, ``exec``) turn it back into ``.error``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.activation.exec_errors import ExecSetupError, ReplayInAnotherProcessError
    from openprogram.agent.file_tools import ToolInputError
    from openprogram.agent.tools import ToolDefinitionError
    from openprogram.config.problems import ConfigError
    from openprogram.harness.verification import VerifySetupError
    from openprogram.provider_boundary.replay import RecordedProviderError
    from openprogram.providers.activation import RecordReplayBlockedError
    from openprogram.recording.format import UnrecordableValueError
    from openprogram.recording.mismatch import (
        RecordingTruncatedError,
        ReplayMismatch,
        UnconsumedCallsError,
    )
    from openprogram.recording.tape_replay import ToolTapesMissingError
    from openprogram.recording.user_redaction import UserRedactionError
    from openprogram.store.hashing import CanonicalJSONError
    from openprogram.store.names import ActiveRecordingUnknownError, RecordingNameError
    from openprogram.store.show import RecordingCallNotFoundError
    from openprogram.store.store import (
        PruneCriteriaError,
        RecordingDeleteError,
        RecordingExistsError,
        RecordingNotFoundError,
        RecordingRefusedError,
    )
    from openprogram.tape_boundary.values import RecordedTapeError, TapeValueError
    from openprogram.testing.network_block import NetworkBlockedError
    from openprogram.testing.recording_session import (
        RecordingMissingError,
        RecordingOnCiRefusedError,
    )

__all__ = [
    "ActiveRecordingUnknownError",
    "CanonicalJSONError",
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
    "ReplayInAnotherProcessError",
    "ReplayMismatch",
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

_EXPORTS: dict[str, str] = {
    "ActiveRecordingUnknownError": "openprogram.store.names",
    "CanonicalJSONError": "openprogram.store.hashing",
    "ConfigError": "openprogram.config.problems",
    "ExecSetupError": "openprogram.activation.exec_errors",
    "NetworkBlockedError": "openprogram.testing.network_block",
    "PruneCriteriaError": "openprogram.store.store",
    "RecordReplayBlockedError": "openprogram.providers.activation",
    "RecordedProviderError": "openprogram.provider_boundary.replay",
    "RecordedTapeError": "openprogram.tape_boundary.values",
    "RecordingCallNotFoundError": "openprogram.store.show",
    "RecordingDeleteError": "openprogram.store.store",
    "RecordingExistsError": "openprogram.store.store",
    "RecordingMissingError": "openprogram.testing.recording_session",
    "RecordingNameError": "openprogram.store.names",
    "RecordingNotFoundError": "openprogram.store.store",
    "RecordingOnCiRefusedError": "openprogram.testing.recording_session",
    "RecordingRefusedError": "openprogram.store.store",
    "RecordingTruncatedError": "openprogram.recording.mismatch",
    "ReplayInAnotherProcessError": "openprogram.activation.exec_errors",
    "ReplayMismatch": "openprogram.recording.mismatch",
    "TapeValueError": "openprogram.tape_boundary.values",
    "ToolDefinitionError": "openprogram.agent.tools",
    "ToolInputError": "openprogram.agent.file_tools",
    "ToolTapesMissingError": "openprogram.recording.tape_replay",
    "UnconsumedCallsError": "openprogram.recording.mismatch",
    "UnrecordableValueError": "openprogram.recording.format",
    "UserRedactionError": "openprogram.recording.user_redaction",
    "VerifySetupError": "openprogram.harness.verification",
}
"""Errors defined beside the code that raises them, imported when first asked for."""


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


class UnknownApiError(OpenProgramError, LookupError):
    """No provider is registered for an api; ``closest`` is the registered api it most
    likely meant (a typo), or None."""

    def __init__(self, api: str, registered: list[str]) -> None:
        import difflib

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


class ModelReferenceError(OpenProgramError, ValueError):
    """A model reference is not ``api:model-id`` (see
    :func:`openprogram.config.models.split_model_reference`)."""

    def __init__(self, reference: str) -> None:
        self.reference = reference
        super().__init__(
            f"model {reference!r} is not api:model-id; write it like echo:echo or "
            "openai-completions:gpt-4o-mini (split at the first colon)"
        )


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
