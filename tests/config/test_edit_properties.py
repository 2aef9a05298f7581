"""Property: whatever sequence of switches is written, load_config reads back the last one
that was accepted, and the rest of the file is untouched. A switch to record or replay that
would leave no recording named is refused and writes nothing; ``off`` clears a file setting
that can name no recording."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.config.editing import KEEP, Keep, set_record_replay
from openprogram.config.paths import ConfigLocation
from openprogram.config.settings import load_config
from openprogram.errors import ConfigError
from openprogram.store.names import file_setting_problem

STARTING_FILES = [
    None,
    "",
    "# only a comment",
    '[record_replay]\nmode = "off"  # c\n\n[providers.x]\ntimeout = 2\n',
    'default_model = "echo:echo"\nrecord_replay.mode = "record"\nrecord_replay.file = "f"\n',
    'record_replay = { mode = "replay", file = "f", ignore_fields = ["a"] }\n',
    "[providers.x]\nbase_url = 'http://h'\n\n[record_replay]\nignore_fields = ['t']\n# end",
]

modes = st.sampled_from(["off", "record", "replay"])
file_values = st.one_of(
    st.just(KEEP),
    st.none(),
    st.text(min_size=1).filter(lambda text: text.strip() != ""),
)
edits = st.lists(st.tuples(modes, file_values), min_size=1, max_size=4)


@settings(max_examples=75, deadline=None)
@given(start=st.sampled_from(STARTING_FILES), steps=edits)
def test_the_last_switch_is_what_loads_and_nothing_else_changes(
    start: str | None,
    steps: list[tuple[Literal["off", "record", "replay"], str | Keep | None]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        environ = {"OPENPROGRAM_CONFIG": str(path)}
        location = ConfigLocation(path, "OPENPROGRAM_CONFIG")
        if start is not None:
            path.write_text(start)
        first = load_config(environ).settings
        assert first is not None
        expected_file = first.record_replay.file
        expected_mode = first.record_replay.mode
        backups = 0
        for mode, file in steps:
            new_file = expected_file if file is KEEP else file
            before = path.read_bytes() if path.exists() else None
            if mode != "off" and new_file is None:
                # record and replay need a recording: refused, and nothing is written
                with pytest.raises(ConfigError, match=r"record_replay\.file: not set"):
                    set_record_replay(mode=mode, file=file, location=location)
                assert (path.read_bytes() if path.exists() else None) == before
                continue
            edit = set_record_replay(mode=mode, file=file, location=location)
            if mode == "off" and file is KEEP and new_file and file_setting_problem(new_file):
                # off clears a file setting that can name no recording, keeping a backup
                assert edit.repaired == [
                    f"removed record_replay.file ({file_setting_problem(new_file)})"
                ]
                new_file = None
                backups += 1
            else:
                assert edit.repaired == []
            expected_file, expected_mode = new_file, mode
            loaded = load_config(environ)
            assert loaded.error is None, loaded.error
            assert loaded.settings is not None
            assert loaded.settings.record_replay.mode == expected_mode
            assert loaded.settings.record_replay.file == expected_file
            assert loaded.settings.record_replay.ignore_fields == first.record_replay.ignore_fields
            assert loaded.settings.providers == first.providers
            assert loaded.settings.default_model == first.default_model
        others = sorted(child.name for child in Path(folder).iterdir() if child != path)
        assert len(others) == backups
        assert all(name.startswith("config.toml.broken-") for name in others)
