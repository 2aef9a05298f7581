"""The agent loop: call the model, run the tools it asks for, repeat until it answers.

    tools          ``AgentTool`` — a Python function the model may call — and the ``tool``
                   decorator that builds one from a function and its docstring
    file_tools     ``read_file`` and ``list_directory``, confined to one folder, safe to run
                   while a session is replayed
    loop           ``run_agent``: one session, its events, and the ``AgentRun`` it returns
    session        ``resolve_model``: ``api:model-id`` (or the configured default) to a
                   ``Model``; ``run_session``: one session as ``openprogram run`` runs it
                   (model from the configuration, built-in tools, replay leftovers reported)

Exports are loaded on first use (PEP 562): importing this package imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.agent.file_tools import builtin_tools
    from openprogram.agent.loop import (
        AgentEvent,
        AgentRun,
        ToolCallFinished,
        ToolCallStarted,
        run_agent,
    )
    from openprogram.agent.session import SessionResult, resolve_model, run_session
    from openprogram.agent.tools import AgentTool, tool

_EXPORTS: dict[str, str] = {
    "AgentEvent": "openprogram.agent.loop",
    "AgentRun": "openprogram.agent.loop",
    "AgentTool": "openprogram.agent.tools",
    "SessionResult": "openprogram.agent.session",
    "ToolCallFinished": "openprogram.agent.loop",
    "ToolCallStarted": "openprogram.agent.loop",
    "builtin_tools": "openprogram.agent.file_tools",
    "resolve_model": "openprogram.agent.session",
    "run_agent": "openprogram.agent.loop",
    "run_session": "openprogram.agent.session",
    "tool": "openprogram.agent.tools",
}
__all__ = [*_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
