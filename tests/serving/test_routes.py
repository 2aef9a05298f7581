"""Where a request to the recording proxy goes, what crosses it each way, and what ``exec``
gives a command run through it."""

from __future__ import annotations

import pytest

from openprogram.serving.forwarding import client_headers, upstream_headers
from openprogram.serving.proxied_exec import proxied_environment, upstreams_of
from openprogram.serving.routes import RouteError, parse_upstreams, route_of, vendor_named

UPSTREAMS = {"anthropic": "http://127.0.0.1:9000/gateway"}


@pytest.mark.parametrize(
    ("path", "query", "vendor", "upstream_url"),
    [
        ("/openai/v1/chat/completions", "", "openai", "https://api.openai.com/v1/chat/completions"),
        ("/v1/chat/completions", "", "openai", "https://api.openai.com/v1/chat/completions"),
        ("/v1/models", "", "openai", "https://api.openai.com/v1/models"),
        (
            "/anthropic/v1/messages",
            "beta=true",
            "anthropic",
            "http://127.0.0.1:9000/gateway/v1/messages?beta=true",
        ),
        (
            "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            "alt=sse",
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
            ":streamGenerateContent?alt=sse",
        ),
        # the Vercel AI SDK takes ANTHROPIC_BASE_URL for a base holding /v1
        (
            "/anthropic/messages",
            "",
            "anthropic",
            "http://127.0.0.1:9000/gateway/v1/messages",
        ),
        # a path is forwarded as it came, its escapes kept
        (
            "/openai/v1/files/file%2Dabc",
            "",
            "openai",
            "https://api.openai.com/v1/files/file%2Dabc",
        ),
    ],
)
def test_each_vendor_has_its_prefix_and_the_rest_of_the_path_is_forwarded_as_it_is(
    path: str, query: str, vendor: str, upstream_url: str
) -> None:
    route = route_of(path, query)
    assert (route.vendor.name, route.session) == (vendor, None)
    assert route.upstream_url(UPSTREAMS) == upstream_url


def test_a_session_path_carries_its_session_and_routes_the_rest() -> None:
    route = route_of("/__openprogram/s/abc123/anthropic/v1/messages")
    assert (route.session, route.vendor.name, route.path) == ("abc123", "anthropic", "/v1/messages")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/chat/completions", "/chat/completions is under no vendor's prefix: use /openai/…"),
        ("/", "/ is under no vendor's prefix"),
        ("/__openprogram/other", "no such control path: /__openprogram/other"),
        ("/__openprogram/s/abc", "names no session"),
    ],
)
def test_a_path_under_no_vendor_is_refused_naming_the_prefixes(path: str, message: str) -> None:
    with pytest.raises(RouteError) as caught:
        route_of(path)
    assert message in str(caught.value)
    assert caught.value.status == 404


def test_upstreams_are_parsed_from_one_value_or_several() -> None:
    assert parse_upstreams(["openai=http://a:1/", "anthropic=https://b gemini=http://c,"]) == {
        "openai": "http://a:1",
        "anthropic": "https://b",
        "gemini": "http://c",
    }
    with pytest.raises(ValueError, match="'mistral=http://x': write VENDOR=URL"):
        parse_upstreams(["mistral=http://x"])
    with pytest.raises(ValueError, match="--upstream openai: 'ftp://x' is not an http"):
        parse_upstreams(["openai=ftp://x"])
    with pytest.raises(ValueError, match="holds a query"):
        parse_upstreams(["openai=http://x/?key=1"])


def test_the_hop_and_the_server_s_own_headers_are_not_forwarded() -> None:
    sent = [
        ("Host", "127.0.0.1:7878"),
        ("Content-Length", "12"),
        ("Connection", "keep-alive, X-Hop"),
        ("X-Hop", "dropped: named by Connection"),
        ("Transfer-Encoding", "chunked"),
        ("x-openprogram-recording", "a-test"),
        ("Authorization", "Bearer sk-the-client-s-own"),
        ("Accept-Encoding", "gzip, br;q=0.9, zstd, deflate;q=0.5"),
        ("anthropic-version", "2023-06-01"),
        ("user-agent", "OpenAI/JS 6.49.0"),
    ]
    assert upstream_headers(sent) == [
        ("authorization", "Bearer sk-the-client-s-own"),  # the upstream needs the key
        ("accept-encoding", "gzip, deflate;q=0.5"),  # what the recorder can decode
        ("anthropic-version", "2023-06-01"),
        ("user-agent", "OpenAI/JS 6.49.0"),
    ]
    assert upstream_headers([("accept-encoding", "br")]) == [("accept-encoding", "identity")]
    assert client_headers([("Transfer-Encoding", "chunked"), ("content-encoding", "gzip")]) == [
        ("content-encoding", "gzip")  # the bytes are passed on as they came
    ]


def test_each_vendor_writes_its_own_error_shape_so_the_sdks_show_the_message() -> None:
    message = "replay mismatch at call 1, field body.x:\nrecorded 'a', incoming 'b'"
    assert vendor_named("openai").error_body(412, "kind", message)["error"]["message"] == message
    anthropic = vendor_named("anthropic").error_body(412, "kind", message)
    assert anthropic == {"type": "error", "error": {"type": "kind", "message": message}}
    gemini = vendor_named("gemini").error_body(412, "kind", message)
    assert gemini == {"error": {"code": 412, "message": message, "status": "KIND"}}


def test_exec_points_every_base_url_variable_at_the_proxy_keeping_the_configured_upstreams() -> (
    None
):
    environ = {
        "OPENAI_BASE_URL": "http://localhost:8000/custom/v1",  # a local vLLM under a path
        "GOOGLE_GEMINI_BASE_URL": "https://gateway.example/gemini-api/",
        "PATH": "/usr/bin",
    }
    assert upstreams_of(environ) == {
        "openai": "http://localhost:8000/custom",
        "gemini": "https://gateway.example/gemini-api",
    }
    child = proxied_environment(environ, "http://127.0.0.1:5000", token="t0ken", replay=False)
    assert child["OPENAI_BASE_URL"] == child["OPENAI_API_BASE"] == "http://127.0.0.1:5000/openai/v1"
    assert child["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5000/anthropic"
    assert child["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:5000/gemini"
    assert child["OPENPROGRAM_SERVE_URL"] == "http://127.0.0.1:5000"
    assert child["OPENPROGRAM_SERVE_TOKEN"] == "t0ken"  # a test runner's setup names sessions
    assert "OPENAI_API_KEY" not in child
    replaying = proxied_environment(environ, "http://127.0.0.1:5000", token="t", replay=True)
    assert replaying["OPENAI_API_KEY"] == replaying["ANTHROPIC_API_KEY"]  # the placeholder
    # a base URL without the SDK's /v1 keeps its path in the upstream
    assert upstreams_of({"OPENAI_API_BASE": "http://h:1/api"}) == {"openai": "http://h:1/api"}
    child = proxied_environment(
        {"OPENAI_API_BASE": "http://h:1/api"}, "http://p", token="t", replay=False
    )
    assert child["OPENAI_BASE_URL"] == "http://p/openai"
