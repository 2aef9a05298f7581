"""OpenAI's two model APIs, read from a recorded HTTP call: Chat Completions and Responses.

**Chat Completions** (``…/chat/completions``): the new input is the last of the request's
``messages`` (a ``tool`` message shows the name of the call it answers, found by its
``tool_call_id`` among the earlier messages). A stream's chunks are read for choice 0:
``delta.content`` (and ``delta.refusal``) is the text, ``delta.reasoning_content`` or
``delta.reasoning`` (sent by OpenAI-compatible servers) the thinking, ``delta.tool_calls``
pieces are joined by their ``index``; ``finish_reason`` is the stop reason and the chunk
holding ``usage`` the usage. A whole completion is read from ``choices[0].message``.

**Responses** (``…/responses``): the new input is the request's ``input`` (a string, or the
last item of the list: a message, or a ``function_call_output`` shown with the name of its
call). A stream is read from its events: ``response.output_text.delta`` and
``response.refusal.delta`` (text), ``response.reasoning_summary_text.delta`` and
``response.reasoning_text.delta`` (thinking), ``response.output_item.added`` (a function
call's name) and ``response.function_call_arguments.delta``/``.done`` (its arguments), and
the response object of ``response.completed`` / ``.incomplete`` / ``.failed`` (usage, the stop
reason: ``completed``, or why it is incomplete, and the error). A stream that carried no
deltas, and a whole response, are read from the response's ``output`` items.
"""

from __future__ import annotations

from typing import Any

import orjson

from openprogram.store.http_reply import (
    HttpReply,
    as_dict,
    as_list,
    as_str,
    block_key,
    error_text,
    joined_texts,
)

__all__ = ["chat_completions_reply", "responses_reply"]

_PART_PLACEHOLDERS = {
    "image_url": "[image]",
    "input_image": "[image]",
    "input_audio": "[audio]",
    "file": "[file]",
    "input_file": "[file]",
}


