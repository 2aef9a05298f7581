"""How one live answer drifted from the one recorded for the same request.

Both answers are event rows as a recording holds them (the live one is made into rows by the
same code that records, redaction included), so the comparison sees the two alike:

* **the status** — another status, or success where an error was recorded (or the other way
  round), is breaking, and the bodies are not compared further unless both are errors;
* **the body's kind** — server-sent events where JSON was recorded, say — is breaking;
* **the body's shape** (:mod:`openprogram.drift.response_shapes`): a JSON body path by
  path, a stream per event type. An error answer's shape is the error's contract, so any
  change of it (a new field too) is breaking;
* **the compared headers** (:data:`COMPARED_HEADERS`): one that no longer comes is breaking,
  a new one additive, another value content;
* **the tool calls**: a tool the request did not offer, or argument keys outside the
  offered tool's schema (when the schema names its properties and allows no others) that no
  recorded call of that tool held, are breaking; which offered tool the model chose is
  content."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from openprogram.drift.response_shapes import (
    DriftClass,
    PathDrift,
    ShapeSummary,
    by_severity,
    shape_drift,
    stream_summary,
)
from openprogram.vendors import VENDOR_WIRES, vendor_api
from openprogram.vendors.reply import as_dict, as_list, as_str

__all__ = ["COMPARED_HEADERS", "LiveAnswer", "answer_drift", "answer_of_rows", "offered_tools"]

COMPARED_HEADERS: Final = (
    "content-type",
    *(name for wire in VENDOR_WIRES for name in wire.compared_headers),
)
"""The response headers whose drift is reported: the media type, and the API versions the
vendors announce. Every other header (dates, request ids, rate limits) changes each run."""


@dataclass
class LiveAnswer:
    """What an answer's event rows hold: the status, the compared headers, the body."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    kind: str = "none"
    """``sse``, ``eventstream``, ``json``, ``text``, ``binary`` or ``none`` (``events``: a
    provider call's events)."""
    events: list[tuple[str | None, Any]] = field(default_factory=list)
    """A stream's events: each its type's name (the SSE ``event`` field, the AWS
    ``:event-type``), or None, and its data."""
    whole: Any = None
    """A JSON body's value."""

    @property
    def is_error(self) -> bool:
        return self.status is not None and self.status >= 400

    def summary(self) -> ShapeSummary | dict[str, ShapeSummary]:
        if self.kind in ("sse", "eventstream", "events"):
            return stream_summary(self.events)
        shapes = ShapeSummary()
        if self.kind == "json":
            shapes.add(self.whole)
        return shapes


def answer_of_rows(rows: Iterable[dict[str, Any]]) -> LiveAnswer:
    """The answer a call's event rows hold."""
    answer = LiveAnswer()
    for row in rows:
        kind = row.get("type")
        if kind == "http_response":
            answer.status = row.get("status") if isinstance(row.get("status"), int) else None
            headers = as_dict(row.get("headers"))
            answer.headers = {
                name: str(headers[name]) for name in COMPARED_HEADERS if name in headers
            }
        elif kind == "sse":
            answer.kind = "sse"
            answer.events.append((as_str(row.get("event")), row.get("data")))
        elif kind == "eventstream":
            answer.kind = "eventstream"
            headers = as_dict(row.get("headers"))
            name = as_str(headers.get(":event-type")) or as_str(headers.get(":exception-type"))
            answer.events.append((name, row.get("data")))
        elif kind == "http_body":
            if "body" in row:
                answer.kind, answer.whole = "json", row["body"]
            else:
                answer.kind = "text" if "text" in row else "binary"
    return answer


def answer_drift(
    request: dict[str, Any], recorded: LiveAnswer, live: LiveAnswer
) -> list[PathDrift]:
    """How ``live`` drifted from ``recorded``, both answers to ``request``: breaking drift
    first, then additive, then content."""
    found: list[PathDrift] = []
    if recorded.status != live.status:
        found.append(
            PathDrift("breaking", "status", "changed", _shown(recorded.status), _shown(live.status))
        )
        if not (recorded.is_error and live.is_error):
            return found
    found += _header_drift(recorded.headers, live.headers)
    if recorded.kind != live.kind:
        found.append(PathDrift("breaking", "body", "kind changed", recorded.kind, live.kind))
        return by_severity(found)
    shapes = shape_drift(recorded.summary(), live.summary())
    if recorded.is_error:  # the error's shape is the contract a client parses
        shapes = [
            drift if drift.kind != "additive" else _as_breaking(drift, "error body")
            for drift in shapes
        ]
    found += shapes
    found += _tool_call_drift(request, recorded, live)
    return by_severity(found)


def _as_breaking(drift: PathDrift, where: str) -> PathDrift:
    what = f"{drift.what} in the {where}"
    return PathDrift("breaking", drift.path, what, drift.recorded, drift.live)


def _shown(value: object) -> str:
    return "—" if value is None else str(value)


