"""The token shapes: each kind found and replaced, prose kept, and the three promises that
keep replay faithful — redacting twice changes nothing, the JSON text of a value redacts
like the value, and deltas split between words redact like the whole text."""

from __future__ import annotations

import json
import string

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.token_shapes import PLACEHOLDER, TOKEN_SHAPES, shape_kinds
from tests.support.secret_samples import (
    AWS_SECRET,
    GITHUB_PAT,
    PASSWORD,
    PEM,
    SECRET_PARTS,
    SHAPED_SECRETS,
)

REDACTOR = SecretRedactor([])  # no known values: only the shapes


def redact(text: str) -> str:
    return REDACTOR.redact_text(text)


def test_every_kind_has_a_sample() -> None:
    assert set(SHAPED_SECRETS) <= set(shape_kinds())
    assert set(shape_kinds()) - set(SHAPED_SECRETS) == {"url-query-credential", "url-password"}


@pytest.mark.parametrize("kind", sorted(SHAPED_SECRETS))
def test_each_kind_is_removed_from_prose_around_it(kind: str) -> None:
    text = f"the tool printed: {SHAPED_SECRETS[kind]} and stopped."
    redacted = redact(text)
    assert SECRET_PARTS[kind] not in redacted
    assert PLACEHOLDER in redacted
    assert redacted.startswith("the tool printed: ")
    assert redacted.endswith(" and stopped.")
    first = next(shape for shape in TOKEN_SHAPES if any(shape.matches(SHAPED_SECRETS[kind])))
    assert first.kind == kind


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GITHUB_PAT, PLACEHOLDER),
        ("ghs_0123456789abcdefghijklmnopqrstuvWXYZ", PLACEHOLDER),
        ("key ASIAIOSFODNN7EXAMPLE.", f"key {PLACEHOLDER}."),
        (f'AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"', f'AWS_SECRET_ACCESS_KEY="{PLACEHOLDER}"'),
        (f"SecretAccessKey: {AWS_SECRET}", f"SecretAccessKey: {PLACEHOLDER}"),
        (f"{PEM}\nafter", f"{PLACEHOLDER}\nafter"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
            PLACEHOLDER,
        ),
        ("password: hunter2", f"password: {PLACEHOLDER}"),
        ('secret = "x"', f'secret = "{PLACEHOLDER}"'),
        ("passwd='correct horse'", f"passwd='{PLACEHOLDER}'"),
        ("export MYSQL_ROOT_PASSWORD=s3cr3t", f"export MYSQL_ROOT_PASSWORD={PLACEHOLDER}"),
        ("mysql --password=hunter2 -u root", f"mysql --password={PLACEHOLDER} -u root"),
        ("client-secret: abc-123", f"client-secret: {PLACEHOLDER}"),
        ("apiKey = 'k1'", f"apiKey = '{PLACEHOLDER}'"),
        ("auth_token=tok#1", f"auth_token={PLACEHOLDER}"),
        (
            "https://h.test/a?key=1&access_token=abc",
            f"https://h.test/a?key=1&access_token={PLACEHOLDER}",
        ),
        (  # Google's API key as a query parameter, in any case, of 8 characters or more
            "/v1beta/models/m:streamGenerateContent?alt=sse&key=plain-key-1&x=1",
            f"/v1beta/models/m:streamGenerateContent?alt=sse&key={PLACEHOLDER}&x=1",
        ),
        ("https://h.test/a?KEY=abcdefgh", f"https://h.test/a?KEY={PLACEHOLDER}"),
    ],
)
def test_shapes_replace_the_credential_and_keep_what_names_it(text: str, expected: str) -> None:
    assert redact(text) == expected


