"""``openprogram recordings import``: vcrpy cassettes — recorded by real vcrpy, or written by
hand in the shapes older vcrpy versions wrote — made into recordings that replay as
openprogram's own, with secrets removed and counted, and hostile YAML refused."""

from __future__ import annotations

import base64
import gzip
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.recording import read_recording
from tests.support.cli_runner import error_line, run
from tests.support.offline import offline
from tests.support.sdk_server import SdkServer

KEY = "sk-test-0123456789abcdefghijkl"
CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Sunny.", "refusal": None},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


def compact(value: Any) -> bytes:
    """JSON as the vendors write it (no spaces): a recording needs no ``raw`` text beside it."""
    return json.dumps(value, separators=(",", ":")).encode()


REQUEST_BODY = '{"messages":[{"role":"user","content":"Paris?"}],"model":"gpt-4o-mini"}'


def imported(cassette: Path, *options: str) -> tuple[Any, Path]:
    """``import CASSETTE --into DIR --json``: the summary, and the recording's path."""
    out = cassette.parent / "recordings"
    result = run("import", str(cassette), "--into", str(out), "--json", *options)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    return summary["imported"][0], out / cassette.with_suffix(".jsonl").name


def test_a_session_recorded_by_vcrpy_and_by_openprogram_at_once_reads_the_same(
    tmp_path: Path,
) -> None:
    vcr = pytest.importorskip("vcr")
    import openai

    cassette, own = tmp_path / "session.yaml", tmp_path / "own.jsonl"
    with SdkServer() as server:
        client = openai.OpenAI(api_key=KEY, base_url=server.openai_url, max_retries=0)
        ask = [{"role": "user", "content": "hi"}]
        with vcr.use_cassette(str(cassette)), openprogram.record_replay(own, mode="record"):
            client.chat.completions.create(model="gpt-4o-mini", messages=ask)
            for _ in client.chat.completions.create(model="gpt-4o-mini", messages=ask, stream=True):
                pass
    summary, path = imported(cassette)
    assert summary["calls"] == 2
    assert summary["secrets_removed"] == {"authorization header": 2, "set-cookie header": 2}
    ours, theirs = read_recording(own), read_recording(path)
    for mine, converted in zip(ours.calls, theirs.calls, strict=True):
        assert converted.request == mine.request
        assert converted.event_rows == mine.event_rows, "the SSE events, one by one, alike"
    compared = run("diff", str(own), str(path))
    assert compared.exit_code == 0, compared.output
    assert KEY not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


OLD_CASSETTE = """\
interactions:
- request:
    body: !!python/object/new:_io.BytesIO
      state: !!python/tuple
      - !!binary |
        {body64}
      - 0
      - null
    headers:
      Authorization: [Bearer {key}]
      Content-Type: [application/json]
      User-Agent: [!!python/unicode 'OpenAI/Python 1.3.0']
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: !!binary |
        {gzipped64}
    headers:
      Content-Encoding: [gzip]
      Content-Type: [application/json]
      Set-Cookie: [a=1, b=2]
      openai-version: ['2020-10-01']
    status: {{code: 200, message: OK}}
- request:
    body: !!python/object/apply:builtins.iter
      args:
      - - !!binary |
          {body64}
    headers: {{}}
    method: GET
    uri: https://generativelanguage.googleapis.com/v1beta/models?key=AIzaSyA0123456789abcdefghijklmnopqrstu
  response:
    body: {{string: '{{"models": []}}'}}
    headers: {{Content-Type: [application/json]}}
    status: {{code: 200, message: OK}}
- request: {{method: POST, uri: https://api.openai.com/v1/x}}
version: 1
"""


def test_an_older_vcrpy_yaml_cassette_with_python_tags_and_a_gzip_body(tmp_path: Path) -> None:
    cassette = tmp_path / "old.yaml"
    body64 = base64.b64encode(REQUEST_BODY.encode()).decode()
    gzipped64 = base64.b64encode(gzip.compress(compact(CHAT))).decode()
    cassette.write_text(OLD_CASSETTE.format(body64=body64, gzipped64=gzipped64, key=KEY))
    summary, path = imported(cassette)
    assert summary["calls"] == 2
    assert summary["skipped"] == [{"interaction": 2, "reason": "no request or no response"}]
    assert summary["secrets_removed"] == {
        "authorization header": 1,
        "set-cookie header": 2,
        "url": 1,
    }
    text = path.read_text()
    assert KEY not in text
    assert "AIzaSy" not in text
    first, second = read_recording(path).calls
    assert first.request == {
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": {"content-type": "application/json"},
        "body": json.loads(REQUEST_BODY),
    }
    head, body = first.event_rows
    assert head["headers"] == {"content-type": "application/json", "openai-version": "2020-10-01"}
    assert body == {"type": "http_body", "body": CHAT}, "stored decoded, without content-encoding"
    assert second.request["url"].endswith("/v1beta/models?key=[secret removed]")
    # an iterator body's items joined; JSON without its content-type (a filter removed it)
    assert second.request["body"] == json.loads(REQUEST_BODY)
    assert second.request["headers"] == {"content-type": "application/json"}
    assert summary["content_types_restored"] == 1


