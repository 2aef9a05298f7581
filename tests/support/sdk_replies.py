"""What the loopback SDK server (:mod:`tests.support.sdk_server`) answers each vendor API
with, built from the request the way the vendors' servers answer:

* OpenAI Chat Completions (``/v1/chat/completions``): a JSON ``chat.completion``, or chunks
  then ``data: [DONE]``, with a usage chunk when ``stream_options.include_usage`` asks;
* OpenAI Responses (``/v1/responses``): a JSON ``response``, or its typed SSE events
  (``response.created`` … ``response.completed``, each with ``event:`` and a sequence number);
* Anthropic Messages (``/v1/messages``): a JSON ``message``, or its SSE events
  (``message_start``, ``ping``, content blocks — ``thinking`` when the request enables it,
  ``text``, ``tool_use`` fed by ``input_json_delta`` — ``message_delta``, ``message_stop``);
* each vendor's error body for a status (:func:`error_body`).

The content is deterministic: the reply repeats the last user text (``You said: …``); when the
request offers tools the model calls the first one with ``{"city": "Paris"}``; after a tool
result it answers ``The tool answered: …``. The values a vendor makes anew for every response
are made anew here too (:class:`PerRun`): object and tool-call ids, ``created``, signatures.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

TOOL_ARGUMENTS = ('{"city"', ': "Pa', 'ris"}')
"""The arguments of every tool call, as the pieces they stream in."""

OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid value for 'temperature': must be at most 2."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: {masked}."),
    404: ("invalid_request_error", "model_not_found", "The model `{model}` does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests per min (RPM)."),
    500: ("server_error", None, "The server had an error while processing your request."),
    529: ("server_error", "overloaded", "The engine is currently overloaded."),
}
"""OpenAI's error ``type``, ``code`` and message for each status the server can answer."""

ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "temperature: range: 0..1"),
    401: ("authentication_error", "invalid x-api-key"),
    404: ("not_found_error", "model: {model}"),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
"""Anthropic's error ``type`` and message for each status."""


@dataclass
class PerRun:
    """The values a vendor makes anew for each response."""

    def token(self, prefix: str, length: int = 24) -> str:
        return prefix + secrets.token_hex(length // 2)

    def now(self) -> int:
        return int(time.time())


@dataclass
class Plan:
    """What the model answers: optional thinking, text, and one optional tool call."""

    model: str
    text: list[str]
    tool_name: str | None = None
    thinking: list[str] = field(default_factory=list)
    input_tokens: int = 0

    @property
    def output_tokens(self) -> int:
        return len(self.text) + len(self.thinking) + (len(TOOL_ARGUMENTS) if self.tool_name else 0)


def pieces(text: str) -> list[str]:
    """``text`` cut into the word-sized pieces a stream delivers."""
    return re.findall(r"\S+\s*", text) or [text]


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""


def plan_reply(api: str, body: dict[str, Any]) -> Plan:
    """What the model answers to ``body`` on ``api`` (``chat``, ``responses`` or ``messages``)."""
    model = str(body.get("model", "unknown-model"))
    tool_result, user_text, tool_names = _conversation(api, body)
    tokens = len(json.dumps(body)) // 4
    if tool_result is not None:
        return Plan(model, pieces(f"The tool answered: {tool_result}"), input_tokens=tokens)
    thinking = body.get("thinking")
    thought = (
        pieces("The user wants the weather; a tool can tell.")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled"
        else []
    )
    if tool_names:
        lead = pieces("Let me check.") if api == "messages" else []
        return Plan(model, lead, tool_names[0], thought, tokens)
    return Plan(model, pieces(f"You said: {user_text}"), thinking=thought, input_tokens=tokens)


def _conversation(api: str, body: dict[str, Any]) -> tuple[str | None, str, list[str]]:
    """The last tool result (None when the last turn is not one), the last user text, and
    the names of the tools offered."""
    tools = body.get("tools") or []
    if api == "chat":
        names = [t.get("function", {}).get("name", "") for t in tools]
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return _text_of(last.get("content")), "", names
        users = [m for m in messages if m.get("role") == "user"]
        return None, _text_of(users[-1].get("content")) if users else "", names
    if api == "responses":
        names = [t.get("name", "") for t in tools]
        items = body.get("input") or []
        if isinstance(items, str):
            return None, items, names
        last = items[-1] if items else {}
        if last.get("type") == "function_call_output":
            return str(last.get("output")), "", names
        users = [i for i in items if i.get("role") == "user"]
        return None, _text_of(users[-1].get("content")) if users else "", names
    names = [t.get("name", "") for t in tools]
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    if isinstance(content, list):
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            return _text_of(results[-1].get("content")), "", names
    return None, _text_of(content), names


# -- OpenAI Chat Completions ----------------------------------------------------------------


def chat_completion(plan: Plan, run: PerRun) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(plan.text) or None,
        "refusal": None,
        "annotations": [],
    }
    if plan.tool_name:
        message["tool_calls"] = [
            {
                "id": run.token("call_"),
                "type": "function",
                "function": {"name": plan.tool_name, "arguments": "".join(TOOL_ARGUMENTS)},
            }
        ]
    return {
        "id": run.token("chatcmpl-"),
        "object": "chat.completion",
        "created": run.now(),
        "model": plan.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if plan.tool_name else "stop",
            }
        ],
        "usage": _chat_usage(plan),
        "service_tier": "default",
        "system_fingerprint": run.token("fp_", 10),
    }


