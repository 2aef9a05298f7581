"""``status`` and the ``OPENPROGRAM_…`` variables: no secret is printed, and a misspelt
variable — ignored, so the run goes live — is pointed out with the name it meant."""

from __future__ import annotations

import json

import pytest

from openprogram.store.status import HIDDEN
from tests.support.cli_runner import run
from tests.support.recording_rows import write_recording

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OPENPROGRAM_PROVIDERS__X__API_KEY_ENV", KEY),  # the key where its NAME belongs
        ("OPENPROGRAM_PROVIDERS__X__API_KEY_ENV", "MY_KEY_VARIABLE"),
        ("OPENPROGRAM_PROVIDERS", json.dumps({"x": {"api_key_env": KEY}})),
        ("OPENPROGRAM_PROVIDERS", json.dumps([KEY])),
        ("OPENPROGRAM_DEFAULT_MODEL", f"x:{KEY}"),
        ("OPENPROGRAM_PROVIDERS__X__BASE_URL", f"https://u:{KEY}@host/v1"),
    ],
    ids=["key-as-name", "name", "json-table", "json-list", "model", "url-password"],
)
def test_status_never_prints_a_secret(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, as_json: bool
) -> None:
    monkeypatch.setenv(name, value)

    result = run("status", *(["--json"] if as_json else []))

    assert "Traceback" not in result.output
    assert KEY not in result.output
    assert KEY[:20] not in result.output
    if name.endswith("API_KEY_ENV") or value.startswith(("[", "{")):
        assert f"{name}={HIDDEN}" in result.stdout or f'"{name}": "{HIDDEN}"' in result.stdout


def test_a_known_key_s_value_is_removed_from_what_status_repeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plain-looking-secret-value")
    monkeypatch.setenv("OPENPROGRAM_DEFAULT_MODEL", "x:plain-looking-secret-value")

    result = run("status", "--json")

    assert "plain-looking-secret-value" not in result.stdout
    assert json.loads(result.stdout)["env_overrides"] == {
        "OPENPROGRAM_DEFAULT_MODEL": "x:[secret removed]"
    }


def test_an_ordinary_override_is_shown_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "off")

    result = run("status")

    assert "override: OPENPROGRAM_RECORD_REPLAY__MODE=off" in result.stdout


@pytest.mark.parametrize(
    ("misspelt", "meant"),
    [
        ("OPENPROGRAM_RECORD_REPLAY_MODE", "OPENPROGRAM_RECORD_REPLAY__MODE"),
        ("OPENPROGRAM_RECORD_REPLAY_FILE", "OPENPROGRAM_RECORD_REPLAY__FILE"),
        ("openprogram_recordreplay__mode", "OPENPROGRAM_RECORD_REPLAY__MODE"),
        ("OPENPROGRAM_DEFAULT_MODLE", "OPENPROGRAM_DEFAULT_MODEL"),
        ("OPENPROGRAM_PROVIDERS_X_TIMEOUT", "OPENPROGRAM_PROVIDERS__X__TIMEOUT"),
    ],
)
def test_a_misspelt_variable_is_pointed_out_with_the_name_it_meant(
    monkeypatch: pytest.MonkeyPatch, misspelt: str, meant: str
) -> None:
    monkeypatch.setenv(misspelt, "value-7f3a")

    human = run("status")
    as_json = json.loads(run("status", "--json").stdout)

    assert human.exit_code == 0, human.output
    note = f"{misspelt} is not a setting, so it is ignored: did you mean {meant}?"
    assert f"note:    {note}" in human.stdout
    assert as_json["ignored_env"] == {misspelt: meant}
    assert note in as_json["notes"]
    assert "value-7f3a" not in human.stdout + json.dumps(as_json)  # names only, never values


def test_the_mode_a_misspelt_variable_meant_is_not_in_force(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_recording("demo", calls=1)
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY_MODE", "replay")

    result = run("status")

    assert "mode:    off" in result.stdout
    assert "did you mean OPENPROGRAM_RECORD_REPLAY__MODE?" in result.stdout


def test_a_variable_close_to_nothing_is_still_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_SOMETHING_ELSE", "1")

    as_json = json.loads(run("status", "--json").stdout)

    assert as_json["ignored_env"] == {"OPENPROGRAM_SOMETHING_ELSE": None}
    assert "OPENPROGRAM_SOMETHING_ELSE is not a setting, so it is ignored" in as_json["notes"]


@pytest.mark.parametrize("command", [["off"], ["off", "--json"], ["record", "demo", "--json"]])
def test_switching_commands_never_print_a_secret_either(
    monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY", json.dumps({"mode": "replay", "file": KEY}))
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__FILE", f"{KEY}.jsonl")

    result = run(*command)

    assert result.exit_code == 0, result.output
    assert KEY[:20] not in result.output
    if "--json" in command:
        overrides = json.loads(result.stdout)["env_overrides"]
        assert overrides["OPENPROGRAM_RECORD_REPLAY"] == HIDDEN
        assert overrides["OPENPROGRAM_RECORD_REPLAY__FILE"] == "[secret removed].jsonl"


def test_the_recording_proxy_s_variables_are_not_taken_for_misspelt_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # exec tells a command where its proxy is; the test runners' setup files read their own
    monkeypatch.setenv("OPENPROGRAM_SERVE_URL", "http://127.0.0.1:7878")
    monkeypatch.setenv("OPENPROGRAM_SERVE_MODE", "replay")

    as_json = json.loads(run("status", "--json").stdout)

    assert as_json["ignored_env"] == {}
