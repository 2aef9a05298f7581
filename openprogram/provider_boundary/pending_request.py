"""A provider call's arguments as replay compares them, dumped only as far as needed.

Every request of an agent session carries the whole conversation so far, and dumping it
(``model_dump(mode="json")``) costs more than anything else replay does with a request that
repeats a served one. :class:`PendingProviderRequest` lets replay first read the *state* of
the context's lists as JSON text: orjson walks the models' fields (each model's
``__dict__``), which costs a fraction of a dump and changes whenever any item does, a message
edited in place after it was sent included. Only when that text shows the lists extend a
served request's is the request dumped, without the items they repeat.

The state text is defined for openprogram's own message, content and tool models (their
JSON dump is exactly their fields, the field names told apart by class) and for values
orjson encodes itself; anything else (a subclass, a ``datetime``, a dataclass, a ``str``
subclass in a tool's arguments) has no state text, and the request is dumped whole as
before.
"""

from __future__ import annotations

from typing import Any

import orjson

from openprogram.provider_boundary.codec import dump_request
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["STATE_TYPES", "_STATE_OPTIONS", "PendingProviderRequest", "_fields", "state_text"]


STATE_TYPES = frozenset(
    {
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        TextContent,
        ThinkingContent,
        ImageContent,
        ToolCall,
        Usage,
        Tool,
    }
)


"""The models whose state is their fields: no alias, serializer or excluded field, and no
two with the same field names, so the text of their fields tells them apart."""


_STATE_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


"""Values orjson would encode its own way (pydantic may dump them otherwise) go to
:func:`_fields`, which has no text for them."""


def _fields(value: object) -> dict[str, Any]:
    if type(value) in STATE_TYPES:
        return value.__dict__
    raise TypeError(f"no state text for {type(value).__name__}")


def state_text(items: list[Any]) -> bytes | None:
    """The JSON text of ``items``' state, or None when an item holds a value that has none."""
    try:
        return orjson.dumps(items, default=_fields, option=_STATE_OPTIONS)
    except TypeError:
        return None


class PendingProviderRequest:
    """One provider call's arguments, for :meth:`ReplaySession.take
    <openprogram.recording.replay_session.ReplaySession.take>`: a
    :class:`~openprogram.recording.shared_lists.DumpableRequest`."""

    __slots__ = ("context", "model", "options")

    def __init__(self, model: Model, context: Context, options: StreamOptions) -> None:
        self.model = model
        self.context = context
        self.options = options

    def list_texts(self) -> dict[str, tuple[bytes, int]] | None:
        context = self.context
        if type(context) is not Context:
            return None
        texts: dict[str, tuple[bytes, int]] = {}
        for key in ("messages", "tools"):
            items = getattr(context, key)
            if type(items) is list:
                text = state_text(items)
                if text is None:
                    return None
                texts[key] = (text, len(items))
        return texts

    def whole(self) -> dict[str, Any]:
        return dump_request(self.model, self.context, self.options)

    def without_first(self, counts: dict[str, int]) -> dict[str, Any]:
        # A shallow copy holding the lists' later items, dumped by the same schema: the
        # dump is a function of the fields' values (an ``exclude`` of the first indexes
        # would still walk every item).
        context = self.context
        later = {key: getattr(context, key)[count:] for key, count in counts.items()}
        return dump_request(self.model, context.model_copy(update=later), self.options)
