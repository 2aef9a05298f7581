"""``--tool-policy``, the option ``run`` and ``recordings verify`` share: how replay treats
the agent tools."""

from __future__ import annotations

import typer

from openprogram.cli.output import EXIT_USAGE, abort

TOOL_POLICY = typer.Option(
    None,
    "--tool-policy",
    metavar="[NAME=]POLICY",
    help=(
        "How replay treats the agent tools: NAME=POLICY, or POLICY for every tool; POLICY is "
        "live (run it, the default), replay (serve its taped result) or check (run it, fail "
        "when its result differs). Repeatable; over record_replay.tools."
    ),
)


def parsed_tool_policies(values: list[str] | None) -> dict[str, str]:
    """The policies given, by tool name (``*`` for every tool); a malformed one exits 2."""
    from openprogram.recording.tool_policies import parse_tool_policies

    try:
        return dict(parse_tool_policies(values or []))
    except ValueError as error:
        abort(f"--tool-policy: {error}", EXIT_USAGE)