def _chat_usage(plan: Plan) -> dict[str, Any]:
    return {
        "prompt_tokens": plan.input_tokens,
        "completion_tokens": plan.output_tokens,
        "total_tokens": plan.input_tokens + plan.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_chunks(plan: Plan, run: PerRun, *, include_usage: bool) -> list[dict[str, Any]]:
    head = {
        "id": run.token("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": run.now(),
        "model": plan.model,
        "service_tier": "default",
        "system_fingerprint": run.token("fp_", 10),
    }
    if include_usage:
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**head, "choices": [choice]}

    first: dict[str, Any] = {"role": "assistant", "content": "" if plan.text else None}
    chunks = [chunk({**first, "refusal": None})]
    chunks += [chunk({"content": piece}) for piece in plan.text]
    if plan.tool_name:
        opening = {"id": run.token("call_"), "type": "function"}
        function = {"name": plan.tool_name, "arguments": ""}
        chunks.append(chunk({"tool_calls": [{"index": 0, **opening, "function": function}]}))
        chunks += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in TOOL_ARGUMENTS
        ]
    chunks.append(chunk({}, "tool_calls" if plan.tool_name else "stop"))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": _chat_usage(plan)})
    return chunks


# -- OpenAI Responses -----------------------------------------------------------------------


def _response_object(
    plan: Plan, run: PerRun, response_id: str, created: int, output: list[dict[str, Any]] | None
) -> dict[str, Any]:
    done = output is not None
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": "completed" if done else "in_progress",
        "completed_at": run.now() if done else None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": plan.model,
        "output": output or [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _responses_usage(plan) if done else None,
        "user": None,
        "metadata": {},
    }


def _responses_usage(plan: Plan) -> dict[str, Any]:
    return {
        "input_tokens": plan.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": plan.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": plan.input_tokens + plan.output_tokens,
    }


def _output_items(plan: Plan, run: PerRun) -> list[dict[str, Any]]:
    if plan.tool_name:
        return [
            {
                "type": "function_call",
                "id": run.token("fc_"),
                "call_id": run.token("call_"),
                "name": plan.tool_name,
                "arguments": "".join(TOOL_ARGUMENTS),
                "status": "completed",
            }
        ]
    text = "".join(plan.text)
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    item = {"type": "message", "id": run.token("msg_"), "status": "completed", "role": "assistant"}
    return [{**item, "content": [part]}]


def response(plan: Plan, run: PerRun) -> dict[str, Any]:
    return _response_object(plan, run, run.token("resp_"), run.now(), _output_items(plan, run))


