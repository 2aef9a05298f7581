"""``AgentTool`` and the ``tool`` decorator: definitions, schema inference, results as text."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram.agent import AgentTool, tool
from openprogram.agent.tools import result_text
from openprogram.errors import OpenProgramError, ToolDefinitionError
from openprogram.providers import Tool


def test_the_decorator_takes_name_description_and_parameters_from_the_function() -> None:
    @tool
    def search(query: str, limit: int = 10, exact: bool | None = None) -> str:
        """Search the notes
        for a phrase.

        More detail the model does not need.
        """
        return query

    assert isinstance(search, AgentTool)
    assert search.name == "search"
    assert search.description == "Search the notes for a phrase."
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
        },
        "required": ["query"],
    }
    assert search.definition == Tool(
        name="search", description=search.description, parameters=search.parameters
    )
    assert search("q") == "q"  # still callable as the function


def test_every_simple_annotation_has_a_json_type() -> None:
    @tool
    def many(
        a: str, b: int, c: float, d: bool, e: list[str], f: dict[str, int], g: tuple[int]
    ) -> None:
        """Many."""

    types = {name: schema["type"] for name, schema in many.parameters["properties"].items()}
    assert types == {
        "a": "string",
        "b": "integer",
        "c": "number",
        "d": "boolean",
        "e": "array",
        "f": "object",
        "g": "array",
    }
    assert many.parameters["required"] == list("abcdefg")


def test_a_function_without_parameters_has_an_empty_object_schema() -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.parameters == {"type": "object", "properties": {}}


def test_explicit_name_description_and_parameters_win() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "enum": ["a", "b"]}}}

    @tool(name="pick-one", description="Pick a or b.", parameters=schema)
    def pick(x: Any) -> str:
        return str(x)

    assert (pick.name, pick.description, pick.parameters) == ("pick-one", "Pick a or b.", schema)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def f(x):\n    'Doc.'", "cannot describe parameter 'x'"),
        ("def f(x: object):\n    'Doc.'", "cannot describe parameter 'x'"),
        ("def f(x: int | str):\n    'Doc.'", "cannot describe parameter 'x'"),
        ("def f(*args: int):\n    'Doc.'", "cannot be passed by keyword"),
        ("def f(**kwargs: int):\n    'Doc.'", "cannot be passed by keyword"),
        ("def f(x: str):\n    pass", "has no description"),
    ],
)
def test_what_cannot_be_inferred_is_refused_with_the_remedy(source: str, problem: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError, match=problem) as raised:
        tool(namespace["f"])
    assert raised.value.tool == "f"
    assert isinstance(raised.value, OpenProgramError)


@pytest.mark.parametrize("name", ["", "has space", "dots.not.allowed", "x" * 65, "naïve"])
def test_tool_names_vendors_refuse_are_refused(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="1 to 64 letters"):
        AgentTool(name=name, description="d", parameters={"type": "object"}, function=str)


def test_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ToolDefinitionError, match="JSON Schema object"):
        AgentTool(name="t", description="d", parameters={"type": "string"}, function=str)


def test_a_tool_is_hashable_and_comparable() -> None:
    first = AgentTool(name="t", description="d", parameters={"type": "object"}, function=str)
    second = AgentTool(name="t", description="d", parameters={"type": "object"}, function=str)
    assert first == second
    assert len({first, second}) == 1


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (None, ""),
        ({"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
        ([{"z": 0, "y": None}], '[{"y":null,"z":0}]'),
        ((1, "two"), '[1,"two"]'),
        ({1: "x"}, '{"1":"x"}'),
        (42, "42"),
        (0.5, "0.5"),
        (True, "true"),
        ({"when": object}, "{'when': <class 'object'>}"),
        (b"bytes", "b'bytes'"),
    ],
)
def test_results_become_text(value: object, text: str) -> None:
    assert result_text(value) == text


def test_invoke_runs_sync_and_async_functions_and_returns_text() -> None:
    async def double(n: int) -> int:
        return n * 2

    def echo_arguments(**arguments: Any) -> dict[str, Any]:
        return arguments

    asynchronous = tool(description="Double.")(double)
    sync = AgentTool(
        name="s", description="d", parameters={"type": "object"}, function=echo_arguments
    )

    assert asyncio.run(asynchronous.invoke({"n": 4})) == "8"
    assert asyncio.run(sync.invoke({"b": 2, "a": 1})) == '{"a":1,"b":2}'
    with pytest.raises(TypeError):
        asyncio.run(asynchronous.invoke({"nope": 1}))
