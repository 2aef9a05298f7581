"""Credentials removed before anything is written: by field name, by value shape, by known
value; the structure kept."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from openprogram.recording.redaction import (
    REDACTION_VERSION,
    is_secret_field_name,
    known_secret_values,
    remove_secret_values,
)
from openprogram.recording.token_shapes import PLACEHOLDER

OPENAI_KEY = "sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x"
ANTHROPIC_KEY = "sk-ant-api03-Zy1xWv4uTs7rQp0oNm3l"


def redact(value: object, *known: str) -> Any:
    """Redact with exactly the given known secrets, never the test process's environment."""
    return remove_secret_values(value, known_secrets=known)


def test_constants() -> None:
    assert PLACEHOLDER == "[secret removed]"
    assert REDACTION_VERSION == 4


# --- field names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "apiKey",
        "API-KEY",
        "Api_Key",
        "X-Api-Key",
        "xApiKey",
        "x_goog_api_key",
        "Set-Cookie",
        "sessionKey",
        "Authorization",
        "PROXY_AUTHORIZATION",
        "clientSecret",
        "refreshToken",
        "id-token",
        "TOKEN",
        "password",
    ],
)
def test_secret_field_name_spellings_match(name: str) -> None:
    assert is_secret_field_name(name)


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "tokens", "key", "token_count", "secretary", "keys", "session", "x-trace"],
)
def test_ordinary_field_names_do_not_match(name: str) -> None:
    assert not is_secret_field_name(name)


def test_secret_names_are_found_at_any_depth_in_any_spelling() -> None:
    data = {
        "a": [
            {"b": {"apiKey": "v1", "API-KEY": "v2", "x_api_key": "v3"}},
            ({"sessionKey": "v4", "clientSecret": "v5"},),
        ]
    }
    assert redact(data) == {
        "a": [
            {"b": {"apiKey": PLACEHOLDER, "API-KEY": PLACEHOLDER, "x_api_key": PLACEHOLDER}},
            [{"sessionKey": PLACEHOLDER, "clientSecret": PLACEHOLDER}],
        ]
    }


def test_headers_dict() -> None:
    headers = {
        "Authorization": f"Bearer {OPENAI_KEY}",
        "Cookie": "session=abc; theme=dark",
        "X-Trace": "keep-me",
        "Content-Type": "application/json",
    }
    assert redact({"headers": headers}) == {
        "headers": {
            "Authorization": PLACEHOLDER,
            "Cookie": PLACEHOLDER,
            "X-Trace": "keep-me",
            "Content-Type": "application/json",
        }
    }


def test_number_valued_secret_field_is_replaced() -> None:
    assert redact({"session_key": 123456, "password": 1.5}) == {
        "session_key": PLACEHOLDER,
        "password": PLACEHOLDER,
    }


def test_bool_and_none_valued_secret_fields_stay() -> None:
    data = {"token": True, "password": False, "secret": None}
    assert redact(data) == data


def test_schema_with_a_property_named_token_stays_a_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"token": {"type": "string"}, "password": {"type": "string"}},
        "required": ["token"],
    }
    assert redact(schema) == schema


def test_list_under_a_secret_name_is_walked_into() -> None:
    assert redact({"token": ["plain words", f"key {OPENAI_KEY}"]}) == {
        "token": ["plain words", f"key {PLACEHOLDER}"]
    }


def test_non_secret_names_keep_their_values() -> None:
    data = {"max_tokens": 1024, "key": "press any key", "tokens": ["a", "b"], "model": "gpt"}
    assert redact(data) == data


