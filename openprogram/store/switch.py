"""Switching record/replay on and off: the library behind ``record``, ``replay`` and ``off``.

Each writes the configuration through :mod:`openprogram.config.editing` (only the keys
concerned change) and takes effect at the next start of a process. ``record`` creates the
recording first and removes it again if the configuration cannot be written; ``replay``
checks the recording before switching.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.config.editing import ConfigEdit


@dataclass(frozen=True)
class ModeChange:
    mode: str
    config: ConfigEdit
    recording: Path | None = None
    name: str | None = None
    calls: int = 0
    env_forced_mode: str | None = None
    """Another mode an environment variable still forces, if any."""
    env_overrides: dict[str, str] | None = None
    """The ``OPENPROGRAM_RECORD_REPLAY…`` variables that override what was just written."""


def start_recording(name: str | None = None) -> ModeChange:
    """Create recording ``name`` (default ``rec-YYYYMMDD-HHMMSS``) and set mode=record."""
    from openprogram.config.editing import set_record_replay
    from openprogram.config.paths import recordings_dir
    from openprogram.store.names import default_name
    from openprogram.store.store import create_recording

    name = name if name is not None else default_name()
    path = create_recording(recordings_dir(), name)
    try:
        edit = set_record_replay(mode="record", file=name)
    except BaseException:
        path.unlink(missing_ok=True)  # roll back: no recording without the mode that uses it
        raise
    return ModeChange("record", edit, path, name, **_overrides_of("record"))


def start_replay(argument: str) -> ModeChange:
    """Check the recording ``argument`` (a name or a path) and set mode=replay."""
    from openprogram.config.editing import set_record_replay
    from openprogram.config.paths import recordings_dir
    from openprogram.provider_boundary.codec import read_recording
    from openprogram.store.names import resolve_recording

    ref = resolve_recording(argument, recordings_dir())
    recording = read_recording(ref.path)  # refuses a missing, corrupt or other-version file
    setting = ref.name if ref.name is not None else str(ref.path)
    edit = set_record_replay(mode="replay", file=setting)
    return ModeChange(
        "replay",
        edit,
        ref.path,
        ref.name,
        calls=len(recording.calls),
        **_overrides_of("replay"),
    )


def turn_off() -> ModeChange:
    """Set mode=off, whatever state the configuration is in (a broken one is repaired)."""
    from openprogram.config.editing import set_record_replay

    edit = set_record_replay(mode="off")
    return ModeChange("off", edit, **_overrides_of("off"))


def _overrides_of(mode: str) -> dict[str, Any]:
    """Which environment variables still override the record/replay settings just written
    (values that may hold a secret hidden, as ``status`` shows them)."""
    from openprogram.config.environment import RECORD_REPLAY_VARIABLE, is_secret_variable
    from openprogram.config.settings import load_config
    from openprogram.recording.redaction import SecretRedactor
    from openprogram.store.status import HIDDEN

    loaded = load_config()
    forced = loaded.mode_forced_by_env
    redact = SecretRedactor().redact_text
    variables = {
        name: HIDDEN if is_secret_variable(name, value) else redact(value)
        for name, value in loaded.env_overrides.items()
        if name.upper().startswith(RECORD_REPLAY_VARIABLE)
    }
    if mode == "off" and (forced is None or forced == "off"):
        variables = {}  # with the mode off, a forced file does not matter
    return {
        "env_forced_mode": forced if forced is not None and forced != mode else None,
        "env_overrides": variables,
    }