def _parts_text(content: Any) -> str:
    """A message's content: a string, or parts (text, ``[image]``, ``[audio]``, ``[file]``)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in as_list(content):
        part = as_dict(part)
        kind = part.get("type")
        text = as_str(part.get("text"))
        if text is None:
            text = as_str(part.get("refusal"))
        if text is not None:
            texts.append(text)
        elif isinstance(kind, str) and kind in _PART_PLACEHOLDERS:
            texts.append(_PART_PLACEHOLDERS[kind])
    return joined_texts(texts)


def _call(name: Any, arguments: Any) -> str:
    shown = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return f"{as_str(name) or '?'}({shown})"


# -- Chat Completions ------------------------------------------------------------------------


def _chat_input(body: dict[str, Any], reply: HttpReply) -> None:
    messages = as_list(body.get("messages"))
    if not messages:
        return
    message = as_dict(messages[-1])
    reply.input_role = as_str(message.get("role"))
    text = _parts_text(message.get("content"))
    if reply.input_role == "tool":
        name = _chat_tool_name(messages, message.get("tool_call_id"))
        text = f"{name} → {text}"
    elif not text and message.get("tool_calls"):
        calls = [as_dict(as_dict(call).get("function")) for call in as_list(message["tool_calls"])]
        text = joined_texts([_call(call.get("name"), call.get("arguments")) for call in calls])
    reply.input_text = text


def _chat_tool_name(messages: list[Any], call_id: Any) -> str:
    for message in reversed(messages):
        for call in as_list(as_dict(message).get("tool_calls")):
            call = as_dict(call)
            if call_id is not None and call.get("id") == call_id:
                return as_str(as_dict(call.get("function")).get("name")) or "?"
    return "?"


def chat_completions_reply(body: Any, datas: list[Any], whole: Any) -> HttpReply:
    """The reply of a Chat Completions call: ``datas`` are its SSE events' data, ``whole``
    its whole JSON body (None for a stream)."""
    reply = HttpReply()
    _chat_input(as_dict(body), reply)
    for data in datas:
        chunk = as_dict(data)
        reply.error = error_text(chunk) or reply.error
        for choice in as_list(chunk.get("choices")):
            choice = as_dict(choice)
            if choice.get("index", 0) == 0:
                _chat_delta(as_dict(choice.get("delta")), reply)
                reply.stop_reason = as_str(choice.get("finish_reason")) or reply.stop_reason
        reply.add_usage(chunk.get("usage"))
    if whole is not None:
        completion = as_dict(whole)
        reply.error = error_text(completion)
        choice = as_dict(next(iter(as_list(completion.get("choices"))), None))
        _chat_message(as_dict(choice.get("message")), reply)
        reply.stop_reason = as_str(choice.get("finish_reason"))
        reply.add_usage(completion.get("usage"))
    return reply


def _chat_delta(delta: dict[str, Any], reply: HttpReply) -> None:
    reply.add_text("content", delta.get("content"))
    reply.add_text("refusal", delta.get("refusal"))
    reply.add_thinking("reasoning", delta.get("reasoning_content"))
    reply.add_thinking("reasoning", delta.get("reasoning"))
    for piece in as_list(delta.get("tool_calls")):
        piece = as_dict(piece)
        index = piece.get("index")
        key = block_key(index) if index is not None else len(reply.tools) - 1 if reply.tools else 0
        tool = reply.tool(key)
        function = as_dict(piece.get("function"))
        tool.name = tool.name or as_str(function.get("name")) or ""
        arguments = as_str(function.get("arguments"))
        if arguments is not None:
            tool.pieces.append(arguments)


def _chat_message(message: dict[str, Any], reply: HttpReply) -> None:
    reply.add_text("content", _parts_text(message.get("content")) or None)
    reply.add_text("refusal", message.get("refusal"))
    reply.add_thinking("reasoning", message.get("reasoning_content"))
    for number, call in enumerate(as_list(message.get("tool_calls"))):
        function = as_dict(as_dict(call).get("function"))
        tool = reply.tool(number)
        tool.name = as_str(function.get("name")) or ""
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            tool.pieces.append(arguments)
        else:
            tool.value = arguments


# -- Responses -------------------------------------------------------------------------------


def _responses_input(body: dict[str, Any], reply: HttpReply) -> None:
    given = body.get("input")
    if isinstance(given, str):
        reply.input_role, reply.input_text = "user", given
        return
    items = as_list(given)
    if not items:
        return
    item = as_dict(items[-1])
    kind = as_str(item.get("type"))
    if kind == "function_call_output":
        name = "?"
        for earlier in items:
            earlier = as_dict(earlier)
            if earlier.get("type") == "function_call" and earlier.get("call_id") == item.get(
                "call_id"
            ):
                name = as_str(earlier.get("name")) or "?"
        output = item.get("output")
        shown = output if isinstance(output, str) else _parts_text(output)
        reply.input_role, reply.input_text = kind, f"{name} → {shown}"
    elif kind == "function_call":
        reply.input_role = kind
        reply.input_text = _call(item.get("name"), item.get("arguments"))
    else:
        reply.input_role = as_str(item.get("role")) or kind
        reply.input_text = _parts_text(item.get("content"))


def responses_reply(body: Any, datas: list[Any], whole: Any) -> HttpReply:
    """The reply of a Responses call: ``datas`` are its SSE events' data, ``whole`` its whole
    JSON body (None for a stream)."""
    reply = HttpReply()
    _responses_input(as_dict(body), reply)
    final: dict[str, Any] | None = None
    for data in datas:
        event = as_dict(data)
        kind = as_str(event.get("type")) or ""
        if isinstance(event.get("response"), dict):
            final = event["response"]
        elif kind == "error":
            reply.error = error_text(event) or reply.error
        else:
            _responses_event(kind, event, reply)
    if whole is not None:
        final = as_dict(whole)
    if final is not None:
        if reply.empty:
            _responses_output(as_list(final.get("output")), reply)
        _responses_ending(final, reply)
    return reply


def _responses_event(kind: str, event: dict[str, Any], reply: HttpReply) -> None:
    output = event.get("output_index")
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        reply.add_text(block_key(output, event.get("content_index")), event.get("delta"))
    elif kind == "response.reasoning_summary_text.delta":
        reply.add_thinking(block_key(output, event.get("summary_index")), event.get("delta"))
    elif kind == "response.reasoning_text.delta":
        reply.add_thinking(block_key(output, event.get("content_index")), event.get("delta"))
    elif kind == "response.output_item.added":
        item = as_dict(event.get("item"))
        if item.get("type") == "function_call":
            reply.tool(block_key(output)).name = as_str(item.get("name")) or ""
    elif kind == "response.function_call_arguments.delta":
        delta = as_str(event.get("delta"))
        if delta is not None:
            reply.tool(block_key(output)).pieces.append(delta)
    elif kind == "response.function_call_arguments.done":
        arguments = as_str(event.get("arguments"))
        if arguments is not None:
            reply.tool(block_key(output)).pieces = [arguments]


def _responses_output(items: list[Any], reply: HttpReply) -> None:
    for number, item in enumerate(items):
        item = as_dict(item)
        kind = item.get("type")
        if kind == "message":
            for part_number, part in enumerate(as_list(item.get("content"))):
                part = as_dict(part)
                text = as_str(part.get("text")) or as_str(part.get("refusal"))
                reply.add_text((number, part_number), text)
        elif kind == "reasoning":
            parts = as_list(item.get("summary")) or as_list(item.get("content"))
            for part_number, part in enumerate(parts):
                reply.add_thinking((number, part_number), as_dict(part).get("text"))
        elif kind == "function_call":
            tool = reply.tool(number)
            tool.name = as_str(item.get("name")) or ""
            arguments = item.get("arguments")
            if isinstance(arguments, str):
                tool.pieces = [arguments]


def _responses_ending(response: dict[str, Any], reply: HttpReply) -> None:
    reply.add_usage(response.get("usage"))
    status = as_str(response.get("status"))
    reason = as_str(as_dict(response.get("incomplete_details")).get("reason"))
    reply.stop_reason = reason or status or reply.stop_reason
    reply.error = (
        error_text({"error": response.get("error")}) or error_text(response) or reply.error
    )
