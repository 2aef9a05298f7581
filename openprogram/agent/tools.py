"""Tools: Python functions the model may call, each with a JSON-Schema description.

An :class:`AgentTool` is a name, a description, a JSON Schema of its arguments and the
function that runs it. The function takes the model's arguments as keyword arguments, may be
sync or async, and returns the result for the model: a ``str`` as it is, ``None`` as ``""``,
anything JSON can hold (dicts, lists, numbers, booleans) as compact JSON text with sorted
keys — so the same result is always the same text — and anything else as ``str(value)``.

:func:`tool` builds one from a function: the name from the function's name, the description
from the first paragraph of its docstring, and the parameters from its signature when every
parameter is annotated with ``str``, ``int``, ``float``, ``bool``, ``list`` or ``dict``
(optionally ``| None``); otherwise pass ``parameters=`` yourself."""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin, get_type_hints, overload

import orjson

from openprogram.errors import ToolDefinitionError
from openprogram.providers.types import Tool

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The tool names every vendor accepts."""

_JSON_TYPES: dict[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


@dataclass(frozen=True, slots=True)
class AgentTool:
    """A function the model may call, and how it is described to the model."""

    name: str
    description: str
    parameters: dict[str, Any] = field(hash=False)
    """A JSON Schema (``{"type": "object", ...}``) of the keyword arguments."""
    function: Callable[..., Any]
    """Called with the model's arguments as keyword arguments; sync or async."""

    def __post_init__(self) -> None:
        if not TOOL_NAME.fullmatch(self.name):
            raise ToolDefinitionError(
                self.name, "a tool name is 1 to 64 letters, digits, '_' or '-'"
            )
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ToolDefinitionError(
                self.name, 'parameters must be a JSON Schema object: {"type": "object", ...}'
            )
        if not callable(self.function):
            raise ToolDefinitionError(self.name, "function is not callable")

    @property
    def definition(self) -> Tool:
        """The tool as the model sees it in a request."""
        return Tool(name=self.name, description=self.description, parameters=self.parameters)

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """Run the function with ``arguments`` and return its result as text. Raises what
        the function raises."""
        result = self.function(**arguments)
        if inspect.isawaitable(result):
            result = await result
        return result_text(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as if it were not a tool."""
        return self.function(*args, **kwargs)


def result_text(value: object) -> str:
    """A tool's return value as the text the model receives."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, dict | list | tuple | int | float | bool):
        try:
            return orjson.dumps(
                value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
            ).decode()
        except TypeError:
            pass  # holds something JSON cannot: fall back to str()
    return str(value)


@overload
def tool(function: Callable[..., Any], /) -> AgentTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], AgentTool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
) -> AgentTool | Callable[[Callable[..., Any]], AgentTool]:
    """Make a function a tool: ``@tool`` or ``@tool(name=..., description=..., parameters=...)``.

    The decorated name is the :class:`AgentTool`; calling it still calls the function."""

    def build(target: Callable[..., Any]) -> AgentTool:
        tool_name: str = name or str(getattr(target, "__name__", ""))
        text = description if description is not None else _first_paragraph(target)
        if not text:
            raise ToolDefinitionError(
                tool_name, "has no description: give the function a docstring or pass description="
            )
        schema = parameters if parameters is not None else infer_parameters(target, tool_name)
        return AgentTool(name=tool_name, description=text, parameters=schema, function=target)

    return build if function is None else build(function)


def _first_paragraph(function: Callable[..., Any]) -> str:
    doc = inspect.getdoc(function) or ""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def infer_parameters(function: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    """The JSON Schema of ``function``'s keyword arguments, from its annotations.

    Raises :class:`ToolDefinitionError` for a parameter it cannot describe."""
    try:
        hints = get_type_hints(function)
        signature = inspect.signature(function)
    except (NameError, TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            tool_name, f"cannot read its signature ({exc}); pass parameters="
        ) from None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
            parameter.POSITIONAL_ONLY,
        ):
            raise ToolDefinitionError(
                tool_name,
                f"parameter {parameter.name!r} cannot be passed by keyword; pass parameters=",
            )
        schema = _json_schema(hints.get(parameter.name))
        if schema is None:
            raise ToolDefinitionError(
                tool_name,
                f"cannot describe parameter {parameter.name!r} (annotate it with str, int, "
                "float, bool, list or dict, or pass parameters=)",
            )
        properties[parameter.name] = schema
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def _json_schema(annotation: object) -> dict[str, Any] | None:
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _json_schema(members[0]) if len(members) == 1 else None
    json_type = _JSON_TYPES.get(origin if origin is not None else annotation)
    return {"type": json_type} if json_type else None
