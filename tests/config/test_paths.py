"""Where the configuration file and the recordings store live."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from openprogram.config.paths import ConfigLocation, config_location, recordings_dir


def test_openprogram_config_names_the_file_over_home(tmp_path: Path) -> None:
    environ = {
        "OPENPROGRAM_CONFIG": str(tmp_path / "elsewhere.toml"),
        "OPENPROGRAM_HOME": str(tmp_path / "home"),
    }
    assert config_location(environ) == ConfigLocation(
        tmp_path / "elsewhere.toml", "OPENPROGRAM_CONFIG"
    )


def test_openprogram_home_holds_the_config_and_the_store(tmp_path: Path) -> None:
    environ = {"OPENPROGRAM_HOME": str(tmp_path / "home")}
    assert config_location(environ) == ConfigLocation(
        tmp_path / "home" / "config.toml", "OPENPROGRAM_HOME"
    )
    assert recordings_dir(environ) == tmp_path / "home" / "recordings"


def test_without_variables_the_platform_folders_are_used() -> None:
    location = config_location({})
    assert location.source == "default"
    assert location.path == Path(platformdirs.user_config_dir("openprogram")) / "config.toml"
    assert recordings_dir({}) == Path(platformdirs.user_data_dir("openprogram")) / "recordings"


def test_empty_variables_count_as_unset() -> None:
    assert config_location({"OPENPROGRAM_CONFIG": "", "OPENPROGRAM_HOME": ""}).source == "default"


def test_a_tilde_expands_to_the_given_home(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "OPENPROGRAM_CONFIG": "~/op/config.toml"}
    assert config_location(environ).path == tmp_path / "op" / "config.toml"
    assert recordings_dir({"HOME": str(tmp_path), "OPENPROGRAM_HOME": "~"}) == (
        tmp_path / "recordings"
    )


def test_relative_paths_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert config_location({"OPENPROGRAM_CONFIG": "my.toml"}).path == tmp_path / "my.toml"


def test_the_process_environment_is_the_default(tmp_path: Path) -> None:
    # tests/conftest.py points OPENPROGRAM_HOME at a folder under tmp_path
    location = config_location()
    assert location.source == "OPENPROGRAM_HOME"
    assert location.path == tmp_path / "openprogram-home" / "config.toml"
    assert recordings_dir() == tmp_path / "openprogram-home" / "recordings"
