"""The plugin's record modes, and the environment switches that guard recording.

``none`` replays only; ``once`` records a missing recording and replays an existing one;
``all`` records every test afresh. This module imports nothing heavy, so the plugin can
validate its options at start-up without loading the provider layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

RecordMode = Literal["none", "once", "all"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "all")
DEFAULT_RECORD_MODE: RecordMode = "none"

_TRUE_VALUES = frozenset({"1", "true", "yes"})


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """Whether the variable ``name`` is set to ``true``, ``1`` or ``yes`` (in any case)."""
    return environ.get(name, "").strip().lower() in _TRUE_VALUES


def record_command(record_mode: RecordMode, test_argument: str) -> str:
    """The command that runs one test in ``record_mode``."""
    return f"pytest --openprogram-record-mode={record_mode} {test_argument}"