def response_events(plan: Plan, run: PerRun) -> list[dict[str, Any]]:
    """The Responses stream; each event's ``type`` is also its SSE ``event:`` name."""
    response_id, created = run.token("resp_"), run.now()
    items = _output_items(plan, run)
    item = items[0]
    started = _response_object(plan, run, response_id, created, None)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    where = {"item_id": item["id"], "output_index": 0}
    if plan.tool_name:
        opened = {**item, "arguments": "", "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": opened})
        events += [
            {"type": "response.function_call_arguments.delta", **where, "delta": piece}
            for piece in TOOL_ARGUMENTS
        ]
        arguments = item["arguments"]
        events.append(
            {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
        )
    else:
        opened = {**item, "status": "in_progress", "content": []}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": opened})
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        at = {**where, "content_index": 0}
        events.append({"type": "response.content_part.added", **at, "part": part})
        events += [
            {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
            for piece in plan.text
        ]
        text = "".join(plan.text)
        events.append({"type": "response.output_text.done", **at, "text": text, "logprobs": []})
        events.append({"type": "response.content_part.done", **at, "part": {**part, "text": text}})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    finished = _response_object(plan, run, response_id, created, items)
    events.append({"type": "response.completed", "response": finished})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


# -- Anthropic Messages ---------------------------------------------------------------------


def _message_usage(plan: Plan, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": plan.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _message_blocks(plan: Plan, run: PerRun) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if plan.thinking:
        signature = run.token("sig", 32)
        blocks.append(
            {"type": "thinking", "thinking": "".join(plan.thinking), "signature": signature}
        )
    if plan.text:
        blocks.append({"type": "text", "text": "".join(plan.text)})
    if plan.tool_name:
        arguments = json.loads("".join(TOOL_ARGUMENTS))
        tool = {"type": "tool_use", "id": run.token("toolu_"), "name": plan.tool_name}
        blocks.append({**tool, "input": arguments})
    return blocks


def message(plan: Plan, run: PerRun) -> dict[str, Any]:
    return {
        "id": run.token("msg_"),
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": _message_blocks(plan, run),
        "stop_reason": "tool_use" if plan.tool_name else "end_turn",
        "stop_sequence": None,
        "usage": _message_usage(plan, plan.output_tokens),
    }


def message_events(plan: Plan, run: PerRun) -> list[dict[str, Any]]:
    """The Messages stream; each event's ``type`` is also its SSE ``event:`` name."""
    opening = {**message(plan, run), "content": [], "stop_reason": None}
    opening["usage"] = _message_usage(plan, 1)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": opening},
        {"type": "ping"},
    ]
    for index, block in enumerate(_message_blocks(plan, run)):
        kind = block["type"]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in plan.thinking]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in plan.text]
        else:
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in TOOL_ARGUMENTS]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": "tool_use" if plan.tool_name else "end_turn", "stop_sequence": None}
    usage = {"output_tokens": plan.output_tokens}
    events.append({"type": "message_delta", "delta": stop, "usage": usage})
    events.append({"type": "message_stop"})
    return events


# -- Errors ---------------------------------------------------------------------------------


def masked(key: str) -> str:
    """A key as OpenAI's 401 message shows it: its start and its last four characters."""
    return f"{key[:3]}{'*' * 8}{key[-4:]}" if len(key) > 8 else "*" * len(key)


def error_body(
    vendor: str, status: int, *, model: str, key: str, run: PerRun, echo_key: bool = False
) -> dict[str, Any]:
    """The JSON body of ``vendor``'s (``openai`` / ``anthropic``) error answer to ``status``.
    OpenAI's 401 message shows the key masked; ``echo_key`` makes a 401 message quote the
    whole key sent instead, as some compatible servers do."""
    shown = key if echo_key else masked(key)
    if vendor == "openai":
        kind, code, text = OPENAI_ERRORS[status]
        text = text.format(masked=shown, model=model)
        return {"error": {"message": text, "type": kind, "param": None, "code": code}}
    kind, text = ANTHROPIC_ERRORS[status]
    text = text.format(model=model)
    if echo_key and status == 401:
        text = f"{text}: {shown}"
    return {
        "type": "error",
        "error": {"type": kind, "message": text},
        "request_id": run.token("req_"),
    }
