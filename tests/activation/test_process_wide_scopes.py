"""Process-wide registry scopes: every thread and task sees them, they nest last in first
out, leaving one out of order is an error, and per-context scopes keep working inside."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from openprogram.providers import EchoProvider, get_api_provider, register_api_provider
from openprogram.providers.registry import (
    ApiProvider,
    RegistryTransform,
    ScopeOrderError,
    process_wide_scope,
    provider_scope,
    registered_apis,
)


class Marked(EchoProvider):
    def __init__(self, mark: str) -> None:
        self.mark = mark


def marking(mark: str) -> RegistryTransform:
    def transform(api: str, registered: ApiProvider | None) -> ApiProvider:
        return Marked(mark)

    return transform


def mark_of(api: str = "echo") -> str:
    provider = get_api_provider(api)
    return provider.mark if isinstance(provider, Marked) else type(provider).__name__


def in_a_thread() -> str:
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(mark_of()))
    thread.start()
    thread.join()
    return seen[0]


def test_threads_executors_and_tasks_see_a_process_wide_scope() -> None:
    waiting = threading.Event()
    go = threading.Event()
    seen: list[str] = []

    def started_before() -> None:
        waiting.set()
        go.wait(5)
        seen.append(mark_of())

    early = threading.Thread(target=started_before)
    early.start()
    waiting.wait(5)
    with process_wide_scope(transform=marking("fixture")):
        go.set()
        early.join()
        with ThreadPoolExecutor(max_workers=2) as pool:
            pooled = pool.submit(mark_of).result()
        tasked = asyncio.run(asyncio.to_thread(mark_of))
        assert (seen[0], in_a_thread(), pooled, tasked) == ("fixture",) * 4
    assert (mark_of(), in_a_thread()) == ("EchoProvider", "EchoProvider")


def test_process_wide_scopes_nest_and_leave_last_in_first_out() -> None:
    with process_wide_scope(transform=marking("outer")):
        register_api_provider("extra", EchoProvider())
        with process_wide_scope(transform=marking("inner")):
            assert in_a_thread() == "inner"
            assert "extra" in registered_apis()  # starts from the enclosing registrations
        assert in_a_thread() == "outer"
    assert "extra" not in registered_apis()


def test_leaving_one_out_of_order_is_an_error_and_removes_it_all_the_same() -> None:
    outer = process_wide_scope(transform=marking("outer"))
    inner = process_wide_scope(transform=marking("inner"))
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(ScopeOrderError, match="1 entered after this one is still active"):
        outer.__exit__(None, None, None)
    assert in_a_thread() == "inner"
    inner.__exit__(None, None, None)
    assert in_a_thread() == "EchoProvider"


def test_per_context_scopes_inside_and_around_a_process_wide_one() -> None:
    with provider_scope(transform=marking("context")):
        with process_wide_scope(transform=marking("process")):
            # the context that entered it sees it from inside its own per-context scope
            assert (mark_of(), in_a_thread()) == ("process", "process")
            with provider_scope(transform=marking("inner context")):
                assert (mark_of(), in_a_thread()) == ("inner context", "process")
        assert (mark_of(), in_a_thread()) == ("context", "EchoProvider")