def _header_drift(recorded: dict[str, str], live: dict[str, str]) -> list[PathDrift]:
    found = []
    for name in COMPARED_HEADERS:
        before, after = recorded.get(name), live.get(name)
        path = f"headers.{name}"
        if before is not None and after is None:
            found.append(PathDrift("breaking", path, "no longer sent", before, "—"))
        elif before is None and after is not None:
            found.append(PathDrift("additive", path, "new header", "—", after))
        elif before is not None and after is not None and before != after:
            media = name == "content-type" and _media(before) != _media(after)
            kind: DriftClass = "breaking" if media else "content"
            found.append(PathDrift(kind, path, "other value", repr(before), repr(after)))
    return found


def _media(content_type: str) -> str:
    return content_type.partition(";")[0].strip().lower()


# --- tool calls ----------------------------------------------------------------------------


def offered_tools(body: object) -> dict[str, dict[str, Any] | None]:
    """The tools a request body offers the model, each by name with its arguments' JSON
    Schema (None when the request gives none): OpenAI Chat Completions and Responses,
    Anthropic Messages, Gemini and Bedrock Converse."""
    request = as_dict(body)
    tools: dict[str, dict[str, Any] | None] = {}
    for name, schema in _tool_schemas(request):
        if isinstance(name, str):
            tools[name] = schema if isinstance(schema, dict) else None
    return tools


def _tool_schemas(request: dict[str, Any]) -> Iterator[tuple[object, object]]:
    for tool in as_list(request.get("tools")):
        tool = as_dict(tool)
        function = as_dict(tool.get("function"))
        if function:  # OpenAI Chat Completions
            yield function.get("name"), function.get("parameters")
        elif "input_schema" in tool:  # Anthropic
            yield tool.get("name"), tool.get("input_schema")
        elif "functionDeclarations" in tool:  # Gemini
            for declaration in as_list(tool.get("functionDeclarations")):
                declaration = as_dict(declaration)
                schema = declaration.get("parameters", declaration.get("parametersJsonSchema"))
                yield declaration.get("name"), schema
        elif "name" in tool:  # OpenAI Responses
            yield tool.get("name"), tool.get("parameters")
    for tool in as_list(as_dict(request.get("toolConfig")).get("tools")):  # Bedrock
        spec = as_dict(as_dict(tool).get("toolSpec"))
        yield spec.get("name"), as_dict(spec.get("inputSchema")).get("json")


def _tool_call_drift(
    request: dict[str, Any], recorded: LiveAnswer, live: LiveAnswer
) -> list[PathDrift]:
    """The live tool calls of a tool the request did not offer, or with argument keys
    outside its schema that no recorded call of that tool held either."""
    offered = offered_tools(request.get("body"))
    if not offered:
        return []
    already: dict[str, set[str]] = {}
    for name, arguments in _tool_calls(request, recorded):
        if isinstance(arguments, dict):
            already.setdefault(name, set()).update(str(key) for key in arguments)
    found = []
    for name, arguments in _tool_calls(request, live):
        if name not in offered:
            found.append(
                PathDrift(
                    "breaking",
                    f"tool call {name}",
                    "a tool the request did not offer",
                    ", ".join(sorted(offered)),
                    name,
                )
            )
            continue
        schema = offered[name]
        unknown = [
            key for key in _keys_outside(schema, arguments) if key not in already.get(name, ())
        ]
        if unknown:
            found.append(
                PathDrift(
                    "breaking",
                    f"tool call {name}",
                    "argument keys outside the tool's schema",
                    ", ".join(sorted(as_dict(as_dict(schema).get("properties")))),
                    ", ".join(unknown),
                )
            )
    return found


def _tool_calls(request: dict[str, Any], answer: LiveAnswer) -> Iterator[tuple[str, Any]]:
    """Each tool call an answer holds: the tool's name and its arguments."""
    first = answer.events[0][1] if answer.events else answer.whole
    api = vendor_api(request, first)
    if api is None or answer.is_error:
        return
    datas = [_reader_data(name, data, answer.kind) for name, data in answer.events]
    reply = api.reply(request.get("body"), datas, answer.whole if answer.kind == "json" else None)
    for call in reply.tools.values():
        if call.name:
            yield call.name, call.arguments()


def _reader_data(name: str | None, data: Any, kind: str) -> Any:
    """An event's data as the store's API readers take it: an AWS event-stream message as
    ``{event type: payload}``, as boto3 yields it."""
    return {name or "": data} if kind == "eventstream" else data


def _keys_outside(schema: dict[str, Any] | None, arguments: Any) -> list[str]:
    """The argument keys ``schema`` does not allow: none when it names no properties, or
    allows others."""
    if not isinstance(schema, dict) or not isinstance(arguments, dict):
        return []
    properties = schema.get("properties")
    if not isinstance(properties, dict) or schema.get("additionalProperties") is True:
        return []
    return sorted(str(key) for key in arguments if key not in properties)
