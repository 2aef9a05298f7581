"""The provider layer: types, the registry, ``stream``, and record/replay at the registry.

Importing this package defines and exports only: it registers no provider, reads no
configuration, opens no recording and no socket. The first registry lookup initializes the
provider runtime (see :func:`initialize_provider_runtime`).
"""

from __future__ import annotations

from openprogram.errors import (
    MissingApiKeyError,
    OpenProgramError,
    ProviderRuntimeError,
    RecordingFileError,
    UnknownApiError,
)
from openprogram.providers.api_registry import (
    ApiProvider,
    get_api_provider,
    register_api_provider,
    registered_apis,
    scoped_api_providers,
    set_registry_transform,
    unregister_api_provider,
)
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
from openprogram.providers.mismatch import (
    RecordingTruncatedError,
    ReplayMismatch,
    UnconsumedCallsError,
)
from openprogram.providers.recorder import RecordingProvider
from openprogram.providers.replay import RecordedProviderError, ReplayProvider
from openprogram.providers.runtime import (
    RuntimeState,
    RuntimeStatus,
    initialize_provider_runtime,
    provider_runtime_status,
)
from openprogram.providers.stream import complete, complete_simple, stream, stream_simple
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

__all__ = [
    "ECHO_MODEL",
    "ApiProvider",
    "AssistantMessage",
    "AssistantMessageEvent",
    "Context",
    "DoneEvent",
    "EchoProvider",
    "ErrorEvent",
    "ImageContent",
    "Message",
    "MessageAccumulator",
    "MissingApiKeyError",
    "Model",
    "OpenProgramError",
    "ProviderRuntimeError",
    "RecordedProviderError",
    "RecordingFileError",
    "RecordingProvider",
    "RecordingTruncatedError",
    "ReplayMismatch",
    "ReplayProvider",
    "RuntimeState",
    "RuntimeStatus",
    "SimpleStreamOptions",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "UnconsumedCallsError",
    "UnknownApiError",
    "Usage",
    "UserMessage",
    "complete",
    "complete_simple",
    "get_api_provider",
    "initialize_provider_runtime",
    "provider_runtime_status",
    "register_api_provider",
    "registered_apis",
    "scoped_api_providers",
    "set_registry_transform",
    "stream",
    "stream_simple",
    "unregister_api_provider",
]
