"""What replay does with each agent tool: run it (``live``), serve its taped result
(``replay``), or run it and compare (``check``).

Under record every agent tool's result is taped (the tape ``tool:<name>``). Under replay:

* ``live`` (the default) — the tool runs, as it would without openprogram; its tape is not
  read, and its entries never count as unconsumed;
* ``replay`` — the tool does not run: the model reads the taped result (text and
  ``is_error``), found by the call's arguments;
* ``check`` — the tool runs and the model reads its live result; a result that differs from
  the taped one fails the run when it ends, naming the first differing entry.

Policies are given by tool name, with ``"*"`` for every tool not named
(``record_replay.tools`` in the configuration, ``--tool-policy`` on the command line, the
pytest ``openprogram_tools`` ini option). This module imports nothing, so the configuration
can check a policy without loading replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal

__all__ = [
    "ALL_TOOLS",
    "DEFAULT_TOOL_POLICY",
    "TOOL_POLICIES",
    "ToolPolicies",
    "ToolPolicy",
    "check_tool_policies",
    "parse_tool_policies",
]

ToolPolicy = Literal["live", "replay", "check"]
TOOL_POLICIES: Final[tuple[ToolPolicy, ...]] = ("live", "replay", "check")
DEFAULT_TOOL_POLICY: Final[ToolPolicy] = "live"
ALL_TOOLS: Final = "*"
"""The key that gives the policy of every tool not named."""


class ToolPolicies:
    """The policy of each tool: by name, else the ``"*"`` entry, else ``live``."""

    __slots__ = ("by_name",)

    def __init__(self, by_name: Mapping[str, str] | None = None) -> None:
        self.by_name: dict[str, ToolPolicy] = check_tool_policies(by_name or {})

    def policy_for(self, tool: str) -> ToolPolicy:
        found = self.by_name.get(tool)
        return found if found is not None else self.by_name.get(ALL_TOOLS, DEFAULT_TOOL_POLICY)

    def __repr__(self) -> str:
        return f"ToolPolicies({self.by_name!r})"


def check_tool_policies(by_name: Mapping[str, str]) -> dict[str, ToolPolicy]:
    """``by_name`` with every policy checked; ``ValueError`` naming the first bad one."""
    checked: dict[str, ToolPolicy] = {}
    for tool, policy in by_name.items():
        if not isinstance(tool, str) or not tool:
            raise ValueError(f"a tool policy needs a tool name or {ALL_TOOLS!r}, found {tool!r}")
        if policy == "live":
            checked[tool] = "live"
        elif policy == "replay":
            checked[tool] = "replay"
        elif policy == "check":
            checked[tool] = "check"
        else:
            raise ValueError(
                f"tool {tool!r}: unknown policy {policy!r}; a tool's policy is "
                f"{', '.join(TOOL_POLICIES)}"
            )
    return checked


def parse_tool_policies(entries: Iterable[str]) -> dict[str, ToolPolicy]:
    """Policies written ``NAME=POLICY`` (``get_weather=replay``, ``*=check``) or a bare
    ``POLICY`` for every tool; later entries win. ``ValueError`` for a malformed one."""
    found: dict[str, str] = {}
    for entry in entries:
        name, equals, policy = entry.partition("=")
        if not equals:
            name, policy = ALL_TOOLS, name
        name, policy = name.strip(), policy.strip()
        if not name:
            raise ValueError(f"{entry!r}: write NAME=POLICY, or a policy for every tool")
        found[name] = policy
    return check_tool_policies(found)