# --- value shapes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "basic math",
        "token limit reached",
        "press any key",
        "the password field is empty",
        "max_tokens",
        "Bearer of bad news",
        "bearer bonds are paper",
        "ask-me-anything",
        "task-force",
        "sk-short",
        "risk-assessment-for-the-quarterly-report",
        "a:b@c",
        "mail me at user:pass@example.com",
        "https://user@host.test/path",
        "https://host.test:8443/path?q=token&page=2",
        "x = 1; y = 2",
        "key=value&other=thing",
        "",
    ],
)
def test_prose_survives(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Authorization: Bearer {OPENAI_KEY}", f"Authorization: Bearer {PLACEHOLDER}"),
        ("bearer abcdefghijklmnop.qr", f"bearer {PLACEHOLDER}"),
        ("BEARER abc/def+ghi=jkl~mn_op,", f"BEARER {PLACEHOLDER},"),
        ("(Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig)", f"(Bearer {PLACEHOLDER})"),
    ],
)
def test_bearer_credentials_are_removed(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_bearer_needs_sixteen_credential_characters() -> None:
    assert redact("Bearer abcdefghijklmno") == "Bearer abcdefghijklmno"
    assert redact("Bearer abcdefghijklmnop") == f"Bearer {PLACEHOLDER}"


def test_bearer_needs_a_word_boundary() -> None:
    assert redact("cupbearer abcdefghijklmnopqrstu") == "cupbearer abcdefghijklmnopqrstu"


@pytest.mark.parametrize("key", [OPENAI_KEY, ANTHROPIC_KEY, "sk-" + "a" * 20, "sk-A_b-C" * 4])
def test_sk_keys_are_removed_in_prose(key: str) -> None:
    assert redact(f"my key is {key}, thanks") == f"my key is {PLACEHOLDER}, thanks"
    assert redact(f'"{key}"') == f'"{PLACEHOLDER}"'


def test_sk_key_needs_twenty_characters_and_a_boundary() -> None:
    assert redact("sk-" + "a" * 19) == "sk-" + "a" * 19
    assert redact("task-" + "a" * 30) == "task-" + "a" * 30
    assert redact("-sk-" + "a" * 20) == "-" + PLACEHOLDER


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://x.test/v1?api_key=abc123&q=1",
            f"https://x.test/v1?api_key={PLACEHOLDER}&q=1",
        ),
        (
            "https://x.test/v1?q=1&access_token=abc.def#frag",
            f"https://x.test/v1?q=1&access_token={PLACEHOLDER}#frag",
        ),
        ("GET /v1?token=t0k3n HTTP/1.1", f"GET /v1?token={PLACEHOLDER} HTTP/1.1"),
        ("?apiKey=abc", f"?apiKey={PLACEHOLDER}"),
        ("?x-api-key=abc'", f"?x-api-key={PLACEHOLDER}'"),
        (
            '"u?client_secret=s3&password=p4"',
            f'"u?client_secret={PLACEHOLDER}&password={PLACEHOLDER}"',
        ),
    ],
)
def test_secret_query_parameters_are_removed(url: str, expected: str) -> None:
    assert redact(url) == expected


def test_credential_nested_in_another_query_value_is_removed() -> None:
    assert redact("https://x.test/login?next=/app?token=abc&q=1") == (
        f"https://x.test/login?next=/app?token={PLACEHOLDER}&q=1"
    )


def test_other_query_parameters_stay() -> None:
    url = "https://x.test/search?q=token&max_tokens=5&key=abc"
    assert redact(url) == url


def test_url_userinfo_password_is_removed() -> None:
    assert redact("clone https://alice:hunter22@git.test/repo.git now") == (
        f"clone https://{PLACEHOLDER}@git.test/repo.git now"
    )
    assert redact("postgres://u:p@db:5432/x") == f"postgres://{PLACEHOLDER}@db:5432/x"


def test_password_after_an_earlier_placeholder_is_removed() -> None:
    # Replay re-redacts old recordings with the current rules; they may hold placeholders.
    assert redact(f"https://{PLACEHOLDER}:hunter22@h.test/") == f"https://{PLACEHOLDER}@h.test/"


def test_url_without_password_stays() -> None:
    for text in ["https://alice@git.test/repo", "https://alice:@git.test", "https://h.test:80/a@b"]:
        assert redact(text) == text


