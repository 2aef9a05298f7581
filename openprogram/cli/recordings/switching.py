"""What ``record``, ``replay`` and ``off`` share: their JSON form and their usage errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.store.switch import ModeChange


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
        "env_overrides": change.env_overrides or {},
        "takes_effect": "at the next start of a process",
    }


def usage_errors() -> tuple[type[BaseException], ...]:
    """Bad names and unreadable file arguments exit 2."""
    from openprogram.errors import RecordingFileError
    from openprogram.store.names import RecordingNameError

    return (RecordingNameError, RecordingFileError)


def warn_about_overrides(change: ModeChange) -> None:
    """Say which environment variables still override the change just made."""
    from openprogram.cli.output import warn

    for name, value in sorted((change.env_overrides or {}).items()):
        if change.env_forced_mode is not None and "FILE" not in name.upper():
            what = f"{name} still forces mode {change.env_forced_mode!r}"
        else:
            what = f"{name}={value} still overrides the configuration"
        warn(f"{what}: unset it for {change.mode} to take effect")