def test_the_imported_call_replays_to_the_real_sdk_offline(tmp_path: Path) -> None:
    import openai

    cassette = tmp_path / "chat.json"
    interaction = {
        "request": {
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
            "body": REQUEST_BODY,
            "headers": {"Content-Type": ["application/json"], "Authorization": [f"Bearer {KEY}"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps(CHAT)},
        },
    }
    cassette.write_text(json.dumps({"version": 1, "interactions": [interaction]}))
    _, path = imported(cassette)
    client = openai.OpenAI(api_key="sk-replay", max_retries=0)
    with offline(), openprogram.record_replay(path, mode="replay"):
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Paris?"}]
        )
    assert reply.choices[0].message.content == "Sunny."
    assert reply.usage is not None
    assert reply.usage.total_tokens == 7
    assert reply.model_dump(mode="json", exclude_none=True)["id"] == "chatcmpl-1"


def test_pydantic_ais_parsed_bodies_and_an_event_stream_split_into_events(tmp_path: Path) -> None:
    stream = (
        "".join(
            f"data: {json.dumps(chunk)}\n\n"
            for chunk in (
                {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "Hel"}}]},
                {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "lo"}}]},
            )
        )
        + "data: [DONE]\n\n"
    )
    cassette = tmp_path / "pydantic_ai.yaml"
    cassette.write_text(
        "interactions:\n"
        "- request:\n"
        "    headers: {content-type: [application/json]}\n"
        "    method: POST\n"
        "    parsed_body: {model: gpt-4o, stream: true}\n"
        "    uri: https://api.openai.com/v1/chat/completions\n"
        "  response:\n"
        "    body: {string: " + json.dumps(stream) + "}\n"
        "    headers: {content-type: [text/event-stream]}\n"
        "    status: {code: 200, message: OK}\n"
        "- request: {headers: {}, method: POST, uri: 'https://api.openai.com/v1/embeddings', "
        "body: '{}'}\n"
        "  response:\n"
        "    headers: {content-type: [application/json]}\n"
        "    parsed_body: {data: [{embedding: [0.5]}]}\n"
        "    status: {code: 200, message: OK}\n"
        "version: 1\n"
    )
    _, path = imported(cassette)
    chat, embeddings = read_recording(path).calls
    assert chat.request["body"] == {"model": "gpt-4o", "stream": True}
    assert [row["type"] for row in chat.event_rows] == ["http_response", "sse", "sse", "sse"]
    assert chat.event_rows[1]["data"]["choices"][0]["delta"] == {"content": "Hel"}
    assert chat.event_rows[3]["data"] == "[DONE]"
    assert embeddings.event_rows[1] == {
        "type": "http_body",
        "body": {"data": [{"embedding": [0.5]}]},
    }


def test_a_brotli_body_is_stored_decoded(tmp_path: Path) -> None:
    brotli = pytest.importorskip("brotli")
    yaml = pytest.importorskip("yaml")
    interaction = {
        "request": {"method": "GET", "uri": "https://api.example.test/x", "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Encoding": ["br"], "Content-Type": ["application/json"]},
            "body": {"string": brotli.compress(compact(CHAT))},  # bytes: YAML's !!binary
        },
    }
    cassette = tmp_path / "br.yaml"
    cassette.write_text(yaml.safe_dump({"version": 1, "interactions": [interaction]}))
    assert "!!binary" in cassette.read_text()
    _, path = imported(cassette)
    assert read_recording(path).calls[0].event_rows[1] == {"type": "http_body", "body": CHAT}


HOSTILE = """\
interactions:
- request:
    body: !!python/object/apply:os.system ["touch {marker}"]
    headers: {{}}
    method: GET
    uri: http://example.test/
  response: {{status: {{code: 200}}, headers: {{}}, body: {{string: ''}}}}
version: 1
"""


