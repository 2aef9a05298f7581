"""What ``record``, ``replay`` and ``off`` share: their JSON form and their usage errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.recordings.switch import ModeChange


def describe_change(change: ModeChange) -> dict[str, Any]:
    return {
        "mode": change.mode,
        "recording": str(change.recording) if change.recording else None,
        "name": change.name,
        "calls": change.calls,
        "config": str(change.config.path),
        "config_created": change.config.created,
        "config_backup": str(change.config.backup) if change.config.backup else None,
        "repaired": change.config.repaired,
        "env_forced_mode": change.env_forced_mode,
        "takes_effect": "at the next start of a process",
    }


def usage_errors() -> tuple[type[BaseException], ...]:
    """Bad names and unreadable file arguments exit 2."""
    from openprogram.errors import RecordingFileError
    from openprogram.recordings.names import RecordingNameError

    return (RecordingNameError, RecordingFileError)
