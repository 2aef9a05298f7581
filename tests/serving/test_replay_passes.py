"""A recording ``serve`` replays again for each run of the program: a pass per run, one
after the other, through the same server — the openai SDK against a real server on loopback.
A run that starts again from the first recorded call, after the recording was served whole or
part-way, gets a new pass; ``--once`` keeps one pass per server start."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from openprogram.serving.sessions import SessionAccount
from tests.support.config_files import write_config
from tests.support.proxy_server import RunningProxy, running_proxy
from tests.support.sdk_server import SdkServer

PROMPTS = ("first", "second", "third")


def run_program(base_url: str, prompts: tuple[str, ...] = PROMPTS, **headers: str) -> list[str]:
    """The program: a conversation, one call per prompt (the second streamed), each reply
    added to the next request; what it printed."""
    client = openai.OpenAI(
        base_url=base_url, api_key="sk-test", max_retries=0, default_headers=headers
    )
    messages: list[dict[str, str]] = []
    printed = []
    for turn, prompt in enumerate(prompts):
        messages.append({"role": "user", "content": prompt})
        if turn == 1:
            stream = client.chat.completions.create(model="m", messages=messages, stream=True)  # type: ignore[arg-type]
            text = "".join(
                chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
            )
        else:
            reply = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
            text = reply.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": text})
        printed.append(text)
    return printed


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[str]]:
    """The program's three calls recorded through the server; what it printed live."""
    path = tmp_path / "agent.jsonl"
    with (
        SdkServer() as upstream,
        running_proxy(record=str(path), upstreams={"openai": upstream.base_url}) as proxy,
    ):
        live = run_program(proxy.openai_url)
    assert proxy.stop().exit_status == 0
    return path, live


def own_account(proxy: RunningProxy) -> SessionAccount:
    return proxy.stop().accounts[0]


def test_the_same_program_run_twice_gets_the_recording_twice(
    recorded: tuple[Path, list[str]],
) -> None:
    path, live = recorded
    with running_proxy(replay=str(path)) as proxy:
        first = run_program(proxy.openai_url)
        second = run_program(proxy.openai_url)
        third = run_program(proxy.openai_url)
    assert first == second == third == live
    account = own_account(proxy)
    assert (account.passes, account.calls, account.ok) == (3, 9, True)
    assert proxy.stop().exit_status == 0


def test_once_keeps_one_pass_and_refuses_the_second_run(
    recorded: tuple[Path, list[str]],
) -> None:
    path, live = recorded
    with running_proxy(replay=str(path), once=True) as proxy:
        assert run_program(proxy.openai_url) == live
        with pytest.raises(openai.APIStatusError) as refused:
            run_program(proxy.openai_url)
    assert refused.value.status_code == 412
    assert "replay mismatch at call 3, field call_index" in refused.value.message
    account = own_account(proxy)
    assert (account.passes, account.calls) == (1, 3)
    assert "the run makes more calls than the recording holds" in account.problems[0]
    assert proxy.stop().exit_status == 1


def test_a_run_that_starts_again_part_way_begins_a_new_pass_and_the_first_is_reported(
    recorded: tuple[Path, list[str]],
) -> None:
    path, live = recorded
    with running_proxy(replay=str(path)) as proxy:
        stopped_early = run_program(proxy.openai_url, PROMPTS[:2])  # stopped after 2 calls
        again = run_program(proxy.openai_url)
    assert stopped_early == live[:2]
    assert again == live
    account = own_account(proxy)
    assert (account.passes, account.passes_with_problems, account.calls) == (2, 1, 5)
    assert account.problems == [
        "pass 1: replay incomplete: 1 of 3 recorded calls never requested (call 2) from "
        f"{path}; the run stopped before the recorded session did"
    ]
    assert proxy.stop().exit_status == 1


def test_a_run_that_starts_differently_after_a_whole_pass_is_that_pass_s_mismatch_at_call_0(
    recorded: tuple[Path, list[str]],
) -> None:
    path, live = recorded
    with running_proxy(replay=str(path)) as proxy:
        assert run_program(proxy.openai_url) == live
        with pytest.raises(openai.APIStatusError) as drifted:
            run_program(proxy.openai_url, ("something else",))
    assert drifted.value.status_code == 412
    assert "replay mismatch at call 0, field body.messages[0].content" in drifted.value.message
    account = own_account(proxy)
    assert (account.passes, account.passes_with_problems) == (2, 1)
    assert account.problems[0].startswith(
        "pass 2: replay mismatch at call 0, field body.messages[0].content:"
    )


def test_a_first_request_made_again_within_a_run_stays_in_its_pass(tmp_path: Path) -> None:
    path = tmp_path / "repeats.jsonl"
    chat = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
    other = {"model": "m", "messages": [{"role": "user", "content": "pong"}]}
    with (
        SdkServer() as upstream,
        running_proxy(record=str(path), upstreams={"openai": upstream.base_url}) as proxy,
    ):
        for body in (chat, other, chat):  # calls 0 and 2 are the same request
            httpx.post(f"{proxy.openai_url}/chat/completions", json=body).raise_for_status()
    with running_proxy(replay=str(path)) as proxy:
        for _ in range(2):
            for body in (chat, other, chat):
                answer = httpx.post(f"{proxy.openai_url}/chat/completions", json=body)
                assert answer.status_code == 200, answer.text
    account = own_account(proxy)
    assert (account.passes, account.calls, account.ok) == (2, 6, True)


def test_order_matching_begins_a_pass_when_the_first_call_comes_again(
    recorded: tuple[Path, list[str]],
) -> None:
    path, live = recorded
    write_config('[record_replay]\nmatch = "order"\n')
    with running_proxy(replay=str(path)) as proxy:
        assert run_program(proxy.openai_url, PROMPTS[:1]) == live[:1]
        assert run_program(proxy.openai_url) == live
        assert run_program(proxy.openai_url) == live
    account = own_account(proxy)
    assert (account.passes, account.passes_with_problems, account.calls) == (3, 1, 7)


def test_a_recording_a_header_names_is_replayed_again_for_each_run(
    recorded: tuple[Path, list[str]],
) -> None:
    path, live = recorded
    with running_proxy(folder=path.parent) as proxy:
        names = {"x-openprogram-recording": "agent", "x-openprogram-mode": "replay"}
        headers = {**names, **proxy.auth}
        assert run_program(proxy.openai_url, **headers) == live
        assert run_program(proxy.openai_url, **headers) == live
        listed = httpx.get(f"{proxy.url}/__openprogram/sessions", headers=proxy.auth).json()
    [agent] = listed["open"]
    assert (agent["name"], agent["passes"], agent["calls"], agent["ok"]) == ("agent", 2, 6, True)
    assert proxy.stop().exit_status == 0


def test_a_session_of_the_control_api_is_one_run(recorded: tuple[Path, list[str]]) -> None:
    path, live = recorded
    with running_proxy(folder=path.parent) as proxy:
        opened = httpx.post(
            f"{proxy.url}/__openprogram/sessions",
            json={"name": "agent", "mode": "replay"},
            headers=proxy.auth,
        ).json()
        base = opened["base_urls"]["openai"]
        assert run_program(base, **proxy.auth) == live
        with pytest.raises(openai.APIStatusError) as refused:
            run_program(base, **proxy.auth)
    assert "more calls than the recording holds" in refused.value.message