def test_shapes_are_removed_from_dict_keys() -> None:
    assert redact({f"Bearer {OPENAI_KEY}": 1, OPENAI_KEY: 2}) == {
        f"Bearer {PLACEHOLDER}": 1,
        PLACEHOLDER: 2,
    }


# --- known values -----------------------------------------------------------------------


def test_known_secret_inside_prose_is_removed() -> None:
    assert redact("the key is ghp_0123456789 ok", "ghp_0123456789") == (
        f"the key is {PLACEHOLDER} ok"
    )


def test_known_secret_glued_to_text_is_removed() -> None:
    assert redact("xxhunter2hunter2yy", "hunter2hunter2") == f"xx{PLACEHOLDER}yy"


def test_short_known_secrets_are_ignored() -> None:
    assert redact("press any key", "any key") == "press any key"
    assert redact("abcdefgh", "abcdefgh") == PLACEHOLDER


def test_known_secret_that_is_part_of_the_placeholder_is_ignored() -> None:
    text = f"x {PLACEHOLDER} y"
    assert redact(text, "secret removed") == text


def test_longest_known_secret_is_removed_whole() -> None:
    assert redact("x ABCDEFGH12345678 y", "ABCDEFGH", "ABCDEFGH12345678") == (f"x {PLACEHOLDER} y")


def test_known_secrets_in_keys_and_nested_values() -> None:
    assert redact({"KNOWNSECRET1": ["a KNOWNSECRET1 b"]}, "KNOWNSECRET1") == {
        PLACEHOLDER: [f"a {PLACEHOLDER} b"]
    }


def test_known_secret_values_reads_credential_variables() -> None:
    environ = {
        "OPENAI_API_KEY": "openai-value-1",
        "my_service_api_key": "lower-case-name",
        "GITHUB_TOKEN": "ghp-value-123",
        "APP_SECRET": "app-secret-1",
        "DB_PASSWORD": "db-password-1",
        "AWS_SECRET_ACCESS_KEY": "aws-value-123",
        "SHORT_TOKEN": "short",
        "HOME": "/home/someone/long",
        "TOKENIZER": "not-a-credential",
        "MAX_TOKENS": "1000000000",
    }
    assert known_secret_values(environ) == frozenset(
        {
            "openai-value-1",
            "lower-case-name",
            "ghp-value-123",
            "app-secret-1",
            "db-password-1",
            "aws-value-123",
        }
    )


def test_known_secrets_default_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-held-credential")
    assert remove_secret_values("x env-held-credential y") == f"x {PLACEHOLDER} y"
    assert remove_secret_values("x env-held-credential y", known_secrets=()) == (
        "x env-held-credential y"
    )


# --- structure --------------------------------------------------------------------------


def test_input_is_not_mutated() -> None:
    data = {"headers": {"Authorization": "Bearer x"}, "items": [f"k {OPENAI_KEY}", {"a": 1}]}
    before = copy.deepcopy(data)
    result = redact(data)
    assert data == before
    assert result is not data
    assert result["items"] is not data["items"]


def test_tuples_become_lists_and_scalars_pass_through() -> None:
    marker = object()
    assert redact(("a", (1, 2.5), None, True, marker)) == ["a", [1, 2.5], None, True, marker]


def test_non_string_keys_are_kept() -> None:
    assert redact({1: "a", None: "b"}) == {1: "a", None: "b"}


def test_redacting_redacted_text_changes_nothing() -> None:
    once = redact(
        f"Bearer {OPENAI_KEY} https://u:p@h.test/?token=abc&api_key=[secret removed]x "
        "KNOWNSECRET1Bearer abcdefghijklmnopqrs",
        "KNOWNSECRET1",
    )
    assert "KNOWNSECRET1" not in once
    assert "abcdefghijklmnopqrs" not in once
    assert redact(once, "KNOWNSECRET1") == once
