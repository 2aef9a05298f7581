"""``run_session``: one session the way ``openprogram run`` runs it, as one library call.

It picks the model (the reference given, else the configured ``default_model``, else
``echo``), offers the built-in tools rooted at a folder, runs :func:`run_agent`, and — when
the process replays a recording — reports the recorded calls the session never requested,
without raising, so the caller still has the transcript to show.

The model (:func:`resolve_model`): a reference is split at its first colon only, so
``openai-completions:llama3:8b`` is the model ``llama3:8b`` of the api ``openai-
completions``; ``--model`` and ``default_model`` share one parser
(:func:`openprogram.config.models.split_model_reference`). The model's ``provider`` is the
vendor's name for the apis openprogram ships (``openai``, ``anthropic``, ``echo``) and the
api itself otherwise; its ``base_url`` is the one ``[providers.<api>]`` sets, if any."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.agent.file_tools import builtin_tools
from openprogram.agent.loop import DEFAULT_MAX_ITERATIONS, AgentEvent, AgentRun, run_agent
from openprogram.config.models import split_model_reference
from openprogram.errors import ReplayMismatch, UnconsumedCallsError
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers.builtins import VENDOR_OF_API
from openprogram.providers.registry import get_api_provider, runtime_configuration
from openprogram.providers.types import Model
from openprogram.tape_boundary.deck import TapePlayer
from openprogram.tape_boundary.taped_functions import active_tape_deck

if TYPE_CHECKING:
    from openprogram.config.models import Settings

__all__ = ["ECHO_REFERENCE", "resolve_model"]

ECHO_REFERENCE = "echo:echo"
"""What a session runs on when nothing names a model."""


def resolve_model(reference: str | None, settings: Settings | None) -> Model:
    """The model ``reference`` names; without one, ``settings.default_model``; without that
    (or without settings: no configuration, or a broken one), the ``echo`` model. Raises
    :class:`ModelReferenceError` when the reference is not ``api:model-id``."""
    if reference is None and settings is not None:
        reference = settings.default_model
    api, model_id = split_model_reference(reference if reference is not None else ECHO_REFERENCE)
    provider_settings = settings.providers.get(api) if settings is not None else None
    base_url = provider_settings.base_url if provider_settings is not None else None
    return Model(id=model_id, api=api, provider=VENDOR_OF_API.get(api, api), base_url=base_url)


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What one session did."""

    model: Model
    system_prompt: str | None
    tool_names: list[str]
    """The tools offered, sorted."""
    run: AgentRun
    unconsumed: UnconsumedCallsError | None
    """Under replay: the recorded calls this session never requested (and tape entries it
    never read); None otherwise."""
    mismatch: ReplayMismatch | None = None
    """Under replay: the first drift kept but not raised (a tool under ``check`` whose
    result differs from its tape, or a mismatch the session caught); None otherwise."""

    def to_json(self) -> dict[str, Any]:
        """The session as JSON, without the ``timestamp`` fields (replay ignores them), so a
        recorded session and its replay give the same JSON."""
        return {
            "model": self.model.model_dump(mode="json"),
            "system_prompt": self.system_prompt,
            "tools": self.tool_names,
            "calls": self.run.calls,
            "stopped_because": self.run.stopped_because,
            "messages": [
                message.model_dump(mode="json", exclude={"timestamp"})
                for message in self.run.messages
            ],
        }


async def run_session(
    prompt: str,
    *,
    model: str | None = None,
    system_prompt: str | None = None,
    use_builtin_tools: bool = True,
    root: Path | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    on_event: Callable[[AgentEvent], None] | None = None,
    tool_policies: Mapping[str, str] | None = None,
) -> SessionResult:
    """Run one session from ``prompt``.

    ``model`` is ``api:model-id`` (raises ``ModelReferenceError`` when it is not); the
    built-in tools are rooted at ``root`` (default: the current directory). Under replay,
    ``tool_policies`` (tool name or ``"*"`` to ``live``, ``replay`` or ``check``) override
    the configured ``record_replay.tools``. Raises what :func:`run_agent` raises."""

    # The configuration the runtime read at its start (read once per process). A broken one
    # gives no settings: the runtime is then blocked, and the first call says why.
    loaded = runtime_configuration()
    deck = active_tape_deck()
    if tool_policies and isinstance(deck, TapePlayer) and loaded is not None and loaded.settings:
        configured = dict(loaded.settings.record_replay.tools)
        deck.use_tool_policies({**configured, **tool_policies})
    chosen = resolve_model(model, loaded.settings if loaded is not None else None)
    tools = builtin_tools(root) if use_builtin_tools else []
    run = await run_agent(
        chosen,
        prompt,
        system_prompt=system_prompt,
        tools=tools,
        max_iterations=max_iterations,
        on_event=on_event,
    )
    return SessionResult(
        model=chosen,
        system_prompt=system_prompt,
        tool_names=sorted(tool.name for tool in tools),
        run=run,
        unconsumed=unconsumed_replay_calls(chosen.api),
        mismatch=first_replay_mismatch(),
    )


def first_replay_mismatch() -> ReplayMismatch | None:
    """When the process replays, the first mismatch its replay raised or kept (a tool under
    ``check`` whose result differs keeps one without raising), or None."""

    deck = active_tape_deck()
    if not isinstance(deck, TapePlayer) or not deck.session.mismatches:
        return None
    return deck.session.mismatches[0]


def unconsumed_replay_calls(api: str) -> UnconsumedCallsError | None:
    """When ``api`` is answered by a replay, the recorded calls not yet requested (as the
    error ``assert_consumed`` raises); None when every call was, or nothing replays."""
    provider = get_api_provider(api)
    if not isinstance(provider, ReplayProvider):
        return None
    try:
        provider.assert_consumed()
    except UnconsumedCallsError as unconsumed:
        return unconsumed
    return None
