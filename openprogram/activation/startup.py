"""Which record/replay a starting Python process runs: decided once, before its first line.

Every Python process of an environment where openprogram is installed imports the start-up
hook while Python starts (``_openprogram_startup``, from ``openprogram_startup.pth`` in
``site-packages``); the hook tells cheaply whether anything may be on and only then calls
:func:`start`. So does ``openprogram exec``'s ``sitecustomize``, for an interpreter that has
openprogram on its path without the hook. Whichever comes first decides; the other finds it
done, so a process starts once however many times it is asked.

**Which way in decides what**, for a starting process, in this order:

1. ``openprogram exec``'s plan, in the environment of every process of its command: the
   whole program hermetic — both boundaries record or replay every call, and under replay
   every other connection is refused (:mod:`~openprogram.activation.exec_child`). exec is
   the configured mode with its plan resolved once and handed down, for the whole program;
2. an explicit ``record_replay()`` block, or the pytest fixture, inside the process: entered
   later, not here, it takes over both boundaries for its block, hermetic as exec, whatever
   runs beneath it — an explicit ``record_replay(mode="record")`` records inside a process
   whose configured mode is replay;
3. the configuration (``openprogram recordings record|replay|off``): the configured mode,
   for the **model layer** only — openprogram's providers and the HTTP requests that are
   model traffic, recorded or answered from the recording; every other connection is left
   alone (:mod:`~openprogram.activation.model_layer`).

The configuration is read as ``openprogram recordings status`` reads it: a file that cannot be read
or validated, a mode without a recording, a recording name that names none — the process is
*blocked*: every model request refused, naming ``openprogram recordings off``, other traffic
untouched. The recording itself is read when the first model call needs it (a process that makes
none never reads it); one that is missing, damaged or a drift snapshot blocks the process from that
call on. ``OPENPROGRAM_RECORD_REPLAY__MODE=off`` turns the configured mode off for one process.
``openprogram``'s own commands never take it here: the recovery commands work whatever the
configuration holds, and ``openprogram run`` applies it at the provider registry when its runtime
starts, as any process that skipped the hook (``python -S``) does.

Whatever fails here fails closed: the process starts blocked, never live, and nothing is
raised into the program. When the configuration decided ``off`` from the file and variables
alone, the start-up marker is written for them (:mod:`openprogram.config.startup_marker`),
so the next process's hook decides in a few system calls."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from _openprogram_startup import EXCHANGE_VARIABLE, PLAN_VARIABLE, is_openprogram_command
from openprogram.activation.configured import configured_plan
from openprogram.activation.model_layer import ModelLayerProcess, start_model_layer
from openprogram.activation.plan import RecordReplayPlan
from openprogram.config.paths import config_location
from openprogram.config.settings import load_config
from openprogram.config.startup_marker import file_state, same_state, write_startup_marker
from openprogram.errors import OpenProgramError

__all__ = ["configured_at_start", "start", "started_layer", "stop_configured_mode"]

_started: list[bool] = []
_layer: list[ModelLayerProcess] = []


def start(environ: Mapping[str, str] | None = None, *, argv: list[str] | None = None) -> None:
    """Start record/replay in this process as its start decides (see the module's
    docstring), once; never raises."""
    if _started:
        return
    _started.append(True)
    source = os.environ if environ is None else environ
    if source.get(PLAN_VARIABLE) is not None and source.get(EXCHANGE_VARIABLE):
        # exec's activation (both boundaries' machinery, ~250 ms) only for exec's processes
        from openprogram.activation.exec_child import activate_from_environment

        activate_from_environment(source)  # exec's plan: blocks itself when it cannot start
        return
    if is_openprogram_command(sys.orig_argv if argv is None else argv):
        return
    try:
        decided = configured_at_start(source)
    except Exception as error:  # fail closed whatever went wrong
        cause = str(error) if isinstance(error, OpenProgramError) else repr(error)
        decided = (RecordReplayPlan.blocked(f"openprogram could not start: {cause}"), None)
    if decided is not None:
        _layer.append(start_model_layer(*decided))


def configured_at_start(environ: Mapping[str, str]) -> tuple[RecordReplayPlan, str | None] | None:
    """The configured mode's plan for a process starting with ``environ``, and the
    ``record_replay.file`` that named its recording (None: off). The recording is not read
    here (see the module's docstring)."""
    location = config_location(environ)
    try:
        before = file_state(location.path)
    except OSError:
        before = None
    loaded = load_config(environ)
    if loaded.error is not None:
        return RecordReplayPlan.blocked(str(loaded.error)), None
    assert loaded.settings is not None
    settings = loaded.settings.record_replay
    plan = configured_plan(settings, check_recording=False)
    if plan is None:
        _remember_off(location.path, before, environ)
        return None
    return plan, settings.file


def _remember_off(path: Path, before: os.stat_result | None, environ: Mapping[str, str]) -> None:
    """Write the marker that lets the next process's hook decide ``off`` at once, when the
    file was not changed while it was read."""
    try:
        after = file_state(path)
    except OSError:
        return
    if same_state(before, after):
        write_startup_marker(path, "off", after, environ)


def started_layer() -> ModelLayerProcess | None:
    """The configured mode this process started with (None: it did not, or not here)."""
    return _layer[0] if _layer else None


def stop_configured_mode() -> None:
    """Take the configured mode this process started with off again, for good: a test suite
    that must not run under its user's configuration calls it as it loads."""
    while _layer:
        _layer.pop().stop()
