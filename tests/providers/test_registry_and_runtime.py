"""The registry boundary and the runtime lifecycle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import traceback
from typing import Any

import pytest

from openprogram.errors import ProviderRuntimeError, UnknownApiError
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    Model,
    RuntimeState,
    UserMessage,
    complete,
    get_api_provider,
    initialize_provider_runtime,
    provider_runtime_status,
    provider_scope,
    register_api_provider,
    registered_apis,
    unregister_api_provider,
)
from openprogram.providers import builtins as builtins_module
from openprogram.providers.registry import ApiProvider


def test_import_has_no_side_effects() -> None:
    probe = textwrap.dedent(
        """
        import json, socket, sys
        opened, connected = [], []
        def audit(event, args):
            path = args[0] if event == "open" and isinstance(args[0], str) else ""
            # Python's own import machinery and package metadata are not our reads.
            if path and not path.endswith((".py", ".pyc", ".so", ".pth", ".zip")) and not any(
                part in path for part in ("__pycache__", "-info/", "site-packages")
            ):
                opened.append(path)
            if event in ("socket.connect", "socket.bind"):
                connected.append(repr(args))
        sys.addaudithook(audit)
        import openprogram.providers as providers
        from openprogram.providers import registry as scopes
        from openprogram.providers import runtime
        print(json.dumps({
            "providers": sorted(scopes.current_scope().providers),
            "transform": scopes.current_scope().transform is not None,
            "state": runtime.provider_runtime_status().state.value,
            "opened": opened,
            "connected": connected,
            "httpx": "httpx" in sys.modules,
        }))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    facts = json.loads(result.stdout)
    assert facts == {
        "providers": [],
        "transform": False,
        "state": "new",
        "opened": [],
        "connected": [],
        "httpx": False,
    }


def test_first_lookup_initializes_the_builtins() -> None:
    assert provider_runtime_status().state is RuntimeState.NEW
    assert isinstance(get_api_provider("echo"), EchoProvider)
    assert provider_runtime_status().state is RuntimeState.READY
    assert "echo" in registered_apis()


def test_unknown_api_names_the_registered_ones() -> None:
    with pytest.raises(UnknownApiError) as caught:
        get_api_provider("nope")
    assert "'nope'" in str(caught.value)
    assert "echo" in str(caught.value)
    assert caught.value.registered == registered_apis()


def test_an_unknown_api_suggests_the_registered_one_it_looks_like() -> None:
    with pytest.raises(UnknownApiError) as caught:
        get_api_provider("opnai-completions")
    assert caught.value.closest == "openai-completions"
    # Library callers keep the library's advice.
    assert "register one with register_api_provider() or fix model.api" in str(caught.value)

    with pytest.raises(UnknownApiError) as caught:
        get_api_provider("zzz")
    assert caught.value.closest is None


async def test_a_registration_made_before_first_use_is_not_overwritten() -> None:
    class Custom(EchoProvider):
        pass

    custom = Custom()
    register_api_provider("echo", custom)  # the very first registry touch
    assert get_api_provider("echo") is custom
    reply = await complete(ECHO_MODEL, Context(messages=[UserMessage(content="hi")]))
    assert reply.text == "echo:hi"


def test_scoped_registry_restores_exactly() -> None:
    before = {api: get_api_provider(api) for api in registered_apis()}
    with pytest.raises(RuntimeError), provider_scope() as scope:
        register_api_provider("extra", EchoProvider())
        unregister_api_provider("echo")
        scope.set_transform(lambda api, provider: provider)
        raise RuntimeError("leave the block abruptly")
    assert {api: get_api_provider(api) for api in registered_apis()} == before
    from openprogram.providers import registry as scopes

    assert scopes.current_scope().transform is None


def test_the_transform_wraps_current_and_future_entries_once() -> None:
    made: list[str] = []

    class Wrapper(EchoProvider):
        def __init__(self, inner: ApiProvider | None) -> None:
            self.inner = inner

    def wrap(api: str, provider: ApiProvider | None) -> ApiProvider | None:
        made.append(api)
        return Wrapper(provider)

    with provider_scope(transform=wrap):
        echo = get_api_provider("echo")
        assert isinstance(echo, Wrapper)
        assert get_api_provider("echo") is echo  # one wrapper per entry
        register_api_provider("later", EchoProvider())
        assert isinstance(get_api_provider("later"), Wrapper)
        unknown = get_api_provider("never-registered")  # the transform may answer for it
        assert isinstance(unknown, Wrapper)
        assert unknown.inner is None
    assert made == ["echo", "later", "never-registered"]


def test_concurrent_first_callers_share_one_initialization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    gate = threading.Event()

    def slow_echo(settings: object) -> ApiProvider:
        calls.append(1)
        gate.wait(5)
        return EchoProvider()

    monkeypatch.setitem(builtins_module.BUILTIN_PROVIDER_FACTORIES, "echo", slow_echo)
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda: results.append(get_api_provider("echo"))) for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join()
    assert calls == [1]
    assert len(results) == 6
    assert all(result is results[0] for result in results)