def test_a_hostile_yaml_tag_is_refused_with_its_line_and_nothing_is_constructed(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "pwned"
    cassette = tmp_path / "hostile.yaml"
    cassette.write_text(HOSTILE.format(marker=marker))
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}, line 3: holds the YAML tag !!python/object/apply:os.system, which "
        "vcrpy never writes: refused, and nothing was constructed (re-record this cassette, "
        "or remove that value)"
    )
    assert not marker.exists()
    assert not (tmp_path / "out").exists()


WRAPPED = """\
interactions:
- request:
    body: {wrapper}
    headers: {{}}
    method: GET
    uri: http://example.test/
  response: {{status: {{code: 200}}, headers: {{}}, body: {{string: ''}}}}
version: 1
"""
SYSTEM = '!!python/object/apply:os.system ["touch {marker}"]'


@pytest.mark.parametrize(
    "wrapper",
    [
        f"!!python/object/new:_io.BytesIO [{SYSTEM}]",
        f"!!python/object/new:_io.BytesIO {{{{state: [{SYSTEM}]}}}}",
        f"!!python/object/apply:builtins.iter [{SYSTEM}]",
        f"!!python/tuple [{SYSTEM}]",
        f"[!!python/str a, {{{{b: [{SYSTEM}]}}}}]",
    ],
)
def test_a_hostile_tag_wrapped_in_a_tag_vcrpy_writes_is_refused_by_its_own_name(
    tmp_path: Path, wrapper: str
) -> None:
    marker = tmp_path / "pwned"
    cassette = tmp_path / "wrapped.yaml"
    cassette.write_text(WRAPPED.format(wrapper=wrapper.format(marker=marker)))
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}, line 3: holds the YAML tag !!python/object/apply:os.system, which "
        "vcrpy never writes: refused, and nothing was constructed (re-record this cassette, "
        "or remove that value)"
    )
    assert not marker.exists()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("wrapper", "found", "written"),
    [
        ("!!python/object/new:_io.BytesIO [abc]", "sequence", "mapping"),
        ("!!python/object/apply:builtins.iter abc", "scalar", "mapping"),
        ("!!python/tuple {a: b}", "mapping", "sequence"),
        ("!!python/str [a]", "sequence", "scalar"),
    ],
)
def test_a_tag_vcrpy_writes_holding_another_shape_is_refused_naming_the_tag(
    tmp_path: Path, wrapper: str, found: str, written: str
) -> None:
    cassette = tmp_path / "shape.yaml"
    cassette.write_text(WRAPPED.format(wrapper=wrapper))
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    tag = wrapper.split(" ")[0]
    assert error_line(result) == (
        f"error: {cassette}, line 3: holds the YAML tag {tag} with a {found} where vcrpy "
        f"writes a {written}: refused, and nothing was constructed (re-record this cassette, "
        "or remove that value)"
    )


def test_the_first_hostile_tag_in_the_document_is_the_one_named(tmp_path: Path) -> None:
    cassette = tmp_path / "two.yaml"
    cassette.write_text(
        WRAPPED.format(wrapper="[!!python/name:os.getcwd '', !!python/object/apply:os.system []]")
    )
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert "holds the YAML tag !!python/name:os.getcwd, which vcrpy never writes" in (
        error_line(result)
    )


def test_without_pyyaml_a_yaml_cassette_is_refused_in_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    cassette = tmp_path / "c.yaml"
    cassette.write_text("interactions: []\nversion: 1\n")
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}: reading a YAML cassette needs PyYAML: pip install "
        "'openprogram[vcr]' (or pyyaml)"
    )


def test_what_is_not_a_cassette_and_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text('{"interactions": [')
    result = run("import", str(tmp_path / "list.json"), str(tmp_path / "broken.json"),
                 "--into", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'broken.json'}, line 1: is not JSON (unexpected end of data)",
        f"error: {tmp_path / 'list.json'}: is not a vcrpy cassette (no list of interactions "
        "at its top)",
    ]
    assert run("import", str(tmp_path / "missing.yaml")).exit_code == 2
    both = run("import", str(tmp_path), "--into", "x", "--name", "y")
    assert "exclude each other" in error_line(both)
    assert both.exit_code == 2


def test_a_character_yaml_forbids_is_one_line_with_its_line(tmp_path: Path) -> None:
    cassette = tmp_path / "nul.yaml"
    cassette.write_text("version: 1\ninteractions: []\nx: a\x00b\n")
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert error_line(result) == (
        f"error: {cassette}, line 3: is not YAML (unacceptable character #x0000: special "
        "characters are not allowed)"
    )


