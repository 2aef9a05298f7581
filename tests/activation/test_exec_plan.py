"""The plan ``openprogram exec`` hands its processes: from the flags and the configuration,
read once; refused flag arguments, blocked configured states, and its JSON form."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.activation.configured import exec_plan
from openprogram.activation.plan import RecordReplayPlan
from openprogram.errors import ExecSetupError, RecordingFileError, RecordingNameError
from openprogram.recording.user_redaction import user_redaction_in_effect
from tests.support.config_files import configure, write_config
from tests.support.recording_rows import (
    read_rows,
    stored,
    write_corrupt_recording,
    write_recording,
)

HTTP_KEYS = """
http_passthrough_hosts = ["Telemetry.Example.com", "localhost:4318"]
http_headers = ["X-Tenant"]
ignore_fields = ["body.user"]
"""


def test_record_creates_a_new_recording_in_the_store_and_reads_the_http_keys() -> None:
    write_config("[record_replay]" + HTTP_KEYS)
    plan = exec_plan(record="first")
    assert plan == RecordReplayPlan(
        "record",
        stored("first"),
        ignore_fields=("body.user",),
        passthrough_hosts=frozenset({"telemetry.example.com", "localhost:4318"}),
        http_headers=frozenset({"x-tenant"}),
    )
    assert stored("first").read_text().startswith('{"type":"header"')


def test_record_refuses_a_recording_that_holds_calls_and_accepts_an_empty_one() -> None:
    write_recording("full", calls=2)
    with pytest.raises(ExecSetupError, match=r"already holds 2 calls: record into a new name"):
        exec_plan(record="full")
    write_recording("empty", calls=0)
    assert exec_plan(record="empty") == RecordReplayPlan("record", stored("empty"))


def test_replay_reads_the_recording_first_and_refuses_what_it_cannot_use(
    tmp_path: Path,
) -> None:
    write_recording("good", calls=1)
    assert exec_plan(replay="good") == RecordReplayPlan("replay", stored("good"))
    with pytest.raises(RecordingFileError, match="no such recording"):
        exec_plan(replay="missing")
    with pytest.raises(RecordingFileError, match="line 3"):
        exec_plan(replay=str(write_corrupt_recording(tmp_path / "bad.jsonl")))
    with pytest.raises(RecordingNameError):
        exec_plan(replay="x" * 200)
    with pytest.raises(ExecSetupError, match="exclude each other"):
        exec_plan(record="a", replay="good")


def test_without_a_flag_the_configured_mode_applies() -> None:
    assert exec_plan() is None  # off: the command runs as it is
    write_recording("configured", calls=1)
    configure("replay", "configured")
    assert exec_plan() == RecordReplayPlan("replay", stored("configured"))
    configure("record", "configured")  # appended to, as the runtime does
    assert exec_plan() == RecordReplayPlan("record", stored("configured"))


@pytest.mark.parametrize(
    ("config", "cause"),
    [
        ("[record_replay\n", "config.toml"),
        ('[record_replay]\nmode = "replay"\n', "record_replay.file is not set"),
        ('[record_replay]\nmode = "replay"\nfile = "missing"\n', "no such recording"),
        ('[record_replay]\nhttp_headers = ["Authorization"]\n', "never stored"),
    ],
)
def test_a_broken_configuration_or_recording_blocks_instead(config: str, cause: str) -> None:
    write_config(config)
    plan = exec_plan()
    assert plan is not None
    assert plan.mode == "blocked"
    assert cause in (plan.blocked_reason or "")


def test_a_broken_configuration_blocks_an_explicit_flag_too() -> None:
    write_recording("good", calls=1)
    write_config("[record_replay\n")
    plan = exec_plan(replay="good")
    assert plan is not None
    assert plan.mode == "blocked"


def test_the_plan_goes_to_the_processes_as_json_and_back() -> None:
    plan = RecordReplayPlan(
        "replay",
        Path("/r/a.jsonl"),
        ignore_fields=("x",),
        match="order",
        passthrough_hosts=frozenset({"h"}),
        http_headers=frozenset({"x-tenant"}),
        redact_patterns=("ACME-[0-9]{6}",),
    )
    assert RecordReplayPlan.from_json(plan.to_json()) == plan
    blocked = RecordReplayPlan.blocked("no recording")
    assert RecordReplayPlan.from_json(blocked.to_json()) == blocked
    for text in ("{", '{"format": 2}', '{"format": 1, "mode": "record"}', "[]"):
        with pytest.raises(ValueError, match=r"JSON|plan"):
            RecordReplayPlan.from_json(text)
    with pytest.raises(ValueError, match="needs a blocked_reason"):
        RecordReplayPlan("blocked")
    with pytest.raises(ValueError, match="needs the recording's path"):
        RecordReplayPlan("replay")


def test_replay_matches_by_content_unless_the_configuration_says_order() -> None:
    write_recording("good", calls=1)
    assert exec_plan(replay="good") == RecordReplayPlan("replay", stored("good"), match="content")
    write_config('[record_replay]\nmatch = "order"\n')
    plan = exec_plan(replay="good")
    assert plan is not None
    assert plan.match == "order"
    assert RecordReplayPlan.from_json(plan.to_json()).match == "order"
    with pytest.raises(ValueError, match="unknown matching 'fuzzy'"):
        RecordReplayPlan("replay", stored("good"), match="fuzzy")


def test_the_configured_redaction_patterns_go_into_the_plan_and_the_new_header() -> None:
    write_config("[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    plan = exec_plan(record="fresh")
    assert plan is not None
    assert plan.redact_patterns == ("ACME-[0-9]{6}",)
    header = read_rows(stored("fresh"))[0]
    expected = user_redaction_in_effect(patterns=["ACME-[0-9]{6}"])
    assert expected is not None
    assert header["redaction_fingerprint"] == expected.fingerprint