def test_recursive_initialization_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def recursive(settings: object) -> ApiProvider:
        return get_api_provider("echo")

    monkeypatch.setitem(builtins_module.BUILTIN_PROVIDER_FACTORIES, "echo", recursive)
    with pytest.raises(ProviderRuntimeError, match="called again by the thread"):
        initialize_provider_runtime()


def test_a_failed_builtin_fails_every_call_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(settings: object) -> ApiProvider:
        raise ImportError("vendor module missing")

    monkeypatch.setitem(builtins_module.BUILTIN_PROVIDER_FACTORIES, "echo", broken)
    errors = []
    for _ in range(3):
        with pytest.raises(ProviderRuntimeError) as caught:
            get_api_provider("echo")
        errors.append(caught.value)
    assert provider_runtime_status().state is RuntimeState.FAILED
    assert len({str(error) for error in errors}) == 1
    assert len({id(error) for error in errors}) == 3  # raised fresh each time
    assert errors[0].stage == "built-in registration of 'echo'"
    assert "ImportError: vendor module missing" in str(errors[0])


def test_a_failed_builtin_s_message_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(settings: object) -> ApiProvider:
        raise ValueError(
            "cannot reach https://bob:pa55-word-secret@gpu.example.test/v1?api_key=qk-123456789"
        )

    monkeypatch.setitem(builtins_module.BUILTIN_PROVIDER_FACTORIES, "echo", broken)
    with pytest.raises(ProviderRuntimeError) as caught:
        get_api_provider("echo")
    for text in (str(caught.value), caught.value.cause):
        assert "pa55-word-secret" not in text
        assert "qk-123456789" not in text
        assert "ValueError: cannot reach https://[secret removed]@gpu.example.test" in text


def test_a_failed_builtin_s_traceback_holds_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-factory-key-0123456789abcdef")

    def broken(settings: object) -> ApiProvider:
        key = os.environ["OPENAI_API_KEY"]
        raise ValueError(f"cannot use key {key} at https://bob:pa55-word-secret@host.test/v1")

    monkeypatch.setitem(builtins_module.BUILTIN_PROVIDER_FACTORIES, "echo", broken)
    for _ in range(2):  # the failure, then the runtime FAILED: every later call
        with pytest.raises(ProviderRuntimeError) as caught:
            get_api_provider("echo")
        error = caught.value
        assert (error.__cause__, error.__context__) == (None, None)
        printed = "".join(traceback.format_exception(error, chain=True))
        assert "ProviderRuntimeError: provider runtime failed during built-in registration" in (
            printed
        )
        for secret in ("factory-key-0123456789abcdef", "pa55-word-secret"):
            assert secret not in printed


async def test_a_provider_needing_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram.errors import MissingApiKeyError
    from openprogram.providers import StreamOptions, stream

    seen: list[str | None] = []

    class Keyed(EchoProvider):
        requires_credentials = True
        api_key_env = "KEYED_API_KEY"

        def stream(self, model: Model, context: Context, options: Any = None) -> Any:
            seen.append(options.api_key)
            return super().stream(model, context, options)

    model = Model(id="k", api="keyed", provider="keyed")
    hello = Context(messages=[UserMessage(content="hi")])
    with provider_scope():
        register_api_provider("keyed", Keyed())
        with pytest.raises(MissingApiKeyError, match="set KEYED_API_KEY"):
            stream(model, hello)
        monkeypatch.setenv("KEYED_API_KEY", "from-the-environment")
        _ = [e async for e in stream(model, hello)]
        _ = [e async for e in stream(model, hello, StreamOptions(api_key="from-options"))]
    assert seen == ["from-the-environment", "from-options"]


async def test_a_provider_s_key_variable_is_known_once_it_is_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openprogram.providers import stream
    from openprogram.recording import redaction

    class ReadsItsOwnKey(EchoProvider):
        requires_credentials = False  # reads SERVICE_CREDENTIAL itself
        api_key_env = "SERVICE_CREDENTIAL"

    monkeypatch.setattr(redaction, "_remembered_variables", set())
    monkeypatch.setenv("SERVICE_CREDENTIAL", "service-credential-value")
    model = Model(id="k", api="own-key", provider="own-key")
    with provider_scope():
        register_api_provider("own-key", ReadsItsOwnKey())
        _ = [e async for e in stream(model, Context(messages=[UserMessage(content="hi")]))]
    assert "service-credential-value" in redaction.known_secret_values()


def test_model_needs_only_three_fields() -> None:
    model = Model(id="gpt", api="openai-completions", provider="openai")
    assert model.headers is None
    assert model.reasoning is False
    assert Model(id="echo", api="echo", provider="echo") == ECHO_MODEL


def test_every_export_resolves() -> None:
    import openprogram.providers as providers

    assert set(providers._EXPORTS) == set(providers.__all__)
    for name in providers.__all__:
        assert getattr(providers, name) is not None


def test_no_export_is_shadowed_by_a_submodule() -> None:
    import importlib
    import pkgutil
    import types

    import openprogram.providers as providers

    for module in pkgutil.iter_modules(providers.__path__):
        importlib.import_module(f"openprogram.providers.{module.name}")
    for name in providers.__all__:
        assert not isinstance(getattr(providers, name), types.ModuleType), name
