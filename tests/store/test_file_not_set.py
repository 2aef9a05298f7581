"""Record or replay with no ``record_replay.file``: the next start blocks and ``status``
reports the problem in the same words."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprogram.activation.configured import activate_record_replay
from openprogram.config.settings import active_recording
from openprogram.store.status import configured_status


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_the_start_and_status_name_the_missing_file_alike(mode: str) -> None:
    home = Path(os.environ["OPENPROGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'[record_replay]\nmode = "{mode}"\n')

    activation = activate_record_replay()
    report = configured_status()

    problem = f"record_replay.mode is {mode!r} but record_replay.file is not set"
    assert activation.mode == "blocked"
    assert activation.blocked_reason == problem
    assert report.problems == [problem]
    assert active_recording() is None
