"""The exception tree of openprogram.

    OpenProgramError                      base of every error openprogram raises on purpose
    ├── RecordingFileError                a recording cannot be read (file, line, call)
    ├── UnrecordableValueError (+ValueError)
    │                                     a request or event a recording cannot hold
    ├── ReplayMismatch (+AssertionError)  an incoming request differs from the recording
    │   └── RecordingTruncatedError       replay reached a call the recording cut short
    ├── UnconsumedCallsError (+AssertionError)
    │                                     recorded calls were never requested
    ├── RecordedProviderError             replay of a provider error of a non-builtin type
    ├── RecordReplayBlockedError          record/replay is configured but could not start
    ├── UnknownApiError (+LookupError)    no provider is registered for ``model.api``
    ├── MissingApiKeyError                a provider needs a key and none was found
    ├── ProviderRuntimeError              the provider runtime failed to initialize
    ├── ConfigError                       config.toml or an OPENPROGRAM_* variable is wrong
    ├── the store's errors                RecordingNameError, RecordingExistsError,
                                          RecordingNotFoundError, RecordingRefusedError,
                                          RecordingDeleteError, PruneCriteriaError,
                                          RecordingCallNotFoundError
    ├── VerifySetupError                  a recorded session that verify cannot re-run
    └── the pytest plugin's errors        RecordingMissingError, RecordingOnCiRefusedError

Each lives beside the code that raises it; this tree is the map.

Messages say what happened and what to do next, on one line (the replay mismatch report is
the one error allowed two lines). The facts are attributes, so callers never parse messages.
"""

from __future__ import annotations

from typing import Any


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