def test_a_parsed_body_holding_what_json_cannot_is_skipped(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text(
        "version: 1\ninteractions:\n"
        "- request: {method: GET, uri: 'https://api.example.test/x', headers: {}}\n"
        "  response: {status: {code: 200}, headers: {}, parsed_body: {data: !!binary AAEC}}\n"
        "- request: {method: GET, uri: 'https://api.example.test/y', headers: {}}\n"
        "  response: {status: {code: 200}, headers: {}, parsed_body: {n: 184467440737095516160}}\n"
    )
    summary, _ = imported(cassette)
    assert summary["calls"] == 0
    assert summary["skipped"] == [
        {"interaction": 0, "reason": "a body holding a value JSON cannot hold"},
        {"interaction": 1, "reason": "a body holding a value JSON cannot hold"},
    ]


def test_an_existing_recording_is_kept_unless_forced(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps({"version": 1, "interactions": []}))
    out = tmp_path / "recordings"
    out.mkdir()
    (out / "c.jsonl").write_text("mine\n")
    result = run("import", str(cassette), "--into", str(out))
    assert result.exit_code == 1
    assert "c.jsonl exists: pass --force to replace it (nothing was written)" in error_line(result)
    assert (out / "c.jsonl").read_text() == "mine\n"
    assert run("import", str(cassette), "--into", str(out), "--force").exit_code == 0
    assert read_recording(out / "c.jsonl").calls == []


def test_a_pytest_recording_folder_maps_onto_the_fixtures_recordings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    empty = json.dumps({"version": 1, "interactions": []})
    for cassette in (
        "tests/cassettes/test_agent/test_chat.json",
        "tests/cassettes/test_agent/TestLoop.test_stops.json",
        "tests/cassettes/test_agent/test_sizes[big-3].json",
        "tests/agent/cassettes/test_loop/test_runs.json",
        "tests/fixtures/not_a_cassette.json",
    ):
        (tmp_path / cassette).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / cassette).write_text(empty)
    result = run("import", "tests", "--pytest-recording")
    assert result.exit_code == 0, result.output
    written = sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.glob("tests/recordings/**/*.jsonl")
    )
    assert written == [
        "tests/recordings/agent.test_loop/test_runs.jsonl",
        "tests/recordings/test_agent/TestLoop.test_stops.jsonl",
        "tests/recordings/test_agent/test_chat.jsonl",
        "tests/recordings/test_agent/test_sizes-big-3.jsonl",
    ]
    assert f"- {Path('tests/fixtures/not_a_cassette.json')}: not a test's cassette" in result.stdout
    assert result.stdout.splitlines()[-1] == "4 cassettes imported, 0 failed, 1 not a test's"
    # A subfolder given alone: its module is still counted from the recordings' folder.
    (tmp_path / "tests/recordings/agent.test_loop/test_runs.jsonl").unlink()
    result = run("import", "tests/agent", "--pytest-recording")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tests/recordings/agent.test_loop/test_runs.jsonl").exists()


def test_the_configured_redact_patterns_apply_to_an_import(tmp_path: Path) -> None:
    from tests.support.config_files import write_config

    write_config('[record_replay]\nredact_patterns = ["acct-[0-9]{6}"]\n')
    interaction = {
        "request": {
            "method": "POST",
            "uri": "https://api.example.test/v1/chat/completions",
            "body": '{"messages":[{"role":"user","content":"bill acct-123456"}]}',
            "headers": {"Content-Type": ["application/json"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": '{"note":"acct-123456 billed"}'},
        },
    }
    cassette = tmp_path / "billing.json"
    cassette.write_text(json.dumps({"version": 1, "interactions": [interaction]}))
    summary, path = imported(cassette)
    assert summary["secrets_removed"] == {"request body": 1, "response": 1}
    assert "acct-123456" not in path.read_text()
    header = read_recording(path).header
    assert str(header["redaction_fingerprint"]).startswith("sha256:")


def test_a_redactor_of_your_own_applies_to_an_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "house_rules.py").write_text(
        "def redact(text):\n    return text.replace('tenant-77', '[secret removed]')\n"
    )
    interaction = {
        "request": {"method": "GET", "uri": "https://api.example.test/t/tenant-77", "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["text/plain"]},
            "body": {"string": "hello tenant-77"},
        },
    }
    cassette = tmp_path / "tenant.json"
    cassette.write_text(json.dumps({"version": 1, "interactions": [interaction]}))
    summary, path = imported(cassette, "--redactor", "house_rules:redact")
    assert summary["secrets_removed"] == {"response": 1, "url": 1}
    assert "tenant-77" not in path.read_text()
