"""``verify``: re-run a recorded session through the current agent loop, under replay.

The session is rebuilt from call 0's request — model, system prompt, first user message,
options and the tools it offered — and run by :func:`openprogram.agent.run_agent` with every
provider lookup answered by one :class:`ReplayProvider` on the recording. The tools' Python
functions come from the built-ins (``read_file``, ``list_directory``) or from the caller
(``--tools module:attr``). It passes when every request matches the recording and every
recorded call is consumed (and every tape entry read); otherwise it names the first
divergence. The tools run live unless a tool policy says otherwise (``--tool-policy``,
``record_replay.tools``): ``replay`` serves their taped results, ``check`` compares.

It neither starts the configured provider runtime nor reads the configured mode: the run's
lookups are answered in an isolated registry scope (``provider_scope(resolve=...)``).

A recording of any program — one made with ``openprogram exec``, the pytest fixture or
``record_replay()``, whose calls may be HTTP calls of the official SDKs — is verified by
running the program again: :func:`verify_command` runs a command as ``openprogram exec
--replay`` does, and passes only when it exits 0 with every call matched and consumed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from openprogram.activation.configured import nothing_to_replay, settings_plan
from openprogram.agent.file_tools import builtin_tools
from openprogram.agent.loop import run_agent
from openprogram.agent.tools import AgentTool
from openprogram.config.models import RecordReplaySettings
from openprogram.config.settings import load_config
from openprogram.errors import ReplayMismatch, VerifySetupError
from openprogram.named_objects import NotAModuleAttributeName, load_named_object
from openprogram.provider_boundary.codec import read_recording
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers.registry import provider_scope
from openprogram.providers.runtime import remember_key_variables
from openprogram.providers.types import Context, Model, SimpleStreamOptions, UserMessage
from openprogram.recording.difference import DEFAULT_MATCHING, join_field_path
from openprogram.recording.format import refuse_a_snapshot
from openprogram.recording.reader import read_recording as read_rows
from openprogram.recording.user_redaction import user_redaction_in_effect
from openprogram.serving.proxied_exec import run_command
from openprogram.store.hashing import transcript_hash
from openprogram.tape_boundary.deck import TAPE_DECK_BINDING, TapePlayer


@dataclass(frozen=True)
class VerifyResult:
    path: Path
    transcript_hash: str
    calls: int
    divergence: str | None
    """The first divergence, as replay reports it (two lines for a mismatch), or None."""

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "ok": self.ok,
            "transcript_hash": self.transcript_hash,
            "calls": self.calls,
            "divergence": self.divergence,
        }


def verify_recording(
    path: Path,
    *,
    tools: str | None = None,
    root: Path | None = None,
    tool_policies: Mapping[str, str] | None = None,
) -> VerifyResult:
    """Re-run the session recorded at ``path``; ``tools`` is ``module:attr`` naming the
    session's own tools (an ``AgentTool``, a list of them, or a function returning one).

    ``tool_policies`` (tool name or ``"*"`` to ``live``, ``replay`` or ``check``) say how the
    tools are re-run, over ``record_replay.tools``: live (the default), from their taped
    results, or live and checked against them."""
    recording = read_recording(path)  # strict: a damaged file is refused before anything runs
    if not recording.calls:
        raise VerifySetupError(f"{path} holds no calls: there is no session to verify")
    http_call = next((call for call in recording.calls if call.boundary == "http"), None)
    if http_call is not None:
        index = http_call.call_index
        raise VerifySetupError(
            f"{path}: call {index} is an HTTP call, so verify cannot rebuild the session (it "
            "re-runs sessions of openprogram's agent loop, made of provider calls); add "
            "`-- COMMAND` to run the program that made it under replay: openprogram recordings "
            "verify NAME -- python agent.py",
            path=path,
            call_index=index,
            field="boundary",
        )
    start = _session_start(path, recording.calls[0].request)
    session_tools = _session_tools(start.tool_names, tools, root or Path.cwd())

    ignore_fields, match, patterns, configured_policies = _configured_comparison()
    provider = ReplayProvider(
        path,
        ignore_fields=ignore_fields,
        match=match,
        recording=recording,
        redaction=user_redaction_in_effect(patterns=patterns),
        tools={**configured_policies, **(tool_policies or {})},
    )
    player = TapePlayer(provider.session)
    divergence: str | None = None
    with provider_scope(resolve=lambda api: provider, bindings={TAPE_DECK_BINDING: player}):
        try:
            asyncio.run(
                run_agent(
                    start.model,
                    start.prompt,
                    system_prompt=start.system_prompt,
                    tools=session_tools,
                    options=start.options,
                    max_iterations=len(recording.calls) + 1,
                )
            )
        except ReplayMismatch as mismatch:
            # A drift kept earlier without raising (a checked tool's result) comes first.
            divergence = str(provider.mismatches[0] if provider.mismatches else mismatch)
    if divergence is None and provider.mismatches:
        divergence = str(provider.mismatches[0])  # raised, then swallowed by the session
    unconsumed = provider.session.unconsumed_error()
    if divergence is None and unconsumed is not None:
        divergence = str(unconsumed)
    return VerifyResult(path, transcript_hash(recording), len(recording.calls), divergence)


def verify_command(
    path: Path,
    command: Sequence[str],
    *,
    tool_policies: Mapping[str, str] | None = None,
    isolate: bool | None = None,
    on_unisolated: Callable[[str], None] | None = None,
) -> VerifyResult:
    """Run ``command`` with the recording at ``path`` replayed at both boundaries, in each of
    its Python processes, as ``openprogram exec --replay`` does — in a loopback-only network
    namespace where one can be made (``isolate``: None by the platform, False never;
    ``on_unisolated`` is told why, in one line, where none can); it passes when the command
    exits 0 with every call matched and consumed.

    Raises :class:`~openprogram.errors.RecordingFileError` for a recording that cannot be
    read and ``ExecSetupError`` when the command cannot run with replay active, or ran
    without it (usage problems: exit 2)."""

    recording = read_rows(path)  # strict: a damaged file is refused before anything runs
    refuse_a_snapshot(recording)
    if not recording.calls and not recording.tapes:
        raise VerifySetupError(nothing_to_replay(path))
    settings = _configured_settings() or RecordReplaySettings()
    plan = settings_plan("replay", path, settings)
    plan = replace(plan, tools=tuple({**settings.tools, **(tool_policies or {})}.items()))
    outcome = run_command(command, plan, isolate=isolate, on_unisolated=on_unisolated)
    divergence = outcome.problems[0] if outcome.problems else None
    if divergence is None and outcome.status != 0:
        divergence = f"the command exited with status {outcome.status}"
    return VerifyResult(path, transcript_hash(recording), len(recording.calls), divergence)


@dataclass(frozen=True)
class _SessionStart:
    """What call 0's request says the session started from, validated."""

    model: Model
    prompt: UserMessage
    system_prompt: str | None
    options: SimpleStreamOptions
    tool_names: list[str]


