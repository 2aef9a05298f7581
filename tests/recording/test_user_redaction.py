"""User redaction: patterns and functions on top of the built-in rules, applied to what is
written and to both sides of replay's comparison; the fingerprint in the header; a file
recorded with another user redaction is not appended to."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import openprogram
from openprogram.errors import RecordingFileError, ReplayMismatch, UserRedactionError
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    RecordingProvider,
    ReplayProvider,
    UserMessage,
)
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.token_shapes import PLACEHOLDER
from openprogram.recording.user_redaction import (
    UserRedaction,
    compile_redact_pattern,
    register_redactor,
    user_redaction_in_effect,
)
from openprogram.recording.writer import close_recording_writers
from tests.support.recording_rows import read_rows

CUSTOMER = "customer-482913"


def hide_internal_hosts(text: str) -> str:
    return re.sub(r"[a-z]+\.corp\.internal", PLACEHOLDER, text)


@pytest.fixture(autouse=True)
def _nothing_registered() -> Iterator[None]:
    yield
    register_redactor(None)
    close_recording_writers()


# --- patterns and functions ------------------------------------------------------------------


def test_a_pattern_replaces_its_matches_or_only_its_secret_group() -> None:
    user = UserRedaction.of(patterns=[r"ACME-\d{6}", r"customer-(?P<secret>\d+)"])
    redactor = SecretRedactor([], user=user)
    assert redactor.redact_text(f"order ACME-123456 for {CUSTOMER}") == (
        f"order {PLACEHOLDER} for customer-{PLACEHOLDER}"
    )


def test_an_empty_match_changes_nothing() -> None:
    user = UserRedaction.of(patterns=[r"(?=x)", r"\b"])
    assert SecretRedactor([], user=user).redact_text("a x b") == "a x b"


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("ACME-(", "'ACME-(' is not a regular expression (missing ), unterminated subpattern"),
        ("secret", "'secret' matches part of the placeholder '[secret removed]' itself"),
    ],
)
def test_a_bad_pattern_is_refused_naming_it(source: str, problem: str) -> None:
    with pytest.raises(UserRedactionError) as caught:
        compile_redact_pattern(source)
    assert str(caught.value).startswith(problem)
    assert "\n" not in str(caught.value)


def test_a_function_applies_after_the_built_in_rules_and_its_failures_name_it() -> None:
    user = UserRedaction.of(functions=[(None, hide_internal_hosts)])
    assert user is not None
    redactor = SecretRedactor([], user=user)
    assert redactor.redact_text("db.corp.internal ghp_Zx9aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3w") == (
        f"{PLACEHOLDER} {PLACEHOLDER}"
    )

    def broken(text: str) -> str:
        raise KeyError("boom")

    failing = SecretRedactor([], user=UserRedaction.of(functions=[("acme-rules", broken)]))
    with pytest.raises(UserRedactionError, match="the redaction function acme-rules failed"):
        failing.redact_text("x")


def test_the_fingerprint_names_the_patterns_and_the_function_names() -> None:
    one = UserRedaction.of(patterns=["a1"], functions=[(None, hide_internal_hosts)])
    assert one is not None
    assert one.names == ["a1", f"{__name__}:hide_internal_hosts"]
    assert re.fullmatch(r"sha256:[0-9a-f]{16}", one.fingerprint)
    same = UserRedaction.of(patterns=["a1"], functions=[(None, hide_internal_hosts)])
    assert same is not None
    assert same.fingerprint == one.fingerprint
    for other in (
        UserRedaction.of(patterns=["a2"], functions=[(None, hide_internal_hosts)]),
        UserRedaction.of(patterns=["a1"], functions=[("hosts-v2", hide_internal_hosts)]),
        UserRedaction.of(patterns=["a1"]),
    ):
        assert other is not None
        assert other.fingerprint != one.fingerprint
    assert UserRedaction.of() is None


def test_in_effect_combines_the_patterns_the_registered_function_and_the_given_one() -> None:
    assert user_redaction_in_effect() is None
    register_redactor(hide_internal_hosts, name="hosts")
    user = user_redaction_in_effect(patterns=["ACME-[0-9]+"], redact=str.upper, redact_name="up")
    assert user is not None
    assert user.names == ["ACME-[0-9]+", "hosts", "up"]
    assert openprogram.user_redaction_in_effect() is not None
    register_redactor(None)
    assert user_redaction_in_effect() is None


# --- at the provider boundary ----------------------------------------------------------------


async def ask(provider: object, text: str) -> list[object]:
    context = Context(messages=[UserMessage(content=text)])
    stream = provider.stream_simple(ECHO_MODEL, context)  # type: ignore[attr-defined]
    return [event async for event in stream]


async def test_a_provider_recording_holds_no_match_and_replays_with_the_same_redaction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    user = UserRedaction.of(patterns=[r"customer-\d+"])
    await ask(RecordingProvider(EchoProvider(), path, redaction=user), f"refund {CUSTOMER}")
    close_recording_writers()
    assert CUSTOMER not in path.read_text()
    assert user is not None
    assert read_rows(path)[0]["redaction_fingerprint"] == user.fingerprint

    replay = ReplayProvider(path, redaction=user)
    await ask(replay, f"refund {CUSTOMER}")
    replay.assert_consumed()

    without = ReplayProvider(path)
    with pytest.raises(ReplayMismatch) as caught:
        await ask(without, f"refund {CUSTOMER}")
    assert caught.value.field_path == "context.messages[0].content"
    assert caught.value.note == (
        f"the recording was made with user redaction {user.fingerprint} and this replay has "
        "none: replay with the redaction patterns and functions it was recorded with"
    )


async def test_no_user_redaction_writes_no_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    await ask(RecordingProvider(EchoProvider(), path), "hi")
    assert "redaction_fingerprint" not in read_rows(path)[0]


async def test_a_recording_made_with_another_user_redaction_is_not_appended_to(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    await ask(RecordingProvider(EchoProvider(), path), "hi")
    close_recording_writers()
    before = path.read_bytes()
    other = UserRedaction.of(patterns=[r"customer-\d+"])
    with pytest.raises(RecordingFileError) as caught:
        await ask(RecordingProvider(EchoProvider(), path, redaction=other), "again")
    assert "recorded with another user redaction" in str(caught.value)
    assert "its header records no user redaction" in str(caught.value)
    assert path.read_bytes() == before


# --- record_replay() -------------------------------------------------------------------------


def echo(text: str) -> str:
    import asyncio

    from openprogram.providers import complete_simple

    return asyncio.run(
        complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=text)]))
    ).text


def test_record_replay_takes_patterns_and_a_function_and_the_registered_one(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    register_redactor(hide_internal_hosts, name="hosts")
    text = f"{CUSTOMER} on db.corp.internal"
    with openprogram.record_replay(path, redact_patterns=[r"customer-\d+"], redact=str.strip):
        assert echo(text) == f"echo:{text}"  # the live run sees everything
    written = path.read_text()
    assert CUSTOMER not in written
    assert "db.corp.internal" not in written
    with openprogram.record_replay(
        path, mode="replay", redact_patterns=[r"customer-\d+"], redact=str.strip
    ):
        assert echo(text) == f"echo:{PLACEHOLDER} on {PLACEHOLDER}"


def test_a_long_text_remembered_once_redacted_is_redacted_anew_under_other_rules() -> None:
    known = "opk-known-key-0123456789"
    text = "x" * 80 + f" {known}"
    assert SecretRedactor([]).redact_text(text) == text
    assert SecretRedactor([]).redact_text(text) == text  # remembered
    assert SecretRedactor([known]).redact_text(text) == "x" * 80 + f" {PLACEHOLDER}"
    user = UserRedaction.of(patterns=["x{80}"])
    assert SecretRedactor([], user=user).redact_text(text) == f"{PLACEHOLDER} {known}"
