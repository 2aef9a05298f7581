"""Properties of redaction over generated values: no planted secret survives, and redacting
twice changes nothing more."""

from __future__ import annotations

import re
import string

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram.recording.redaction import (
    is_secret_field_name,
    known_secret_values,
    remove_secret_values,
)
from openprogram.recording.token_shapes import SECRET_FIELD_NAMES

# --- properties -------------------------------------------------------------------------

# Filler text never contains upper-case letters or digits, and every planted secret is made
# of them and ends in a digit (so it is no spelling of a field name either): a planted secret
# found in the output can only be a leak.
_FILLER_ALPHABET = string.ascii_lowercase + " .,:;!?=&@/#'\"()[]-_"
_SECRET_ALPHABET = string.ascii_uppercase + string.digits

_filler = st.text(alphabet=_FILLER_ALPHABET, max_size=30)
_secret = st.text(alphabet=_SECRET_ALPHABET, min_size=11, max_size=30).map(lambda s: s + "7")
# Long enough for the shape rules: 16+ characters after "Bearer", 20+ after "sk-".
_long_secret = st.text(alphabet=_SECRET_ALPHABET, min_size=19, max_size=40).map(lambda s: s + "7")
# 30+ characters: long enough for every token shape (GitHub, Google need 30 after the prefix).
_token_body = st.text(alphabet=_SECRET_ALPHABET, min_size=29, max_size=40).map(lambda s: s + "7")
_aws_key_id = st.text(alphabet=_SECRET_ALPHABET, min_size=15, max_size=15).map(lambda s: s + "7")
_SHAPED_KINDS = ["github", "aws", "slack", "google", "jwt", "assignment"]
_clean_scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _filler
)


def _spellings(name: str) -> list[str]:
    words = re.split(r"[-_]", name)
    camel = words[0] + "".join(word.capitalize() for word in words[1:])
    return [
        name,
        name.upper(),
        name.replace("-", "_"),
        name.replace("_", "-"),
        camel,
        camel[0].upper() + camel[1:],
        "-".join(word.capitalize() for word in words),
    ]


_SECRET_NAME_SPELLINGS = sorted(
    {spelling for name in SECRET_FIELD_NAMES for spelling in _spellings(name)}
)
_QUERY_NAMES = ["api_key", "apiKey", "access_token", "token", "x-api-key", "client_secret"]


@st.composite
def _planted(draw: st.DrawFn) -> tuple[object, list[str], list[str]]:
    """A JSON-like structure with secrets planted at random places.

    Returns the structure, the planted secret strings and the known secrets to pass.
    """
    known: list[str] = draw(st.lists(_secret, max_size=3, unique=True))
    planted: list[str] = []

    def embed(secret_text: str) -> str:
        return draw(_filler) + " " + secret_text + " " + draw(_filler)

    def text_with_secret() -> str:
        kinds = ["bearer", "sk", "query", "userinfo", *_SHAPED_KINDS] + (["known"] if known else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "known":
            secret = draw(st.sampled_from(known))
            planted.append(secret)
            return embed(secret)
        if kind in _SHAPED_KINDS:
            return embed(shaped(kind))
        secret = draw(_long_secret if kind in ("bearer", "sk") else _secret)
        planted.append(secret)
        if kind == "bearer":
            return embed(draw(st.sampled_from(["Bearer", "bearer", "BEARER"])) + " " + secret)
        if kind == "sk":
            return embed(draw(st.sampled_from(["sk-", "sk-proj-", "sk-ant-api03-"])) + secret)
        if kind == "query":
            name = draw(st.sampled_from(_QUERY_NAMES))
            return embed(f"https://h.test/v1?q=1&{name}={secret}&page=2")
        return embed(f"https://user:{secret}@h.test/repo")

    def shaped(kind: str) -> str:
        """A token of one of the shapes, its secret part planted."""
        secret = draw(_aws_key_id if kind == "aws" else _token_body)
        planted.append(secret)
        if kind == "github":
            return draw(st.sampled_from(["ghp_", "gho_", "ghs_", "github_pat_"])) + secret
        if kind == "aws":
            return draw(st.sampled_from(["AKIA", "ASIA"])) + secret
        if kind == "slack":
            return draw(st.sampled_from(["xoxb-", "xoxp-"])) + secret
        if kind == "google":
            return "AIza" + secret
        if kind == "jwt":
            return f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.{secret}"
        name = draw(st.sampled_from(["password", "DB_PASSWORD", "client_secret", "apiKey"]))
        quote = draw(st.sampled_from(["", '"', "'"]))
        return f"{name}{draw(st.sampled_from(['=', ': ', ' = ']))}{quote}{secret}{quote}"

    def node(depth: int) -> object:
        choice = draw(st.integers(min_value=0, max_value=5 if depth < 4 else 2))
        if choice == 0:
            return draw(_clean_scalar)
        if choice == 1:
            return text_with_secret()
        if choice == 2:
            secret = draw(_secret)
            planted.append(secret)
            return {draw(st.sampled_from(_SECRET_NAME_SPELLINGS)): secret}
        if choice == 3:
            size = draw(st.integers(min_value=0, max_value=3))
            items = [node(depth + 1) for _ in range(size)]
            return tuple(items) if draw(st.booleans()) else items
        result: dict[str, object] = {}
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            key = text_with_secret() if draw(st.booleans()) else draw(_filler)
            result[key] = node(depth + 1)
        if choice == 5:
            secret = draw(_secret)
            planted.append(secret)
            result[draw(st.sampled_from(_SECRET_NAME_SPELLINGS))] = secret
        return result

    return node(0), planted, known


@given(_planted())
def test_no_planted_secret_survives(case: tuple[object, list[str], list[str]]) -> None:
    data, planted, known = case
    dumped = orjson.dumps(remove_secret_values(data, known_secrets=known)).decode()
    for secret in planted:
        assert secret not in dumped


@given(_planted())
def test_redaction_is_idempotent_on_planted_data(
    case: tuple[object, list[str], list[str]],
) -> None:
    data, _, known = case
    once = remove_secret_values(data, known_secrets=known)
    assert remove_secret_values(once, known_secrets=known) == once


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
_credential_like = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=8)


@given(_json_like, st.lists(_credential_like, max_size=3))
def test_redaction_is_idempotent_on_arbitrary_data(data: object, known: list[str]) -> None:
    once = remove_secret_values(data, known_secrets=known)
    assert remove_secret_values(once, known_secrets=known) == once


_plain_word = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=10).filter(
    lambda word: not is_secret_field_name(word)
)
_plain_text = st.lists(_plain_word, max_size=6).map(" ".join)
_clean_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _plain_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_plain_word, children, max_size=4)
    ),
    max_leaves=20,
)


@given(_clean_json, st.lists(_secret, max_size=3))
def test_clean_data_is_returned_unchanged(data: object, known: list[str]) -> None:
    assert remove_secret_values(data, known_secrets=known) == data


def test_a_remembered_variable_counts_as_a_credential_whatever_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openprogram.recording import redaction
    from openprogram.recording.redaction import remember_secret_variable

    monkeypatch.setattr(redaction, "_remembered_variables", set())

    environ = {"GPU_BOX_KEY": "gpu-box-secret-value-123"}
    assert known_secret_values(environ) == frozenset()
    remember_secret_variable("gpu_box_key")
    assert known_secret_values(environ) == {"gpu-box-secret-value-123"}