def _session_start(path: Path, request: dict[str, Any]) -> _SessionStart:
    """Call 0's request as the agent loop needs it; a field of an unexpected shape raises
    :class:`VerifySetupError` naming the file, the call and the field."""

    model = _validated(path, "model", Model, request["model"])
    context = _validated(path, "context", Context, request["context"])
    options = _validated(path, "options", SimpleStreamOptions, request["options"])
    messages = context.messages
    if len(messages) != 1 or not isinstance(messages[0], UserMessage):
        raise VerifySetupError(
            f"{path}: call 0 does not start from one user message, so verify cannot rebuild "
            "the session (it re-runs sessions that start from a prompt)",
            path=path,
            call_index=0,
            field="context.messages",
        )
    return _SessionStart(
        model=model,
        prompt=messages[0],
        system_prompt=context.system_prompt,
        options=options,
        tool_names=[tool.name for tool in context.tools or []],
    )


def _validated(path: Path, section: str, model: Any, value: Any) -> Any:
    """``model.model_validate(value)``; the first problem as a :class:`VerifySetupError`."""
    try:
        return model.model_validate(value)
    except ValidationError as failure:
        error = failure.errors()[0]
        missing = error["type"] == "missing"
        field = _field_path(section, value, error["loc"], missing=missing)
        found = "" if missing else f" (found {_short(error['input'])})"
        raise VerifySetupError(
            f"{path}: call 0, field {field}: {_clause(error['msg'])}{found}; verify cannot "
            "rebuild the session from it: re-record the session, or fix that field",
            path=path,
            call_index=0,
            field=field,
        ) from None


