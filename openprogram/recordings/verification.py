"""``verify``: re-run a recorded session through the current agent loop, under replay.

The session is rebuilt from call 0's request — model, system prompt, first user message,
options and the tools it offered — and run by :func:`openprogram.agent.run_agent` with every
provider lookup answered by one :class:`ReplayProvider` on the recording. The tools' Python
functions come from the built-ins (``read_file``, ``list_directory``) or from the caller
(``--tools module:attr``). It passes when every request matches the recording and every
recorded call is consumed; otherwise it names the first divergence.

It neither starts the configured provider runtime nor reads the configured mode: the replay
registry is isolated to this run (see ``isolated_api_providers``).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import OpenProgramError

if TYPE_CHECKING:
    from openprogram.agent.tools import AgentTool


class VerifySetupError(OpenProgramError):
    """The recorded session cannot be re-run as given (a usage problem: exit 2)."""


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
    path: Path, *, tools: str | None = None, root: Path | None = None
) -> VerifyResult:
    """Re-run the session recorded at ``path``; ``tools`` is ``module:attr`` naming the
    session's own tools (an ``AgentTool``, a list of them, or a function returning one)."""
    from openprogram.agent.loop import run_agent
    from openprogram.providers.api_registry import isolated_api_providers
    from openprogram.providers.mismatch import ReplayMismatch
    from openprogram.providers.recording import read_recording
    from openprogram.providers.replay import ReplayProvider
    from openprogram.providers.types import Model, SimpleStreamOptions, UserMessage
    from openprogram.recordings.hashing import transcript_hash

    recording = read_recording(path)  # strict: a damaged file is refused before anything runs
    if not recording.calls:
        raise VerifySetupError(f"{path} holds no calls: there is no session to verify")
    request = recording.calls[0].request
    context = request["context"]
    messages = context.get("messages") or []
    if len(messages) != 1 or messages[0].get("role") != "user":
        raise VerifySetupError(
            f"{path}: call 0 does not start from one user message, so verify cannot rebuild "
            "the session (it re-runs sessions that start from a prompt)"
        )
    model = Model.model_validate(request["model"])
    prompt = UserMessage.model_validate(messages[0])
    options = SimpleStreamOptions.model_validate(request["options"])
    session_tools = _session_tools(context.get("tools") or [], tools, root or Path.cwd())
    provider = ReplayProvider(path, ignore_fields=_configured_ignore_fields(), recording=recording)
    divergence: str | None = None
    with isolated_api_providers(lambda api: provider):
        try:
            asyncio.run(
                run_agent(
                    model,
                    prompt,
                    system_prompt=context.get("system_prompt"),
                    tools=session_tools,
                    options=options,
                    max_iterations=len(recording.calls) + 1,
                )
            )
        except ReplayMismatch as mismatch:
            divergence = str(mismatch)
    if divergence is None and provider.mismatches:
        divergence = str(provider.mismatches[0])  # raised, then swallowed by the session
    if divergence is None and provider.unconsumed_calls:
        from openprogram.providers.mismatch import UnconsumedCallsError

        divergence = str(
            UnconsumedCallsError(str(path), provider.unconsumed_calls, len(recording.calls))
        )
    return VerifyResult(path, transcript_hash(recording), len(recording.calls), divergence)


def _session_tools(
    recorded: Sequence[dict[str, Any]], spec: str | None, root: Path
) -> list[AgentTool]:
    from openprogram.agent.builtin_tools import builtin_tools

    available = {tool.name: tool for tool in builtin_tools(root)}
    if spec is not None:
        available.update({tool.name: tool for tool in load_tools(spec)})
    missing = [tool["name"] for tool in recorded if tool.get("name") not in available]
    if missing:
        raise VerifySetupError(
            f"the recording offers tool(s) {', '.join(sorted(missing))} that are neither "
            "built in nor given: pass --tools module:attr naming the session's tools"
        )
    return [available[tool["name"]] for tool in recorded]


def load_tools(spec: str) -> list[AgentTool]:
    """The tools ``module:attr`` names (the current folder is importable, as for pytest)."""
    from openprogram.agent.tools import AgentTool

    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise VerifySetupError(f"--tools takes module:attr, like my_agent.tools:TOOLS ({spec!r})")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise VerifySetupError(f"--tools {spec}: cannot load it ({exc})") from None
    if callable(value) and not isinstance(value, AgentTool):
        value = value()
    found = [value] if isinstance(value, AgentTool) else list(value)
    if not all(isinstance(item, AgentTool) for item in found):
        raise VerifySetupError(
            f"--tools {spec} must name an AgentTool, a list of them, or a function returning one"
        )
    return found


def _configured_ignore_fields() -> list[str]:
    from openprogram.config.settings import load_config

    settings = load_config().settings
    return list(settings.record_replay.ignore_fields) if settings is not None else []
