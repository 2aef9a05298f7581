"""The provider layer: its types, the registry every model call passes through, and the
providers openprogram ships. Record and replay at this boundary live in
:mod:`openprogram.provider_boundary`; they are installed through the registry's scopes.

    types      the models, messages, contexts and options, as pydantic models
    events     the events a provider streams, and the message they assemble into
    registry   the lookup, its scopes and bindings, and the one place the runtime is
               installed
    runtime    the built-ins made and the configured mode activated, once a process
    streaming  ``stream``, ``stream_simple``, ``complete`` and ``complete_simple``
    builtins   the echo, OpenAI Chat Completions and Anthropic Messages providers

Importing this package defines and exports only: it registers no provider, reads no
configuration, opens no recording and no socket. The first registry lookup initializes the
provider runtime (see :func:`initialize_provider_runtime`). Exports are loaded on first use
(PEP 562), so importing one module does not build every pydantic model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.provider_boundary.recorder import RecordingProvider
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.providers.builtins.echo import ECHO_MODEL, EchoProvider
    from openprogram.providers.events import (
        AssistantMessageEvent,
        DoneEvent,
        ErrorEvent,
        MessageAccumulator,
        StartEvent,
        TextDeltaEvent,
        TextEndEvent,
        TextStartEvent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ThinkingStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
        ToolCallStartEvent,
    )
    from openprogram.providers.registry import (
        ApiProvider,
        get_api_provider,
        initialize_provider_runtime,
        provider_scope,
        register_api_provider,
        registered_apis,
        unregister_api_provider,
    )
    from openprogram.providers.runtime import RuntimeState, RuntimeStatus, provider_runtime_status
    from openprogram.providers.streaming import complete, complete_simple, stream, stream_simple
    from openprogram.providers.types import (
        AssistantMessage,
        Context,
        ImageContent,
        Message,
        Model,
        SimpleStreamOptions,
        StopReason,
        StreamOptions,
        TextContent,
        ThinkingContent,
        Tool,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )

_EXPORTS: dict[str, str] = {
    "ApiProvider": "openprogram.providers.registry",
    "AssistantMessage": "openprogram.providers.types",
    "AssistantMessageEvent": "openprogram.providers.events",
    "Context": "openprogram.providers.types",
    "DoneEvent": "openprogram.providers.events",
    "ECHO_MODEL": "openprogram.providers.builtins.echo",
    "EchoProvider": "openprogram.providers.builtins.echo",
    "ErrorEvent": "openprogram.providers.events",
    "ImageContent": "openprogram.providers.types",
    "Message": "openprogram.providers.types",
    "MessageAccumulator": "openprogram.providers.events",
    "Model": "openprogram.providers.types",
    "RecordingProvider": "openprogram.provider_boundary.recorder",
    "ReplayProvider": "openprogram.provider_boundary.replay",
    "RuntimeState": "openprogram.providers.runtime",
    "RuntimeStatus": "openprogram.providers.runtime",
    "SimpleStreamOptions": "openprogram.providers.types",
    "StartEvent": "openprogram.providers.events",
    "StopReason": "openprogram.providers.types",
    "StreamOptions": "openprogram.providers.types",
    "TextContent": "openprogram.providers.types",
    "TextDeltaEvent": "openprogram.providers.events",
    "TextEndEvent": "openprogram.providers.events",
    "TextStartEvent": "openprogram.providers.events",
    "ThinkingContent": "openprogram.providers.types",
    "ThinkingDeltaEvent": "openprogram.providers.events",
    "ThinkingEndEvent": "openprogram.providers.events",
    "ThinkingStartEvent": "openprogram.providers.events",
    "Tool": "openprogram.providers.types",
    "ToolCall": "openprogram.providers.types",
    "ToolCallDeltaEvent": "openprogram.providers.events",
    "ToolCallEndEvent": "openprogram.providers.events",
    "ToolCallStartEvent": "openprogram.providers.events",
    "ToolResultMessage": "openprogram.providers.types",
    "Usage": "openprogram.providers.types",
    "UserMessage": "openprogram.providers.types",
    "complete": "openprogram.providers.streaming",
    "complete_simple": "openprogram.providers.streaming",
    "get_api_provider": "openprogram.providers.registry",
    "initialize_provider_runtime": "openprogram.providers.registry",
    "provider_runtime_status": "openprogram.providers.runtime",
    "provider_scope": "openprogram.providers.registry",
    "register_api_provider": "openprogram.providers.registry",
    "registered_apis": "openprogram.providers.registry",
    "stream": "openprogram.providers.streaming",
    "stream_simple": "openprogram.providers.streaming",
    "unregister_api_provider": "openprogram.providers.registry",
}
__all__ = [*_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
