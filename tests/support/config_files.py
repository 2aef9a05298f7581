"""The configuration file the tests write: where ``OPENPROGRAM_HOME`` (set by
``tests/conftest.py`` to a folder under the test's ``tmp_path``) puts it."""

from __future__ import annotations

import json
from pathlib import Path

from openprogram.config.paths import config_location


def config_file() -> Path:
    return config_location().path


def write_config(text: str) -> Path:
    """``text`` as the configuration file; its path."""
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def record_replay_config(mode: str, file: str | Path) -> str:
    """A configuration that records into, or replays from, ``file`` (a name or a path)."""
    return f'[record_replay]\nmode = "{mode}"\nfile = {json.dumps(str(file))}\n'


def configure(mode: str, file: str | Path) -> Path:
    """Write :func:`record_replay_config`; the configuration file's path."""
    return write_config(record_replay_config(mode, file))
