"""The plugin's record modes, and the environment switches that guard recording.

The names are pytest-recording's (and vcrpy's), with openprogram's meanings:

* ``none`` (default) replays only; a missing recording is an error;
* ``once`` records a missing recording and replays an existing one;
* ``new_episodes`` serves each request from an equal unconsumed recorded call, calls the
  provider live for any other and records it; at a passing end the recording holds exactly
  the calls the run made (recorded calls never requested are dropped);
* ``all`` records every test afresh, replacing its recording; ``rewrite`` is another name
  for it (pytest-recording's);
* ``live`` calls the providers live and records nothing (pytest-recording's
  ``--disable-recording``).

This module imports nothing heavy, so the plugin can validate its options at start-up
without loading the provider layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite", "live"]
RECORD_MODES: tuple[RecordMode, ...] = get_args(RecordMode)
DEFAULT_RECORD_MODE: RecordMode = "none"

_TRUE_VALUES = frozenset({"1", "true", "yes"})


def check_record_mode(value: object) -> RecordMode:
    """``value`` if it names a record mode; else ``ValueError`` listing them."""
    for mode in RECORD_MODES:
        if value == mode:
            return mode
    raise ValueError(f"must be one of {', '.join(RECORD_MODES)}, not {value!r}")


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """Whether the variable ``name`` is set to ``true``, ``1`` or ``yes`` (in any case)."""
    return environ.get(name, "").strip().lower() in _TRUE_VALUES


def record_command(record_mode: RecordMode, test_argument: str) -> str:
    """The command that runs one test in ``record_mode``."""
    return f"pytest --openprogram-record-mode={record_mode} {test_argument}"
