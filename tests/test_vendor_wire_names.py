"""Each vendor API's wire names are spelled in its own module of ``openprogram/vendors/`` only.

:data:`WIRE_NAMES` lists, for each vendor module, names of its wire — field names, event
types, headers, hosts, key variables — that no other module of ``openprogram/`` may spell in a
string literal: every other layer asks the vendor module (its reader, its
:class:`~openprogram.vendors.wire.Wire`). A string literal is any string constant of a
module's syntax tree, the parts of an f-string included, but not a docstring nor any other
string standing alone as a statement (prose, which may name what it explains). A regular
expression counts as the text it matches (``api\\.openai\\.com`` spells ``api.openai.com``).
A name counts where it stands as a word: not inside a longer name (``candidatesTokenCount``
does not spell ``candidates``).

The two OpenAI APIs share their host, key and headers: those live in ``openai_chat`` (its
:data:`~openprogram.vendors.openai_chat.OPENAI_WIRE`), which ``openai_responses`` imports.
``openprogram_events`` is not listed: its event types are openprogram's own, which the
provider event model defines too.

:data:`BELOW_VENDORS` names the one message of a layer below ``vendors/`` that gives a key variable
as an example: each entry must still be true, so the lists only shrink.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

import openprogram
from openprogram.drift.origins import is_official
from openprogram.vendors import VENDOR_APIS, VENDOR_WIRES

PACKAGE = Path(openprogram.__file__).parent
VENDORS = "openprogram/vendors"

WIRE_NAMES: dict[str, tuple[str, ...]] = {
    "anthropic_messages": (
        "content_block_delta",
        "content_block_start",
        "input_json_delta",
        "message_stop",
        "anthropic-version",
        "anthropic-beta",
        "api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "x-api-key",
    ),
    "openai_chat": (
        "reasoning_content",
        "chat.completion",
        "chat.completion.chunk",
        "finish_reason",
        "api.openai.com",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "openai-beta",
        "openai-version",
    ),
    "openai_responses": (
        "response.output_text.delta",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.completed",
        "response.incomplete",
    ),
    "gemini": (
        "candidates",
        "usageMetadata",
        "candidatesTokenCount",
        "finishReason",
        "blockReason",
        "streamGenerateContent",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "x-goog-api-key",
        "generativelanguage.googleapis.com",
    ),
    "bedrock_converse": (
        "contentBlockDelta",
        "converse-stream",
        "stopReason",
        "bedrock-runtime",
        "amazonaws.com",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "x-amz-content-sha256",
    ),
}
"""For each vendor module (``openprogram/vendors/<name>.py``), the names only it may spell."""

BELOW_VENDORS: frozenset[tuple[str, str]] = frozenset(
    {
        # the example in the configuration's message for an ``api_key_env`` that is not a
        # variable's name: the configuration sits below vendors/ and imports none of it
        ("openprogram/config/models.py", "OPENAI_API_KEY"),
    }
)
"""Modules below :mod:`openprogram.vendors` that name a vendor's wire in a message."""


def _prose(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as a statement (docstrings)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


@cache
def string_literals(path: Path) -> tuple[str, ...]:
    """Every string literal of the module at ``path`` but its prose, backslashes removed (a
    regular expression's escapes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    prose = _prose(tree)
    return tuple(
        node.value.replace("\\", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    )


@cache
def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")


def spells(path: Path, name: str) -> bool:
    return any(_word(name).search(literal) for literal in string_literals(path))


def product_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def shown(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def spelled_elsewhere(vendor: str) -> set[tuple[str, str]]:
    """(file, name) for each of ``vendor``'s names another product module spells."""
    own = f"{VENDORS}/{vendor}.py"
    return {
        (shown(path), name)
        for path in product_files()
        if shown(path) != own
        for name in WIRE_NAMES[vendor]
        if spells(path, name)
    }


@pytest.mark.parametrize("vendor", sorted(WIRE_NAMES))
def test_only_the_vendor_module_spells_its_wire_names(vendor: str) -> None:
    found = spelled_elsewhere(vendor) - BELOW_VENDORS
    assert not found, (
        f"these modules spell {vendor}'s wire names: ask openprogram.vendors.{vendor} "
        f"(its reader or its Wire) instead: {sorted(found)}"
    )


@pytest.mark.parametrize("vendor", sorted(WIRE_NAMES))
def test_the_vendor_module_spells_each_of_its_names(vendor: str) -> None:
    path = PACKAGE / "vendors" / f"{vendor}.py"
    assert [name for name in WIRE_NAMES[vendor] if not spells(path, name)] == []


def test_every_known_exception_is_still_true() -> None:
    listed = {name: vendor for vendor, names in WIRE_NAMES.items() for name in names}
    stale = sorted(
        (file, name)
        for file, name in BELOW_VENDORS
        if name not in listed or not spells(PACKAGE.parent / file, name)
    )
    assert stale == [], f"no longer spelled there: remove from the exceptions: {stale}"


def test_every_vendor_api_module_is_listed() -> None:
    modules = {type(api).__module__.rpartition(".")[2] for api in VENDOR_APIS}
    assert modules == set(WIRE_NAMES)


def test_a_name_in_another_module_is_found(tmp_path: Path) -> None:
    """The scan reads literals, f-string parts and escaped regular expressions, and skips
    prose and longer names."""
    module = tmp_path / "elsewhere.py"
    module.write_text(
        '"""Mentions content_block_delta and api.anthropic.com in prose."""\n'
        "HOST = r'api\\.anthropic\\.com'\n"
        "def f(kind: str) -> str:\n"
        '    """x-api-key in a docstring."""\n'
        "    return f'{kind}:x-api-key'\n"
        "COUNT = 'candidatesTokenCount'\n",
        encoding="utf-8",
    )
    found = {name for name in WIRE_NAMES["anthropic_messages"] if spells(module, name)}
    assert found == {"api.anthropic.com", "x-api-key"}
    assert not spells(module, "candidates")


def test_a_served_vendor_is_forwarded_to_its_official_api() -> None:
    """serve's default upstream is an origin drift sends the vendor's key to."""
    served = [wire for wire in VENDOR_WIRES if wire.served is not None]
    assert [wire.vendor for wire in served] == ["openai", "anthropic", "google"]
    assert all(is_official(wire.vendor, wire.served.upstream) for wire in served if wire.served)