def _field_path(section: str, value: Any, location: Sequence[str | int], *, missing: bool) -> str:
    """The recorded field a pydantic error location points at. Parts that name a union
    member (``user``, ``str``) rather than a key or an index of the value are skipped; a
    ``missing`` key, the location's last part, is named."""

    path, current = section, value
    for position, part in enumerate(location):
        if _holds(current, part):
            current = current[part]
        elif not (missing and position == len(location) - 1):
            continue
        path = join_field_path(path, part)
    return path


def _holds(container: Any, part: str | int) -> bool:
    """Whether ``part`` is a key of the dict, or an index of the list, ``container``."""
    if isinstance(container, dict):
        return isinstance(part, str) and part in container
    if isinstance(container, list):
        return isinstance(part, int) and 0 <= part < len(container)
    return False


def _clause(message: str) -> str:
    """pydantic's message as a clause after a colon: ``field required``."""
    text = message.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _session_tools(recorded: Sequence[str], spec: str | None, root: Path) -> list[AgentTool]:

    available = {tool.name: tool for tool in builtin_tools(root)}
    if spec is not None:
        available.update({tool.name: tool for tool in load_tools(spec)})
    missing = sorted({name for name in recorded if name not in available})
    if missing:
        tools = f"tool {missing[0]} that is" if len(missing) == 1 else "tools {} that are"
        raise VerifySetupError(
            f"the recording offers {tools.format(', '.join(missing))} neither built in nor "
            "given: pass --tools module:attr naming the session's tools"
        )
    return [available[name] for name in recorded]


def load_tools(spec: str) -> list[AgentTool]:
    """The tools ``module:attr`` names (the current folder is importable, as for pytest)."""

    try:
        value: Any = load_named_object(spec)
    except NotAModuleAttributeName:
        raise VerifySetupError(
            f"--tools takes module:attr, like my_agent.tools:TOOLS ({spec!r})"
        ) from None
    except (ImportError, AttributeError) as exc:
        raise VerifySetupError(f"--tools {spec}: cannot load it ({exc})") from None
    if callable(value) and not isinstance(value, AgentTool):
        value = value()
    found = [value] if isinstance(value, AgentTool) else value
    if not isinstance(found, Iterable) or isinstance(found, str | bytes | Mapping):
        found = [found]  # not a list of tools: refused below, not a TypeError
    found = list(found)
    if not all(isinstance(item, AgentTool) for item in found):
        raise VerifySetupError(
            f"--tools {spec} must name an AgentTool, a list of them, or a function returning one"
        )
    return found


def _configured_comparison() -> tuple[list[str], str, list[str], dict[str, str]]:
    """``record_replay.ignore_fields``, ``match``, ``redact_patterns`` and ``tools`` (the defaults
    when the configuration cannot be read); the configured key variables are remembered on the way,
    so keys are redacted from the re-run's requests as they were from the recording's."""

    settings = load_config().settings
    remember_key_variables(settings)
    if settings is None:
        return [], DEFAULT_MATCHING, [], {}
    configured = settings.record_replay
    return (
        list(configured.ignore_fields),
        configured.match,
        list(configured.redact_patterns),
        dict(configured.tools),
    )


def _configured_settings() -> RecordReplaySettings | None:
    """``[record_replay]`` as configured (None when the configuration cannot be read: then
    nothing more is ignored, and no host passes through)."""

    settings = load_config().settings
    return settings.record_replay if settings is not None else None
