"""One way to scope providers: scopes follow the context, isolated scopes never start the
runtime, bindings travel with a scope; and the registry, the runtime, activation and the
record/replay providers import one another without a loop."""

from __future__ import annotations

import ast
import asyncio
import contextvars
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import openprogram.activation
import openprogram.provider_boundary
import openprogram.providers
import openprogram.recording
import openprogram.tape_boundary
from openprogram.errors import UnknownApiError
from openprogram.providers import (
    EchoProvider,
    RuntimeState,
    get_api_provider,
    provider_runtime_status,
    register_api_provider,
    registered_apis,
)
from openprogram.providers.registry import (
    ApiProvider,
    provider_scope,
    scope_binding,
)

ROOT = Path(__file__).resolve().parents[2]


class Marked(EchoProvider):
    """An echo provider that says where it came from."""

    def __init__(self, mark: str, inner: ApiProvider | None = None) -> None:
        self.mark = mark
        self.inner = inner


def mark_of(api: str) -> str:
    provider = get_api_provider(api)
    return provider.mark if isinstance(provider, Marked) else type(provider).__name__


# --- scopes ----------------------------------------------------------------------------------


def test_a_scope_starts_from_the_enclosing_registrations_and_keeps_its_own() -> None:
    with provider_scope():
        register_api_provider("extra", Marked("outer"))
        with provider_scope():
            assert mark_of("extra") == "outer"
            register_api_provider("extra", Marked("inner"))
            assert mark_of("extra") == "inner"
        assert mark_of("extra") == "outer"
    assert "extra" not in registered_apis()
    assert mark_of("echo") == "EchoProvider"


def test_a_scope_s_transform_replaces_the_process_transform_for_its_block_only() -> None:
    # the whole test's changes are undone at the end
    with provider_scope(transform=lambda api, registered: Marked("configured mode", registered)):
        assert mark_of("echo") == "configured mode"
        with provider_scope(transform=lambda api, registered: Marked("fixture", registered)):
            assert mark_of("echo") == "fixture"
            wrapped = get_api_provider("echo")
            assert isinstance(wrapped, Marked)
            assert type(wrapped.inner) is EchoProvider  # the registered one, not the mode's
            assert get_api_provider("echo") is wrapped  # one wrapper per entry
            with provider_scope():  # an inner scope keeps the enclosing transform
                assert mark_of("echo") == "fixture"
        with provider_scope(transform=None):
            assert mark_of("echo") == "EchoProvider"
        assert mark_of("echo") == "configured mode"


async def test_tasks_and_copied_contexts_see_the_scope_other_threads_do_not() -> None:
    seen: dict[str, str] = {}
    with provider_scope(transform=lambda api, registered: Marked("scoped", registered)):

        async def in_a_task() -> None:
            seen["task"] = mark_of("echo")

        await asyncio.create_task(in_a_task())
        seen["to_thread"] = await asyncio.to_thread(mark_of, "echo")
        context = contextvars.copy_context()
        thread = threading.Thread(target=lambda: seen.update(copied=context.run(mark_of, "echo")))
        thread.start()
        thread.join()
        plain = threading.Thread(target=lambda: seen.update(thread=mark_of("echo")))
        plain.start()
        plain.join()
    assert seen == {
        "task": "scoped",
        "to_thread": "scoped",
        "copied": "scoped",
        "thread": "EchoProvider",
    }


def test_a_scope_in_one_thread_leaves_a_concurrent_thread_alone() -> None:
    entered, checked = threading.Event(), threading.Event()
    seen: list[str] = []

    def other_thread() -> None:
        entered.wait(5)
        seen.append(mark_of("echo"))
        seen.append(str("only-here" in registered_apis()))
        checked.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with provider_scope(transform=lambda api, registered: Marked("mine", registered)):
        register_api_provider("only-here", EchoProvider())
        entered.set()
        checked.wait(5)
        assert mark_of("echo") == "mine"
    thread.join()
    assert seen == ["EchoProvider", "False"]


def test_an_isolated_scope_answers_alone_and_never_starts_the_runtime() -> None:
    answer = Marked("isolated")
    with provider_scope(resolve=lambda api: answer if api == "echo" else None):
        assert get_api_provider("echo") is answer
        with pytest.raises(UnknownApiError) as caught:
            get_api_provider("openai-completions")
        assert caught.value.registered == []
        with provider_scope():  # a scope inside inherits the isolation
            assert get_api_provider("echo") is answer
    assert provider_runtime_status().state is RuntimeState.NEW
    with (
        pytest.raises(TypeError, match="takes no transform"),
        provider_scope(resolve=lambda api: answer, transform=None),
    ):
        pass


def test_bindings_travel_with_the_scope_but_not_into_an_isolated_one() -> None:
    recorder, replayer = object(), object()
    assert scope_binding("http") is None
    with provider_scope(bindings={"http": recorder}) as scope:
        assert scope_binding("http") is recorder
        assert scope.bindings == {"http": recorder}
        with provider_scope():
            assert scope_binding("http") is recorder
        with provider_scope(bindings={"http": replayer}):
            assert scope_binding("http") is replayer
        with provider_scope(resolve=lambda api: None):
            assert scope_binding("http") is None
        assert scope_binding("http") is recorder
    assert scope_binding("http") is None


