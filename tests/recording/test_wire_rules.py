"""The core knows no vendor's wire: each vendor API's module states what the core must know
of it (key header, key shapes, conversation keys, ids, per-run fields) as data, which
openprogram's package hands down; the core spells none of it and refuses to work without it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import openprogram.recording
from openprogram.recording import wire_rules as wire_rules_module
from openprogram.recording.call_digest import deterministic_event, is_non_deterministic_header
from openprogram.recording.minted_ids import is_id_key, may_hold_ids
from openprogram.recording.redaction import SecretRedactor, is_secret_field_name
from openprogram.recording.token_shapes import PLACEHOLDER, CredentialRules, shape_kinds
from openprogram.recording.wire_rules import KeyShape, WireRules, wire_rules
from openprogram.vendors import VENDOR_APIS, WIRE_RULES, VendorApi

CORE = sorted(Path(openprogram.recording.__file__).parent.glob("*.py"))
VENDOR_WORDS = re.compile(
    r"anthropic|openai|gemini|bedrock|goog|x-api-key|chatcmpl|toolu_|thoughtSignature"
    r"|encrypted_content",
    re.IGNORECASE,
)


def string_literals(source: Path) -> Iterator[str]:
    """Every string constant of ``source`` but its docstrings."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
        # an attribute's docstring: a string statement after an assignment
        body_statements = getattr(node, "body", [])
        for statement in body_statements if isinstance(body_statements, list) else []:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                docstrings.add(id(statement.value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.value


def vendor_facts(rules: WireRules) -> set[str]:
    """The names only a vendor's wire holds: its key header, the kinds and prefixes of its
    key shapes, its signed tokens, its timings, the headers its clients act on (its per-run
    fields and conversation keys are ordinary words: ``created``, ``messages``)."""
    return {
        *rules.credential_names,
        *(shape.kind for shape in rules.key_shapes),
        *(hint for shape in rules.key_shapes for hint in shape.hints),
        *rules.signature_keys,
        *(timing for _, timing in rules.per_run_timings),
        *rules.compared_response_headers,
    }


@pytest.mark.parametrize("module", CORE, ids=lambda path: path.stem)
def test_no_core_module_spells_a_vendors_wire(module: Path) -> None:
    facts = vendor_facts(WIRE_RULES)
    found = [
        text
        for text in string_literals(module)
        if VENDOR_WORDS.search(text) or any(fact in text for fact in facts)
    ]
    assert found == []


def test_the_core_is_handed_every_vendor_apis_rules() -> None:
    assert wire_rules() is WIRE_RULES
    for api in VENDOR_APIS:
        assert WIRE_RULES | api.recording_rules == WIRE_RULES, api.name
    assert {shape.kind for shape in WIRE_RULES.key_shapes} <= set(shape_kinds())


@pytest.mark.parametrize("api", VENDOR_APIS, ids=lambda api: api.name)
def test_each_apis_rules_are_applied(api: VendorApi) -> None:
    rules = api.recording_rules
    redactor = SecretRedactor([])
    for name in rules.credential_names:
        assert is_secret_field_name(name)
        request = {"url": "https://h.test/p", "headers": {name: "value-of-the-key-1"}}
        assert redactor.redact_http_request(request)["headers"] == {name: PLACEHOLDER}
    for word in rules.credential_query_words:
        url = f"https://h.test/p?{word}=value-of-the-key-1"
        assert redactor.redact_text(url) == f"https://h.test/p?{word}={PLACEHOLDER}"
    for key in rules.conversation_keys:  # redacted by value only: a field named token stays
        body = {key: [{"token": "not-a-credential"}], "token": "a-credential"}
        redacted = redactor.redact_http_request({"body": body})["body"]
        assert redacted == {key: [{"token": "not-a-credential"}], "token": PLACEHOLDER}
    for key in rules.signature_keys:
        assert is_id_key(key)
        assert may_hold_ids(b'{"%s":"x"}' % key.encode())
    for header in rules.compared_response_headers:
        assert not is_non_deterministic_header(header)
    for field in rules.per_run_fields:
        event = {"type": "http_body", "body": {field: 1, "kept": 2}}
        assert deterministic_event("http", event)["body"] == {"kept": 2}
        for name in rules.per_run_objects:
            event = {"type": "sse", "data": {name: {field: 1, "kept": 2}}}
            assert deterministic_event("http", event)["data"] == {name: {"kept": 2}}
    for holder, timing in rules.per_run_timings:
        event = {"type": "http_body", "body": {holder: {timing: 9, "kept": 2}}}
        assert deterministic_event("http", event)["body"] == {holder: {"kept": 2}}
    for padding in rules.per_run_padding:
        event = {"type": "eventstream", "base64": "", "data": {padding: "abc", "kept": 2}}
        assert deterministic_event("http", event)["data"] == {"kept": 2}


def test_without_rules_handed_down_the_core_refuses_to_redact_or_compare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def forget() -> None:  # what was prepared from the rules handed down before
        for prepared in (wire_rules, *wire_rules_module._DERIVED):
            prepared.cache_clear()

    monkeypatch.setattr(wire_rules_module, "_supplier", None)
    forget()
    try:
        with pytest.raises(RuntimeError, match="no wire rules were handed down"):
            SecretRedactor([])
        with pytest.raises(RuntimeError, match="no wire rules were handed down"):
            is_id_key("signature")
    finally:
        monkeypatch.undo()
        forget()
    assert wire_rules() is WIRE_RULES


def test_a_key_shape_goes_before_a_shape_of_the_core() -> None:
    shape = KeyShape("house-key", r"hk-[0-9]{20}", ("hk-",), before="jwt")
    kinds = [kind.kind for kind in CredentialRules.of(WireRules(key_shapes=(shape,))).shapes]
    assert kinds.index("house-key") == kinds.index("jwt") - 1
    lost = KeyShape("house-key", r"hk-[0-9]{20}", ("hk-",), before="no-such-shape")
    with pytest.raises(ValueError, match=r"no-such-shape.*is no shape of the core's"):
        CredentialRules.of(WireRules(key_shapes=(lost,)))


def test_merged_rules_hold_both() -> None:
    one = WireRules(credential_names=frozenset({"a"}), per_run_objects=("x",))
    two = WireRules(credential_names=frozenset({"b"}), per_run_objects=("y", "x"))
    assert one | two == WireRules(
        credential_names=frozenset({"a", "b"}), per_run_objects=("x", "y")
    )
