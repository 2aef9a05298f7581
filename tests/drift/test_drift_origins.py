"""``recordings drift`` sends a vendor's key — or a ``--header`` value — only to an origin
trusted for that vendor: its official API, one ``--base-url`` names, or a configured
``providers.<api>.base_url``. A recording whose URLs were moved to another host (here
``127.0.0.2``, standing in for an attacker's) has those calls skipped, one counted reason
naming the origin and the option that trusts it, and the other host gets no connection at
all."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram.drift.origins import (
    BaseUrlError,
    BaseUrls,
    UntrustedOrigin,
    is_official,
    origin_of,
    parse_base_urls,
)
from openprogram.providers import SimpleStreamOptions, complete_simple
from openprogram.recording.writer import close_recording_writers
from tests.support.attacker_server import AttackerServer
from tests.support.cli_runner import error_line, run
from tests.support.config_files import write_config
from tests.support.http_call_rows import write_calls
from tests.support.http_exchange_rows import http_call, json_body, response
from tests.support.sse_server import Script, ScriptedServer
from tests.support.tool_sessions import recording_into
from tests.support.vendor_wire import Text
from tests.support.vendors import HELLO, OPENAI

KEYS = {
    "OPENAI_API_KEY": "sk-live-openai-0123456789abcdefghij",
    "ANTHROPIC_API_KEY": "sk-ant-live-0123456789abcdefghij",
    "GOOGLE_API_KEY": "google-live-key-0123456789abcdef",
    "GEMINI_API_KEY": "gemini-live-key-0123456789abcdef",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}
HEADER_VALUE = "proxy-token-0123456789abcdefghij"
HEADER = f"x-proxy-token: {HEADER_VALUE}"
SECRETS = [*KEYS.values(), HEADER_VALUE]

JSON_HEADERS = {"content-type": "application/json"}
ANTHROPIC_HEADERS = {**JSON_HEADERS, "anthropic-version": "2023-06-01"}
GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
CONVERSE = "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
ANSWER = [response(content_type="application/json"), json_body({})]


def vendor_calls(origin: str) -> list[list[dict[str, Any]]]:
    """One call to each vendor's API — Gemini's twice, its key in the URL and in a header —
    every URL on ``origin``."""
    ask = [{"role": "user", "content": "hi"}]
    contents = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    messages = {"model": "claude-x", "max_tokens": 8, "messages": ask}
    calls = [
        ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": ask}, JSON_HEADERS),
        ("/v1/messages", messages, ANTHROPIC_HEADERS),
        (f"{GEMINI}?key=[secret removed]", contents, JSON_HEADERS),
        (GEMINI, contents, JSON_HEADERS),
        (CONVERSE, {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, JSON_HEADERS),
    ]
    return [
        http_call(index, "POST", origin + path, body, ANSWER, headers=headers)
        for index, (path, body, headers) in enumerate(calls)
    ]


VENDOR_OF_CALL = ["openai", "anthropic", "google", "google", "aws"]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # botocore would ask 169.254.169.254


def drift_report(path: Path, *options: str) -> tuple[int, list[dict[str, Any]], str]:
    """``recordings drift --json``: its exit code, the calls of its report, and all it printed."""
    result = run("drift", str(path), "--json", *options)
    assert result.exit_code in (0, 1), result.output
    (checked,) = json.loads(result.stdout)["recordings"]
    return result.exit_code, checked["calls"], result.output


@pytest.mark.usefixtures("keys")
def test_no_key_and_no_header_reach_a_host_the_recording_was_moved_to(tmp_path: Path) -> None:
    with AttackerServer() as attacker:
        moved = write_calls(tmp_path / "moved.jsonl", *vendor_calls(attacker.origin))
        before = moved.read_bytes()
        result = run("drift", str(moved), "--header", HEADER)
        code, calls, json_output = drift_report(moved, "--header", HEADER)
    assert attacker.connections == [], "no connection at all, with a key or without"
    assert (result.exit_code, code) == (0, 0), "nothing was sent: nothing drifted"
    assert moved.read_bytes() == before
    origin = attacker.origin
    assert [call["result"] for call in calls] == ["skipped"] * 5
    assert [call["reason"] for call in calls] == [
        f"{origin} is not {vendor}'s API; pass --base-url {vendor}={origin} to trust it"
        for vendor in VENDOR_OF_CALL
    ]
    lines = result.stdout.splitlines()
    assert lines[-4:] == [
        f"1 call skipped: {origin} is not anthropic's API; pass --base-url "
        f"anthropic={origin} to trust it",
        f"2 calls skipped: {origin} is not google's API; pass --base-url google={origin} to "
        "trust it",
        f"1 call skipped: {origin} is not aws's API; pass --base-url aws={origin} to trust it",
        f"- {moved}: 5 skipped: nothing was sent",
    ]
    assert not [secret for secret in SECRETS if secret in result.output + json_output]


@pytest.mark.usefixtures("keys")
def test_an_origin_named_for_a_vendor_gets_that_vendors_key_and_no_other(tmp_path: Path) -> None:
    with AttackerServer() as attacker:
        moved = write_calls(tmp_path / "moved.jsonl", *vendor_calls(attacker.origin))
        trusted = f"openai={attacker.origin}"
        code, calls, _ = drift_report(moved, "--base-url", trusted, "--header", HEADER)
    assert code == 0
    assert [call["result"] for call in calls] == ["unchanged"] + ["skipped"] * 4
    (sent,) = attacker.connections
    assert sent.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"\r\nauthorization: Bearer {KEYS['OPENAI_API_KEY']}\r\n".encode() in sent
    assert f"\r\n{HEADER}\r\n".encode() in sent, "the --header value goes with a trusted call"
    others = [value for name, value in KEYS.items() if name != "OPENAI_API_KEY"]
    assert not [value for value in others if value.encode() in attacker.received]


@pytest.mark.usefixtures("keys")
def test_a_host_named_with_its_port_gets_each_calls_own_key(tmp_path: Path) -> None:
    with AttackerServer() as attacker:
        moved = write_calls(tmp_path / "moved.jsonl", *vendor_calls(attacker.origin))
        host = attacker.origin.removeprefix("http://")
        code, calls, _ = drift_report(moved, "--base-url", f"{host}={attacker.origin}")
    assert code == 0
    assert [call["result"] for call in calls] == ["unchanged"] * 5
    sent = {
        request.partition(b" HTTP/1.1")[0].decode(): request.decode()
        for request in attacker.connections
    }
    assert f"authorization: Bearer {KEYS['OPENAI_API_KEY']}" in sent["POST /v1/chat/completions"]
    assert f"x-api-key: {KEYS['ANTHROPIC_API_KEY']}" in sent["POST /v1/messages"]
    # Gemini's key where the recording had it: in the URL, else in its header
    assert f"POST {GEMINI}?key={KEYS['GOOGLE_API_KEY']}" in sent
    assert f"x-goog-api-key: {KEYS['GOOGLE_API_KEY']}" in sent[f"POST {GEMINI}"]
    signed = sent[f"POST {CONVERSE}"]
    assert f"Credential={KEYS['AWS_ACCESS_KEY_ID']}/" in signed


def record_provider_call(path: Path, base_url: str) -> None:
    """An OpenAI call through openprogram's own provider, recorded against a loopback
    server at ``base_url`` (stopped since)."""
    with ScriptedServer() as server:
        server.serve(Script([OPENAI.wire.reply(Text("Hel", "lo"))]))

        async def call() -> None:
            with recording_into(path, OPENAI.api, OPENAI.provider(server.base_url)):
                options = SimpleStreamOptions(api_key="sk-test")
                await complete_simple(OPENAI.model_at(server.base_url), HELLO, options)

        asyncio.run(call())
        close_recording_writers()
        recorded = server.base_url
    path.write_text(path.read_text().replace(recorded, base_url))


@pytest.mark.usefixtures("keys")
def test_a_provider_call_moved_to_another_host_is_skipped_unsent(tmp_path: Path) -> None:
    path = tmp_path / "provider.jsonl"
    with AttackerServer() as attacker:
        record_provider_call(path, attacker.origin)
        result = run("drift", str(path), "--header", HEADER)
    assert attacker.connections == []
    assert result.exit_code == 0, result.output
    origin = attacker.origin
    assert (
        f"call 0 openai-completions gpt-test: skipped: {origin} is not openai's API; pass "
        f"--base-url openai={origin} to trust it"
    ) in result.stdout.splitlines()


@pytest.mark.usefixtures("keys")
def test_a_configured_providers_base_url_is_trusted_for_its_vendor_only(tmp_path: Path) -> None:
    with AttackerServer() as attacker:
        write_config(f'[providers.openai-completions]\nbase_url = "{attacker.origin}/v1"\n')
        moved = write_calls(tmp_path / "moved.jsonl", *vendor_calls(attacker.origin))
        code, calls, _ = drift_report(moved)
    assert code == 0
    assert [call["result"] for call in calls] == ["unchanged"] + ["skipped"] * 4
    (sent,) = attacker.connections
    assert KEYS["OPENAI_API_KEY"].encode() in sent


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("openai", "error: --base-url takes VENDOR=ORIGIN or HOST=ORIGIN, found 'openai'"),
        ("=http://127.0.0.2:9", "error: --base-url takes VENDOR=ORIGIN or HOST=ORIGIN, "
         "found '=http://127.0.0.2:9'"),
        ("openai=http://127.0.0.2:9/v1", "error: --base-url openai= takes an origin "
         "(scheme://host[:port], no path), found 'http://127.0.0.2:9/v1'"),
        ("openai=ftp://127.0.0.2", "error: --base-url openai= takes an origin "
         "(scheme://host[:port], no path), found 'ftp://127.0.0.2'"),
        ("openai=http://127.0.0.2:99999", "error: --base-url openai= takes an origin "
         "(scheme://host[:port], no path), found 'http://127.0.0.2:99999'"),
        ("openai=http://user:pw@127.0.0.2", "error: --base-url openai= takes an origin "
         "(scheme://host[:port], no path), found 'http://user:pw@127.0.0.2'"),
        ("https://127.0.0.2=https://127.0.0.2", "error: --base-url takes VENDOR=ORIGIN or "
         "HOST=ORIGIN (VENDOR one of openai, anthropic, google, aws; HOST a host or "
         "host:port), found 'https://127.0.0.2=https://127.0.0.2'"),
    ],
)  # fmt: skip
def test_an_unusable_base_url_is_a_usage_error_of_one_line(
    tmp_path: Path, value: str, line: str
) -> None:
    moved = write_calls(tmp_path / "moved.jsonl", *vendor_calls("http://127.0.0.2:9"))
    result = run("drift", str(moved), "--base-url", value)
    assert result.exit_code == 2
    assert error_line(result) == line


def test_one_origin_per_vendor() -> None:
    given = ["openai=http://127.0.0.2:1", "openai=http://127.0.0.2:2"]
    with pytest.raises(BaseUrlError, match=r"^--base-url openai= is given two origins"):
        parse_base_urls(given)
    same = parse_base_urls(["OpenAI=HTTP://127.0.0.2:1/", "openai=http://127.0.0.2:1"])
    assert same.vendors == {"openai": "http://127.0.0.2:1"}


# -- which origins are trusted -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("vendor", "origin"),
    [
        ("openai", "https://api.openai.com"),
        ("anthropic", "https://api.anthropic.com"),
        ("google", "https://generativelanguage.googleapis.com"),
        ("google", "https://aiplatform.googleapis.com"),
        ("google", "https://us-central1-aiplatform.googleapis.com"),
        ("aws", "https://bedrock-runtime.us-east-1.amazonaws.com"),
        ("aws", "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com"),
    ],
)
def test_a_vendors_official_api_is_trusted_over_https_on_its_port(vendor: str, origin: str) -> None:
    assert is_official(vendor, origin)
    assert BaseUrls().destination(f"{origin}:443/v1/x?alt=sse", vendor) == f"{origin}/v1/x?alt=sse"
    for other in (origin.replace("https:", "http:"), f"{origin}:8443", f"{origin}.evil.example"):
        with pytest.raises(UntrustedOrigin):
            BaseUrls().destination(f"{other}/v1/x", vendor)


@pytest.mark.parametrize(
    ("vendor", "url"),
    [
        ("openai", "https://api.anthropic.com/v1/chat/completions"),  # another vendor's
        ("openai", "https://api.openai.com@127.0.0.2/v1/chat/completions"),
        ("openai", "https://xapi.openai.com/v1/chat/completions"),
        ("openai", "http://localhost:8080/v1/chat/completions"),
        ("openai", "http://[::1]:8080/v1/chat/completions"),
        ("aws", "https://my-bucket.s3.amazonaws.com/model/m/converse"),
        ("google", "https://storage.googleapis.com/v1beta/models/m:generateContent"),
        (None, "https://api.openai.com/v1/other"),
    ],
)
def test_any_other_origin_is_not_trusted_loopback_included(vendor: str | None, url: str) -> None:
    with pytest.raises(UntrustedOrigin):
        BaseUrls().destination(url, vendor)


def test_each_form_of_base_url_says_where_a_call_goes() -> None:
    named = parse_base_urls(
        [
            "openai=http://127.0.0.2:1",
            "127.0.0.3=http://127.0.0.2:3",
            "127.0.0.4:8080=http://127.0.0.2:4",
        ],
        configured={"anthropic": frozenset({"http://127.0.0.5:5"})},
    )
    # VENDOR=ORIGIN: the vendor's official calls and those recorded to ORIGIN go to ORIGIN
    official = "https://api.openai.com/v1/chat/completions?x=1"
    assert named.destination(official, "openai") == "http://127.0.0.2:1/v1/chat/completions?x=1"
    assert named.destination("http://127.0.0.2:1/v1/a", "openai") == "http://127.0.0.2:1/v1/a"
    with pytest.raises(UntrustedOrigin) as third:  # a third origin: the host's form trusts it
        named.destination("http://127.0.0.6:6/v1/a", "openai")
    assert str(third.value) == (
        "http://127.0.0.6:6 is not openai's API; pass --base-url "
        "127.0.0.6:6=http://127.0.0.6:6 to trust it"
    )
    # HOST=ORIGIN: every port of a host, or the one port named; any vendor, or none
    assert named.destination("https://127.0.0.3:9/v1/a", "google") == "http://127.0.0.2:3/v1/a"
    assert named.destination("http://127.0.0.3/x", None) == "http://127.0.0.2:3/x"
    assert named.destination("http://127.0.0.4:8080/x", "aws") == "http://127.0.0.2:4/x"
    with pytest.raises(UntrustedOrigin):
        named.destination("http://127.0.0.4:8081/x", "aws")
    # a configured base URL: trusted for its vendor as recorded, and for no other vendor
    assert named.destination("http://127.0.0.5:5/v1/m", "anthropic") == "http://127.0.0.5:5/v1/m"
    assert named.destination("https://api.anthropic.com/v1/m", "anthropic").startswith(
        "https://api.anthropic.com/"
    )
    with pytest.raises(UntrustedOrigin):
        named.destination("http://127.0.0.5:5/v1/m", "openai")
    with pytest.raises(UntrustedOrigin, match=r"^http://x\.example is not the API of a vendor"):
        named.destination("http://x.example/v1/m", None)


def test_an_origin_is_written_one_way() -> None:
    assert origin_of("HTTPS://API.OpenAI.com:443/v1") == "https://api.openai.com"
    assert origin_of("http://127.0.0.2:80/") == "http://127.0.0.2"
    assert origin_of("http://[::1]:8080/x") == "http://[::1]:8080"
    assert origin_of("ftp://example.com/") is None
    assert origin_of("http://example.com:99999/") is None
    assert origin_of("http:///x") is None


def test_signing_a_bedrock_call_without_botocore_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openprogram.drift.credentials import Credentials, MissingCredentials, apply_credentials

    monkeypatch.setitem(sys.modules, "botocore.auth", None)  # as if it were not installed
    credentials = Credentials({"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"}, ())
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse"

    with pytest.raises(MissingCredentials, match=r"pip install 'openprogram\[bedrock\]'"):
        apply_credentials("aws", "POST", url, {}, b"{}", credentials)
