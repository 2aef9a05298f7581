"""The user's own redaction covers tapes as it covers calls: what a taped function or an agent
tool took and gave is written without the user's secrets, and replay compares both sides
after the same redaction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openprogram
from openprogram import taped
from openprogram.agent.loop import run_agent
from openprogram.agent.tools import tool
from openprogram.providers import ECHO_MODEL
from openprogram.recording.reader import read_recording
from openprogram.recording.token_shapes import PLACEHOLDER

PATTERNS = [r"customer-\d+"]


@taped(name="profile")
def profile(customer: str) -> dict[str, str]:
    return {"customer": customer, "note": f"{customer} pays by card"}


@tool
def account(customer: str) -> str:
    """The account of a customer."""
    return f"account of {customer}: customer-99 is the parent"


def test_a_taped_function_is_written_without_the_users_secrets_and_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "profile.jsonl"
    with openprogram.record_replay(path, redact_patterns=PATTERNS):
        live = profile("customer-12345")
    assert live["note"] == "customer-12345 pays by card"  # the live run sees everything
    written = path.read_text()
    assert "customer-12345" not in written
    (entry,) = read_recording(path).tapes
    assert entry.args == {"customer": PLACEHOLDER}
    assert entry.result == {"customer": PLACEHOLDER, "note": f"{PLACEHOLDER} pays by card"}
    with openprogram.record_replay(path, mode="replay", redact_patterns=PATTERNS):
        # another customer of the same shape is the same argument once redacted
        assert profile("customer-777") == entry.result


def test_an_agent_tools_tape_is_written_without_the_users_secrets_and_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "account.jsonl"
    prompt = '/tool account {"customer": "customer-4242"}'

    def run() -> str:
        return asyncio.run(run_agent(ECHO_MODEL, prompt, tools=[account])).final.text

    with openprogram.record_replay(path, redact_patterns=PATTERNS):
        recorded = run()
    assert "customer-4242" in recorded
    assert "customer-4242" not in path.read_text()
    assert "customer-99" not in path.read_text()
    (entry,) = read_recording(path).tapes
    assert entry.tape == "tool:account"
    with openprogram.record_replay(
        path, mode="replay", redact_patterns=PATTERNS, tools={"account": "replay"}
    ):
        replayed = run()
    assert replayed == f"echo:account of {PLACEHOLDER}: {PLACEHOLDER} is the parent"


@taped(name="login")
def login(user: str, password: str) -> str:
    return f"{user} logged in with {password}"


def test_an_argument_removed_for_its_name_is_removed_where_the_result_echoes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "login.jsonl"
    with openprogram.record_replay(path):
        live = login("ada", "correct-horse-battery")
    assert live == "ada logged in with correct-horse-battery"
    assert "correct-horse-battery" not in path.read_text()
    (entry,) = read_recording(path).tapes
    assert entry.args == {"user": "ada", "password": PLACEHOLDER}
    assert entry.result == f"ada logged in with {PLACEHOLDER}"
    with openprogram.record_replay(path, mode="replay"):
        assert login("ada", "another-password-9") == entry.result
