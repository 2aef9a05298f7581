"""What to activate for both boundaries: a :class:`RecordReplayPlan`, decided once.

A plan says the mode (``record``, ``replay`` or ``blocked``), the recording, and the settings both
boundaries apply: the request fields replay leaves out of the comparison, how calls are matched, the
hosts the HTTP boundary always sends live, the request headers it stores besides the semantic ones,
and the user's redaction patterns. ``openprogram exec`` resolves the configuration (and its flags)
into one plan and hands it to every Python process of the command as JSON
(:meth:`RecordReplayPlan.to_json`), so that no process reads the configuration again.

``tools`` says how replay treats each agent tool (``live``, ``replay`` or ``check``).
``sources`` are the seed and clock ``now()`` and ``random()`` draw from while recording (see
:mod:`openprogram.deterministic_sources`): each process of an ``exec`` command reads them from
their start; a clock also runs the command in UTC, under record and replay alike.
``match`` says how replay pairs a request with a recorded call: ``"content"`` (the
default: the earliest unconsumed recorded call of its boundary whose request equals it) or
``"order"`` (the next recorded call); see :mod:`openprogram.recording.replay_session`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from openprogram.deterministic_sources import RecordingSources
from openprogram.recording.difference import DEFAULT_MATCHING, MATCHINGS, check_matching
from openprogram.recording.tape_replay import check_tool_policies
from openprogram.recording.url_comparison import check_http_ignore_fields

__all__ = ["MATCHES", "PLAN_FORMAT", "PlanMode", "RecordReplayPlan", "check_match"]

PlanMode = Literal["record", "replay", "blocked"]
MATCHES = MATCHINGS
"""How replay matches an incoming request with a recorded call: ``content`` or ``order``."""
check_match = check_matching
PLAN_FORMAT = 1
"""The version of a plan's JSON form; a process given another one refuses to guess."""


@dataclass(frozen=True)
class RecordReplayPlan:
    """Record, replay or refuse, at both boundaries, with these settings."""

    mode: PlanMode
    path: Path | None = None
    """The recording (None only when blocked before one was found)."""
    ignore_fields: tuple[str, ...] = ()
    compare_loopback_ports: bool = False
    """replay: compare the port of a loopback server's URL (by default it is left out)."""
    match: str = DEFAULT_MATCHING
    passthrough_hosts: frozenset[str] = field(default_factory=frozenset)
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    """replay: hosts (``host`` or ``host:port``) the program may connect to live, besides the
    passthrough hosts; every other connection is refused."""
    model_hosts: frozenset[str] = field(default_factory=frozenset)
    """The configured mode: hosts (``host`` or ``host:port``) whose every request is model
    traffic (``record_replay.model_hosts``)."""
    http_headers: frozenset[str] = field(default_factory=frozenset)
    redact_patterns: tuple[str, ...] = ()
    """The user's redaction patterns (regular expressions), applied with the built-in rules."""
    tools: tuple[tuple[str, str], ...] = ()
    """replay: the agent tools' policies (tool name or ``"*"``, policy), see
    :mod:`openprogram.recording.tape_replay`."""
    blocked_reason: str | None = None
    """blocked: why no call may be made (it names the commands that say why and recover)."""
    sources: RecordingSources | None = None
    """record: what ``now()`` and ``random()`` draw from (None: the real clock and
    randomness); record and replay: a clock runs the code in UTC."""

    def __post_init__(self) -> None:
        if self.mode not in ("record", "replay", "blocked"):
            raise ValueError(f"unknown record/replay mode {self.mode!r}")
        if self.mode == "blocked" and not self.blocked_reason:
            raise ValueError("a blocked plan needs a blocked_reason")
        if self.mode != "blocked" and self.path is None:
            raise ValueError(f"a {self.mode} plan needs the recording's path")
        check_match(self.match)
        check_http_ignore_fields(self.ignore_fields, "ignore_fields")
        check_tool_policies(dict(self.tools))

    @classmethod
    def blocked(cls, reason: str, path: Path | None = None) -> RecordReplayPlan:
        return cls("blocked", path, blocked_reason=reason)

    def replay_settings(self) -> dict[str, Any]:
        """What a replay session made for this plan is given, as its keyword arguments
        (``ReplaySession(recording, user_redaction=…, **plan.replay_settings())``)."""
        return {
            "ignore_fields": self.ignore_fields,
            "compare_loopback_ports": self.compare_loopback_ports,
            "match": self.match,
            "tools": dict(self.tools),
        }

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": PLAN_FORMAT,
                "mode": self.mode,
                "path": None if self.path is None else str(self.path),
                "ignore_fields": list(self.ignore_fields),
                "compare_loopback_ports": self.compare_loopback_ports,
                "match": self.match,
                "passthrough_hosts": sorted(self.passthrough_hosts),
                "allowed_hosts": sorted(self.allowed_hosts),
                "model_hosts": sorted(self.model_hosts),
                "http_headers": sorted(self.http_headers),
                "redact_patterns": list(self.redact_patterns),
                "tools": dict(self.tools),
                "blocked_reason": self.blocked_reason,
                "sources": None if self.sources is None else self.sources.to_json(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> RecordReplayPlan:
        """The plan :meth:`to_json` wrote; ``ValueError`` for anything else."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not JSON ({error})") from None
        if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise ValueError(f"a plan of format {found!r}, not {PLAN_FORMAT}")
        try:
            path = data["path"]
            return cls(
                mode=cast(PlanMode, data["mode"]),
                path=None if path is None else Path(_text(path)),
                ignore_fields=tuple(_texts(data["ignore_fields"])),
                compare_loopback_ports=data.get("compare_loopback_ports") is True,
                match=_text(data["match"]),
                passthrough_hosts=frozenset(_texts(data["passthrough_hosts"])),
                allowed_hosts=frozenset(_texts(data.get("allowed_hosts", []))),
                model_hosts=frozenset(_texts(data.get("model_hosts", []))),
                http_headers=frozenset(_texts(data["http_headers"])),
                redact_patterns=tuple(_texts(data["redact_patterns"])),
                tools=_policies(data.get("tools", {})),
                blocked_reason=None if data["blocked_reason"] is None else data["blocked_reason"],
                sources=_sources(data.get("sources")),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"a plan without a valid {error}") from None


def _sources(value: Any) -> RecordingSources | None:
    return None if value is None else RecordingSources.from_json(value)


def _policies(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise TypeError(repr(value))
    return tuple((_text(name), _text(policy)) for name, policy in value.items())


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(repr(value))
    return value


def _texts(values: Iterable[Any]) -> list[str]:
    if not isinstance(values, list):
        raise TypeError(repr(values))
    return [_text(value) for value in values]