PROSE = [
    "Enter your password: then press enter.",
    "Reset your password: click the link we sent.",
    "The password: is required, the secret: patience.",
    "token limit reached; max token: 4096",
    "basic math, press any key, the key: value pairs",
    "password = input('Password: ')",
    "password = get_password()",
    "user=user, password=password, secret=args.secret",
    "if password == expected: return True",
    "def login(password: str, api_key: str | None = None) -> None:",
    "password := getpass()",
    "password_file=/run/secrets/db and passwordless: true",
    "a git sha 3f786850e387550fdab836ed7e6dc881de23001b in the log",
    "the AKIA prefix marks AWS keys; ghp_ marks GitHub tokens; eyJ starts a JWT",
    "-----BEGIN PUBLIC KEY----- is not private",
    "see hooks.slack.com/services for webhooks",
    "sk-learn is a library; task-1234 is a ticket",
    "sort by ?key=name or &key=id; monkey=banana",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_and_code_survive(text: str) -> None:
    assert redact(text) == text


# --- properties ------------------------------------------------------------------------------

_word = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8)
_punctuation = st.sampled_from([".", ",", ":", ";", "!", "?", "-", "(", ")", "'", '"'])
_prose_unit = _word | st.tuples(_word, _punctuation).map("".join)
_secret_unit = st.sampled_from(
    [text for kind, text in SHAPED_SECRETS.items() if kind != "private-key"]
)
_unit = _prose_unit | _secret_unit
_units = st.lists(_unit, min_size=1, max_size=12)


@given(st.lists(_prose_unit, max_size=20).map(" ".join))
def test_generated_prose_survives(text: str) -> None:
    assert redact(text) == text


@settings(max_examples=60)
@given(_units)
def test_redacting_twice_changes_nothing(units: list[str]) -> None:
    once = redact(" ".join(units))
    assert redact(once) == once


@settings(max_examples=60)
@given(_units, st.data())
def test_deltas_split_between_words_redact_like_the_whole_text(
    units: list[str], data: st.DataObject
) -> None:
    """A model streams text in deltas; a delta boundary between words (not inside a
    credential) gives the same redacted text as the whole reply."""
    text = " ".join(units)
    cuts = data.draw(st.sets(st.integers(min_value=1, max_value=len(units) - 1 or 1)))
    pieces: list[str] = []
    start = 0
    for cut in sorted(cut for cut in cuts if cut < len(units)):
        pieces.append(" ".join(units[start:cut]) + " ")
        start = cut
    pieces.append(" ".join(units[start:]))
    assert "".join(pieces) == text
    assert "".join(redact(piece) for piece in pieces) == redact(text)


_value_text = st.lists(
    _unit | st.sampled_from(["\n", "\t", "é", "\\", '"', "'", "\x1f", PEM, f"pw='{PASSWORD}'"]),
    max_size=6,
).map(lambda parts: " ".join(parts))
_arguments = st.dictionaries(
    st.sampled_from(["password", "token", "cmd", "text", "secret", "path"]) | _value_text,
    _value_text | st.integers(-(2**53), 2**53) | st.lists(_value_text, max_size=2),
    max_size=4,
)


@settings(max_examples=80)
@given(_arguments, st.sampled_from(["orjson", "spaced", "ascii-indented"]))
def test_json_text_of_arguments_redacts_like_the_arguments(
    arguments: dict[str, object], layout: str
) -> None:
    """A tool call's arguments stand as JSON text in its deltas and parsed in its end and
    done rows (and in the next request): both forms must come out alike, or replay serves a
    consumer that reassembles the deltas other arguments than the recording holds."""
    if layout == "orjson":
        text = orjson.dumps(arguments).decode()
    elif layout == "spaced":
        text = json.dumps(arguments, ensure_ascii=False)
    else:
        text = json.dumps(arguments, ensure_ascii=True, indent=2)
    assert orjson.loads(redact(text)) == REDACTOR.redact_model_output(arguments)


def test_a_json_member_named_password_is_not_an_assignment() -> None:
    """In model output the member stays (a tool called with a password replays with it);
    the same text as an assignment goes."""
    arguments = {"password": "hunter2!", "cmd": "login --password=hunter2!"}
    text = json.dumps(arguments)
    assert orjson.loads(redact(text)) == {
        "password": "hunter2!",
        "cmd": f"login --password={PLACEHOLDER}",
    }