def test_the_runtime_sets_up_the_process_scope_and_activation_may_bind() -> None:
    from openprogram.activation.configured import Activation
    from openprogram.providers.registry import PROCESS_SCOPE

    assert "bindings" in Activation.__dataclass_fields__
    get_api_provider("echo")  # starts the runtime: it registers into the process scope
    assert "echo" in PROCESS_SCOPE.providers


def test_the_public_package_exports_the_scope() -> None:
    assert openprogram.providers.provider_scope is provider_scope


# --- no import loop --------------------------------------------------------------------------

PACKAGES = [
    openprogram.activation,
    openprogram.providers,
    openprogram.provider_boundary,
    openprogram.recording,
    openprogram.tape_boundary,
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_level_imports(path: Path) -> Iterator[tuple[str, bool]]:
    """``(module, at import time)`` for every import in ``path`` that runs: at import time
    unless it sits in a function; an ``if TYPE_CHECKING:`` import never runs and is left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    deferred: set[int] = set()
    never_run: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            deferred.update(id(inner) for inner in ast.walk(node) if inner is not node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            never_run.update(id(inner) for inner in ast.walk(node) if inner is not node)
    for node in ast.walk(tree):
        if id(node) in never_run:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            yield name, id(node) not in deferred


def import_graph(*, import_time_only: bool) -> dict[str, set[str]]:
    modules = {
        module_name(path): path
        for package in PACKAGES
        for path in Path(package.__file__ or "").parent.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {
            target
            for target, at_import in module_level_imports(path)
            if target in modules and target != name and (at_import or not import_time_only)
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_import_graph_check_finds_a_loop() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_providers_and_the_core_have_no_import_loop_at_import_time() -> None:
    assert find_cycle(import_graph(import_time_only=True)) is None


LOOP = (
    "openprogram.providers.registry",
    "openprogram.providers.runtime",
    "openprogram.activation.configured",
    "openprogram.provider_boundary.recorder",
)


def test_the_registry_runtime_activation_recorder_loop_is_gone() -> None:
    """Counting imports inside functions too: nothing below the registry reaches back up."""
    graph = import_graph(import_time_only=False)
    below_the_registry = [
        "openprogram.providers.runtime",
        "openprogram.activation.configured",
        "openprogram.provider_boundary.recorder",
        "openprogram.provider_boundary.replay",
        "openprogram.provider_boundary.transforms",
        "openprogram.tape_boundary.deck",
    ]
    for module in below_the_registry:
        assert "openprogram.providers.registry" not in graph[module], module
    for module in [
        "openprogram.provider_boundary.recorder",
        "openprogram.provider_boundary.replay",
        "openprogram.provider_boundary.transforms",
    ]:
        assert "openprogram.providers.runtime" not in graph[module], module
        assert "openprogram.activation.configured" not in graph[module], module
    assert "openprogram.providers.runtime" in graph["openprogram.providers.registry"]


IMPORT_ALONE = """
import json, sys
__import__(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m in json.loads(sys.argv[2]) or m == "httpx")))
"""


@pytest.mark.parametrize(
    ("module", "loaded"),
    [
        ("openprogram.activation.configured", ["openprogram.activation.configured"]),
        ("openprogram.providers.runtime", ["openprogram.providers.runtime"]),
        ("openprogram.provider_boundary.recorder", ["openprogram.provider_boundary.recorder"]),
        ("openprogram.provider_boundary.replay", ["openprogram.provider_boundary.replay"]),
        (
            "openprogram.provider_boundary.transforms",
            ["openprogram.provider_boundary.recorder", "openprogram.provider_boundary.transforms"],
        ),
        (
            "openprogram.providers.registry",
            ["openprogram.providers.registry", "openprogram.providers.runtime"],
        ),
    ],
)
def test_each_module_imports_alone_and_only_what_is_below_it(
    module: str, loaded: list[str]
) -> None:
    watched = [
        *LOOP,
        "openprogram.provider_boundary.replay",
        "openprogram.provider_boundary.transforms",
    ]
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_ALONE, module, json.dumps(watched)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == loaded


def test_the_registry_and_the_runtime_never_reach_back_to_themselves() -> None:
    """Imports made inside functions count too: starting the runtime registers the built-in
    providers, and they ask whether a URL is on loopback without going through the registry.
    (A provider importing its httpx half inside a function, for start-up time, is fine.)"""
    graph = import_graph(import_time_only=False)

    def reaches(start: str, goal: str) -> bool:
        seen: set[str] = set()
        todo = list(graph.get(start, ()))
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    for module in (
        "openprogram.providers.registry",
        "openprogram.providers.runtime",
        "openprogram.activation.configured",
        "openprogram.recording.writer",
    ):
        assert not reaches(module, module), module
