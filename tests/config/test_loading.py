"""load_config: the file, environment variables over it, and problems named where they are."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from openprogram.config.models import ProviderSettings, RecordReplaySettings, Settings
from openprogram.config.settings import LoadedConfig, load_config, read_settings
from openprogram.errors import ConfigError, OpenProgramError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "op-home"
    folder.mkdir()
    return folder


def write_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text)
    return path


def load(home: Path, **variables: str) -> LoadedConfig:
    return load_config({"OPENPROGRAM_HOME": str(home), **variables})


def test_no_file_means_the_defaults(home: Path) -> None:
    loaded = load(home)
    assert loaded.exists is False
    assert loaded.error is None
    assert loaded.location.path == home / "config.toml"
    assert loaded.location.source == "OPENPROGRAM_HOME"
    assert loaded.settings == Settings.model_construct(
        record_replay=RecordReplaySettings(), default_model=None, providers={}
    )
    assert loaded.env_overrides == {}
    assert loaded.mode_forced_by_env is None


def test_the_file_values_are_read(home: Path) -> None:
    write_config(
        home,
        """
default_model = "openai-completions:llama3:8b"

[record_replay]
mode = "replay"
file = "demo"
ignore_fields = ["context.tools"]

[providers.openai-completions]
base_url = "http://localhost:11434/v1"
api_key_env = "OLLAMA_KEY"
timeout = 30
""",
    )
    loaded = load(home)
    assert loaded.exists is True
    assert loaded.error is None
    settings = loaded.settings
    assert settings is not None
    assert settings.record_replay == RecordReplaySettings(
        mode="replay", file="demo", ignore_fields=["context.tools"]
    )
    assert settings.default_model == "openai-completions:llama3:8b"
    assert settings.providers == {
        "openai-completions": ProviderSettings(
            base_url="http://localhost:11434/v1", api_key_env="OLLAMA_KEY", timeout=30.0
        )
    }


def test_environment_variables_override_the_file_nested_with_double_underscores(
    home: Path,
) -> None:
    write_config(
        home,
        '[record_replay]\nmode = "record"\nfile = "demo"\n\n[providers.x]\ntimeout = 3\n',
    )
    loaded = load(
        home,
        OPENPROGRAM_RECORD_REPLAY__MODE="replay",
        OPENPROGRAM_PROVIDERS__X__BASE_URL="http://localhost:8080",
    )
    assert loaded.error is None
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "replay"
    assert loaded.settings.record_replay.file == "demo"  # the rest of the table stays
    assert loaded.settings.providers["x"] == ProviderSettings(
        base_url="http://localhost:8080", timeout=3
    )
    assert loaded.env_overrides == {
        "OPENPROGRAM_PROVIDERS__X__BASE_URL": "http://localhost:8080",
        "OPENPROGRAM_RECORD_REPLAY__MODE": "replay",
    }
    assert loaded.mode_forced_by_env == "replay"


def test_environment_names_are_case_insensitive(home: Path) -> None:
    loaded = load(home, openprogram_Record_Replay__mode="record", OPENPROGRAM_DEFAULT_MODEL="a:b")
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "record"
    assert loaded.settings.default_model == "a:b"
    assert loaded.mode_forced_by_env == "record"


def test_list_and_table_variables_are_json_and_merge_with_the_file(home: Path) -> None:
    write_config(home, "[providers.a]\ntimeout = 1\n\n[providers.b]\ntimeout = 2\n")
    loaded = load(
        home,
        OPENPROGRAM_RECORD_REPLAY__IGNORE_FIELDS='["x", "y.z"]',
        OPENPROGRAM_PROVIDERS='{"b": {"base_url": "http://b"}}',
    )
    assert loaded.settings is not None
    assert loaded.settings.record_replay.ignore_fields == ["x", "y.z"]
    assert loaded.settings.providers == {
        "a": ProviderSettings(timeout=1),
        "b": ProviderSettings(timeout=2, base_url="http://b"),
    }


def test_a_json_record_replay_variable_forces_its_mode(home: Path) -> None:
    loaded = load(home, OPENPROGRAM_RECORD_REPLAY='{"mode": "replay", "file": "x"}')
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "replay"
    assert loaded.mode_forced_by_env == "replay"


def test_home_config_and_debug_are_not_settings(home: Path) -> None:
    write_config(home, '[record_replay]\nmode = "record"\n')
    loaded = load_config(
        {
            "OPENPROGRAM_HOME": str(home),
            "OPENPROGRAM_CONFIG": str(home / "config.toml"),
            "OPENPROGRAM_DEBUG": "yes please",
            "openprogram_debug": "1",
        }
    )
    assert loaded.error is None
    assert loaded.env_overrides == {}
    assert loaded.ignored_env == {}


def test_variables_that_set_nothing_are_reported_not_applied(home: Path) -> None:
    loaded = load(home, OPENPROGRAM_RECORD_REPLAY_MODE="replay", OPENPROGRAM_DEFAULT_MODEL__X="1")
    assert loaded.error is None
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "off"
    assert loaded.env_overrides == {}
    assert loaded.ignored_env == {
        "OPENPROGRAM_DEFAULT_MODEL__X": "1",
        "OPENPROGRAM_RECORD_REPLAY_MODE": "replay",
    }


def test_invalid_toml_names_the_line_and_column(home: Path) -> None:
    path = write_config(home, '# fine\n[record_replay]\nmode = "off"\nfile = demo\n')
    loaded = load(home)
    assert loaded.settings is None
    assert loaded.exists is True
    error = loaded.error
    assert isinstance(error, ConfigError)
    assert (error.path, error.line, error.column, error.key) == (path, 4, 8, None)
    assert str(error) == (
        f"{path}, line 4, column 8: not valid TOML: invalid value; "
        "fix it or run `openprogram recordings off` to repair"
    )


def test_toml_that_ends_too_early_names_the_last_line(home: Path) -> None:
    write_config(home, '[record_replay]\nmode = "off\n')
    error = load(home).error
    assert error is not None
    assert error.line == 2


def test_text_that_is_not_utf8_names_the_line(home: Path) -> None:
    (home / "config.toml").write_bytes(b'[record_replay]\nmode = "\xff"\n')
    error = load(home).error
    assert error is not None
    assert error.line == 2
    assert "not UTF-8" in error.problem


def test_an_invalid_value_names_its_line_and_dotted_key(home: Path) -> None:
    path = write_config(
        home,
        '# top\ndefault_model = "echo:echo"\n\n[record_replay]\nmode = "sometimes"  # oops\n',
    )
    error = load(home).error
    assert isinstance(error, ConfigError)
    assert (error.path, error.line, error.key, error.env_var) == (
        path,
        5,
        "record_replay.mode",
        None,
    )
    assert str(error) == (
        f"{path}, line 5: record_replay.mode: must be one of off, record, replay "
        "(found 'sometimes'); fix it or run `openprogram recordings off` to repair"
    )


@pytest.mark.parametrize(
    ("text", "line", "key", "problem"),
    [
        (
            "[providers.openai-completions]\nbase_url = 'http://h'\ntimeout = -1\n",
            3,
            "providers.openai-completions.timeout",
            "must be greater than 0 (found -1)",
        ),
        ("# a comment\na = 1\n", 2, "a", "unknown key"),
        ("record_replay.mode = 'x'\n", 1, "record_replay.mode", "must be one of"),
        ("\nrecord_replay = { mode = 'x' }\n", 2, "record_replay.mode", "must be one of"),
        ('[providers."my api"]\n\ntimeout = "soon"\n', 3, 'providers."my api".timeout', "must be"),
        ("[record_replay]\nignore_fields = ['a', 3]\n", 2, "record_replay.ignore_fields", "str"),
        ("default_model = 'gpt-4o'\n", 1, "default_model", "must be api:model-id"),
        ("record_replay = 'off'\n", 1, "record_replay", "must be a table"),
    ],
)
def test_value_problems_name_line_and_key(
    home: Path, text: str, line: int, key: str, problem: str
) -> None:
    write_config(home, text)
    error = load(home).error
    assert error is not None
    assert (error.line, error.key) == (line, key)
    assert problem in error.problem


def test_an_unknown_table_is_named_with_the_known_keys(home: Path) -> None:
    path = write_config(home, '[providers.x]\ntimeout = 1\n\n[record_repaly]\nmode = "record"\n')
    error = load(home).error
    assert error is not None
    assert (error.line, error.key) == (4, "record_repaly")
    assert str(error) == (
        f"{path}, line 4: record_repaly: unknown key (known keys: record_replay, "
        "default_model, providers); fix it or run `openprogram recordings off` to repair"
    )


def test_an_unknown_provider_key_is_named(home: Path) -> None:
    write_config(home, "[providers.x]\ntimeout = 1\ntimout = 2\n")
    error = load(home).error
    assert error is not None
    assert (error.line, error.key) == (3, "providers.x.timout")
    assert "known keys: base_url, api_key_env, timeout" in error.problem


def test_a_bad_environment_variable_is_named(home: Path) -> None:
    loaded = load(home, OPENPROGRAM_RECORD_REPLAY__MODE="bogus")
    error = loaded.error
    assert error is not None
    assert loaded.settings is None
    assert (error.env_var, error.path, error.key) == (
        "OPENPROGRAM_RECORD_REPLAY__MODE",
        None,
        "record_replay.mode",
    )
    assert str(error) == (
        "OPENPROGRAM_RECORD_REPLAY__MODE=bogus: must be one of off, record, replay "
        "(found 'bogus'); unset it or fix its value"
    )


def test_the_variable_at_fault_is_found_among_several(home: Path) -> None:
    loaded = load(
        home,
        OPENPROGRAM_RECORD_REPLAY__MODE="replay",
        OPENPROGRAM_PROVIDERS__X__TIMEOUT="-5",
        OPENPROGRAM_DEFAULT_MODEL="echo:echo",
    )
    assert loaded.error is not None
    assert loaded.error.env_var == "OPENPROGRAM_PROVIDERS__X__TIMEOUT"


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("OPENPROGRAM_RECORD_REPLAY__IGNORE_FIELDS", "a,b", "must be JSON"),
        ("OPENPROGRAM_RECORD_REPLAY__BOGUS", "1", "unknown key"),
        ("OPENPROGRAM_RECORD_REPLAY__FILE", "", "must not be empty"),
    ],
)
def test_bad_variables_of_every_kind_are_named(
    home: Path, name: str, value: str, problem: str
) -> None:
    error = load(home, **{name: value}).error
    assert error is not None
    assert error.env_var == name
    assert problem in error.problem


def test_a_file_problem_is_reported_before_the_environment(home: Path) -> None:
    write_config(home, '[record_replay]\nmode = "sometimes"\n')
    error = load(home, OPENPROGRAM_RECORD_REPLAY__MODE="off").error
    assert error is not None
    assert (error.env_var, error.line) == (None, 2)


def test_a_folder_at_the_config_path_is_an_error(home: Path) -> None:
    (home / "config.toml").mkdir()
    loaded = load(home)
    assert loaded.settings is None
    assert loaded.exists is True
    assert loaded.error is not None
    assert loaded.error.path == home / "config.toml"
    assert "is a folder" in str(loaded.error)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_an_error(home: Path) -> None:
    path = write_config(home, '[record_replay]\nmode = "off"\n')
    path.chmod(0)
    error = load(home).error
    assert error is not None
    assert "cannot be read" in error.problem


def test_a_path_under_a_file_is_an_error_not_a_crash(home: Path) -> None:
    write_config(home, "")
    loaded = load_config({"OPENPROGRAM_CONFIG": str(home / "config.toml" / "inner.toml")})
    assert loaded.error is not None
    assert loaded.exists is False


@pytest.mark.parametrize(
    ("reference", "valid"),
    [
        ("openai-completions:llama3:8b", True),
        ("echo:echo", True),
        ("a:b:", True),
        ("gpt-4o", False),
        (":gpt-4o", False),
        ("openai-completions:", False),
        ("", False),
    ],
)
def test_default_model_is_api_colon_model_id(home: Path, reference: str, valid: bool) -> None:
    write_config(home, f"default_model = {reference!r}\n".replace("'", '"'))
    assert (load(home).error is None) is valid


def test_split_model_reference_splits_at_the_first_colon() -> None:
    from openprogram.config.models import split_model_reference

    assert split_model_reference("openai-completions:llama3:8b") == (
        "openai-completions",
        "llama3:8b",
    )
    with pytest.raises(ValueError, match="api:model-id"):
        split_model_reference("llama3")


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "_X", "key2"])
def test_api_key_env_accepts_variable_names(home: Path, name: str) -> None:
    write_config(home, f'[providers.x]\napi_key_env = "{name}"\n')
    assert load(home).error is None


@pytest.mark.parametrize("value", ["sk-proj-abc123XYZ", "2FOO", "MY KEY", ""])
def test_api_key_env_refuses_anything_else_and_never_repeats_it(home: Path, value: str) -> None:
    write_config(home, f'[providers.x]\napi_key_env = "{value}"\n')
    error = load(home).error
    assert error is not None
    assert error.key == "providers.x.api_key_env"
    assert "never the key itself" in error.problem
    if value:
        assert value not in str(error)


def test_a_key_in_an_api_key_env_variable_is_not_repeated(home: Path) -> None:
    error = load(home, OPENPROGRAM_PROVIDERS__X__API_KEY_ENV="sk-secret-123").error
    assert error is not None
    assert "sk-secret-123" not in str(error)


def test_timeout_must_be_positive_and_finite(home: Path) -> None:
    for text in ("timeout = 0", "timeout = inf", "timeout = nan"):
        write_config(home, f"[providers.x]\n{text}\n")
        assert load(home).error is not None, text
    write_config(home, "[providers.x]\ntimeout = 0.5\n")
    assert load(home).error is None


def test_base_url_must_be_http(home: Path) -> None:
    write_config(home, '[providers.x]\nbase_url = "localhost:11434"\n')
    error = load(home).error
    assert error is not None
    assert "http://" in error.problem


def test_read_settings_raises_the_error(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(home))
    assert read_settings().record_replay.mode == "off"
    write_config(home, "[record_replay\n")
    with pytest.raises(ConfigError) as caught:
        read_settings()
    assert isinstance(caught.value, OpenProgramError)
    assert caught.value.line == 1


def test_load_config_reads_the_process_environment_by_default(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENPROGRAM_HOME", str(home))
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "record")
    loaded = load_config()
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "record"


def test_settings_are_read_only(home: Path) -> None:
    settings = load(home).settings
    assert settings is not None
    with pytest.raises(ValueError, match="frozen"):
        settings.record_replay.mode = "record"  # type: ignore[misc]


def test_config_errors_survive_pickling(home: Path) -> None:
    write_config(home, '[record_replay]\nmode = "x"\n')
    error = load(home).error
    assert error is not None
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.line, copy.key, copy.path) == (
        str(error),
        error.line,
        error.key,
        error.path,
    )


def test_a_permission_error_is_an_error_not_a_crash(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(home, '[record_replay]\nmode = "off"\n')

    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == home / "config.toml":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    loaded = load(home)
    assert loaded.settings is None
    assert loaded.exists is True
    assert loaded.error is not None
    assert str(loaded.error) == (
        f"{home / 'config.toml'}: cannot be read (Permission denied); "
        "fix its permissions or set OPENPROGRAM_CONFIG to another file"
    )


def test_settings_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "replay")
    monkeypatch.setenv("OPENPROGRAM_DEFAULT_MODEL", "echo:echo")
    settings = Settings(record_replay=RecordReplaySettings(mode="record"))
    assert settings.record_replay.mode == "record"
    assert settings.default_model == "echo:echo"


def test_a_bad_redaction_pattern_names_the_key_and_the_pattern_on_one_line(home: Path) -> None:
    path = write_config(home, "[record_replay]\nredact_patterns = ['ACME-[0-9]{6}', 'id-(']\n")
    error = load(home).error
    assert isinstance(error, ConfigError)
    assert (error.line, error.key) == (2, "record_replay.redact_patterns")
    assert str(error).startswith(
        f"{path}, line 2: record_replay.redact_patterns: 'id-(' is not a regular expression"
        " (missing ), unterminated subpattern at position 3)"
    )
    assert "\n" not in str(error)
    write_config(home, "[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    assert load(home).error is None
    loaded = load(home, OPENPROGRAM_RECORD_REPLAY__REDACT_PATTERNS='["x("]')
    assert loaded.error is not None
    assert "OPENPROGRAM_RECORD_REPLAY__REDACT_PATTERNS" in str(loaded.error)
    assert "'x(' is not a regular expression" in str(loaded.error)
