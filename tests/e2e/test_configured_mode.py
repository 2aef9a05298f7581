"""The configured mode, as a user meets it: ``openprogram recordings record|replay|off``,
then plain Python processes — each a real one, in a fresh store, started with no wrapper.

Model traffic is recorded and replayed for every client openprogram captures (google-genai
sync and async, boto3's Bedrock runtime here; the openai and anthropic SDKs in
``tests/http_boundary/sdks/test_configured_mode_cycle.py``); every other connection is left
alone, and named at exit under replay; a broken configuration refuses model calls only, and
``status`` and ``off`` recover; several processes record one recording and replay it; the
hook's edges (``-I``, ``-E``, ``-S``, openprogram's own commands, exec's plan first)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.bedrock_server import BedrockServer
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.gemini_server import GeminiServer
from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received
from tests.support.sdk_server import SdkServer

pytestmark = pytest.mark.filterwarnings(
    # google-genai's async client subclasses aiohttp's ClientSession, which aiohttp discourages
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)

GEMINI_AGENT = """
import asyncio, json, os, sys
from google import genai
from google.genai import types

client = genai.Client(http_options=types.HttpOptions(base_url=os.environ["AGENT_URL"]))
question = sys.argv[1]

def shown(response):
    return response.model_dump(mode="json", exclude={"sdk_http_response"})

async def asynchronous():
    whole = await client.aio.models.generate_content(model="gemini-2.5-flash", contents=question)
    pieces = [shown(piece) async for piece in await client.aio.models.generate_content_stream(
        model="gemini-2.5-flash", contents=question + " (async)")]
    return [shown(whole), pieces]

whole = client.models.generate_content(model="gemini-2.5-flash", contents=question)
pieces = [shown(piece) for piece in client.models.generate_content_stream(
    model="gemini-2.5-flash", contents=question + " (streamed)")]
print(json.dumps([shown(whole), pieces, asyncio.run(asynchronous())], sort_keys=True))
"""

BEDROCK_AGENT = """
import json, os, sys
import boto3

client = boto3.client(
    "bedrock-runtime", region_name="us-east-1", endpoint_url=os.environ["AGENT_URL"],
    aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID"),
    aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
)
ask = [{"role": "user", "content": [{"text": sys.argv[1]}]}]
whole = client.converse(modelId="anthropic.claude-3-haiku", messages=ask)
whole["ResponseMetadata"].pop("HTTPHeaders")  # the wire's content-length: counted anew
events = list(client.converse_stream(modelId="anthropic.claude-3-haiku", messages=ask)["stream"])
print(json.dumps([whole, events], sort_keys=True, default=str))
"""

OPENAI_AGENT = """
import json, os, sys
import openai

client = openai.OpenAI(base_url=os.environ["AGENT_URL"] + "/v1")
reply = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": sys.argv[1]}])
print(json.dumps(reply.model_dump(), sort_keys=True))
"""

KEYS = {
    "OPENAI_API_KEY": "sk-proj-loopback-0123456789abcdefKEY1",
    "GEMINI_API_KEY": "gemini-test-key-0123456789",
    "AWS_ACCESS_KEY_ID": "AKIATESTFAKE",
    "AWS_SECRET_ACCESS_KEY": "fake-secret-0123456789",
}


class Front:
    """A fresh store, and plain ``python`` processes started in it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.home = folder / "home"
        self.url = ""

    def environment(self, *, keys: bool = False, **extra: str) -> dict[str, str]:
        env = user_environment(self.home)
        for name in (*KEYS, "GOOGLE_API_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
            env.pop(name, None)
        if keys:
            env.update(KEYS)
        env["AGENT_URL"] = self.url
        env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = str(self.folder / "none")
        env["AWS_EC2_METADATA_DISABLED"] = "true"
        env.update(extra)
        return env

    def openprogram(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = openprogram_process(*args, env=self.environment())
        assert result.returncode == 0, result.stderr
        return result

    def python(
        self, code: str, *args: str, keys: bool = False, options: tuple[str, ...] = (), **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """``python [OPTIONS] -c CODE ARGS`` in the store's environment."""
        return subprocess.run(
            [sys.executable, *options, "-c", textwrap.dedent(code), *args],
            cwd=self.folder,
            env=self.environment(keys=keys, **extra),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def record_the_agent(self) -> None:
        """``recordings record agent``, then the openai agent asks "hello" of a live
        stand-in once (the server stopped afterwards)."""
        self.openprogram("recordings", "record", "agent")
        with SdkServer() as model:
            self.url = model.base_url
            assert self.python(OPENAI_AGENT, "hello", keys=True).returncode == 0


@pytest.fixture
def front(tmp_path: Path) -> Front:
    return Front(tmp_path)


@pytest.mark.parametrize(
    ("agent", "server"),
    [pytest.param(GEMINI_AGENT, GeminiServer, id="google-genai"),
     pytest.param(BEDROCK_AGENT, BedrockServer, id="bedrock")],
)  # fmt: skip
def test_record_show_replay_drift_off(front: Front, agent: str, server: type) -> None:
    front.openprogram("recordings", "record", "agent")
    with server() as live_server:
        front.url = live_server.base_url
        live = front.python(agent, "hello", keys=True)
        assert live.returncode == 0, live.stderr
        assert live.stderr == ""
        recorded_hits = len(live_server.received)
    assert recorded_hits >= 2
    shown = front.openprogram("recordings", "show", "agent")
    assert f"{recorded_hits} calls" in shown.stdout

    front.openprogram("recordings", "replay", "agent")
    replayed = front.python(agent, "hello")  # the server stopped, no key
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == live.stdout
    assert replayed.stderr == ""

    drifted = front.python(agent, "goodbye")
    assert drifted.returncode == 1
    assert drifted.stderr.splitlines()[-2].endswith("replay mismatch at call 0, field " + (
        "body.contents[0].parts[0].text:" if agent is GEMINI_AGENT
        else "body.messages[0].content[0].text:"))  # fmt: skip
    assert drifted.stderr.splitlines()[-1] == "recorded 'hello', incoming 'goodbye'"

    front.openprogram("recordings", "off")
    with server() as again:
        front.url = again.base_url
        live_again = front.python(agent, "goodbye", keys=True)
        assert live_again.returncode == 0, live_again.stderr
        assert len(again.received) == recorded_hits


JSON_API = """
import json, os, sys
import openai, requests

tool = requests.get(os.environ["TOOL_URL"] + "/v1/weather?city=Paris", timeout=30).json()
print("tool", json.dumps(tool), flush=True)
client = openai.OpenAI(base_url=os.environ["AGENT_URL"] + "/v1", max_retries=0)
client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "new"}])
"""


class _GetHandler(LoopbackHandler):
    do_GET = LoopbackHandler.do_POST


class JsonApi(LoopbackServer):
    """A tool's JSON API on loopback: not a model."""

    handler = _GetHandler

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        body = json.dumps({"ok": True, "path": received.path}).encode()
        http.send_head(200, {"content-type": "application/json", "content-length": str(len(body))})
        http.send_body(body)


def test_under_replay_a_model_request_not_recorded_is_refused_and_other_traffic_goes_through(
    front: Front,
) -> None:
    front.record_the_agent()
    front.openprogram("recordings", "replay", "agent")

    with SdkServer() as model, JsonApi() as tool:
        front.url = model.base_url
        result = front.python(JSON_API, keys=True, TOOL_URL=tool.base_url)
        assert len(model.received) == 0  # the model request was refused before it was made
        assert [received.path for received in tool.received] == ["/v1/weather?city=Paris"]
    assert result.returncode == 1
    assert result.stdout == 'tool {"ok": true, "path": "/v1/weather?city=Paris"}\n'
    lines = result.stderr.splitlines()
    assert "replay mismatch at call 0, field body.messages[0].content:" in lines[-3]
    assert lines[-2] == "recorded 'hello', incoming 'new'"
    assert lines[-1] == (
        f"openprogram: 1 connection was not model traffic and went live: 127.0.0.1:{tool.port} "
        "— list a model host in record_replay.model_hosts, or use exec for a hermetic run"
    )


def test_a_swallowed_refusal_is_said_at_exit_and_the_exit_status_is_1(front: Front) -> None:
    front.record_the_agent()
    front.openprogram("recordings", "replay", "agent")
    swallowed = front.python(
        """
        import os, openai
        results = open("results.txt", "w")  # never closed: the end of the process flushes it
        results.write("written before the refusal\\n")
        client = openai.OpenAI(base_url=os.environ["AGENT_URL"] + "/v1")
        try:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "other"}])
        except BaseException as error:
            print("swallowed", type(error).__name__)
        """
    )
    assert swallowed.returncode == 1
    assert swallowed.stdout == "swallowed RecordReplayEscape\n"
    assert (front.folder / "results.txt").read_text() == "written before the refusal\n"
    assert swallowed.stderr.splitlines() == [
        "openprogram: replay mismatch at call 0, field body.messages[0].content:",
        "recorded 'hello', incoming 'other'",
    ]


@pytest.mark.parametrize("mode", ["replay", "record"])
def test_pip_and_a_python_http_server_behave_as_without_openprogram(
    front: Front, mode: str
) -> None:
    front.record_the_agent()
    if mode == "replay":
        front.openprogram("recordings", "replay", "agent")

    def pip_version(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pip", "--version"],
            env=front.environment(**extra),
            capture_output=True,
            text=True,
            timeout=120,
        )

    under_mode, without = pip_version(), pip_version(OPENPROGRAM_RECORD_REPLAY__MODE="off")
    assert (under_mode.returncode, under_mode.stdout, under_mode.stderr) == (
        without.returncode,
        without.stdout,
        without.stderr,
    )

    (front.folder / "page.txt").write_text("served\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=front.folder,
        env=front.environment(PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (…) ..."
        port = int(banner.split(" port ")[1].split()[0])
        fetched = front.python(
            "import sys, urllib.request;"
            "print(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode(), end='')",
            f"http://127.0.0.1:{port}/page.txt",
            OPENPROGRAM_RECORD_REPLAY__MODE="off",
        )
        assert (fetched.returncode, fetched.stdout) == (0, "served\n"), fetched.stderr
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    assert '"GET /page.txt HTTP/1.1" 200' in errors
    assert "openprogram" not in errors


def test_a_broken_configuration_refuses_model_calls_only_and_off_recovers(front: Front) -> None:
    front.openprogram("recordings", "record", "agent")
    config = front.home / "config.toml"
    config.write_text(config.read_text() + "\n[record_replay\n")  # a hand edit gone wrong

    with SdkServer() as model, JsonApi() as tool:
        front.url = model.base_url
        blocked = front.python(
            """
            import os, sys, urllib.request, openai
            print(urllib.request.urlopen(sys.argv[1] + "/status", timeout=30).status)
            client = openai.OpenAI(base_url=os.environ["AGENT_URL"] + "/v1")
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}])
            """,
            tool.base_url,
            keys=True,
        )
        assert len(model.received) == 0
        assert len(tool.received) == 1  # other traffic untouched
    assert blocked.returncode == 1
    assert blocked.stdout == "200\n"
    last = blocked.stderr.splitlines()[-1]
    assert last.startswith("openprogram.errors.RecordReplayBlockedError: record/replay is blocked")
    assert f"{config}" in last
    assert "openprogram recordings off" in last

    status = openprogram_process("recordings", "status", env=front.environment())
    assert status.returncode == 1
    assert "not valid TOML" in status.stdout
    front.openprogram("recordings", "off")
    with SdkServer() as model:
        front.url = model.base_url
        live = front.python(OPENAI_AGENT, "hello", keys=True)
        assert live.returncode == 0, live.stderr
        assert len(model.received) == 1


WORKERS = """
import json, os, sys
from multiprocessing import get_context
import openai

def ask(city):
    client = openai.OpenAI(base_url=os.environ["AGENT_URL"] + "/v1")
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"weather in {city}?"}])
    return reply.choices[0].message.content

if __name__ == "__main__":
    with get_context(sys.argv[1]).Pool(4) as pool:
        print(json.dumps(pool.map(ask, ["Paris", "Rome", "Oslo", "Lima"])))
"""


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_multiprocessing_agent_records_one_recording_and_replays_it(
    front: Front, start: str
) -> None:
    agent = front.folder / "workers.py"
    agent.write_text(WORKERS)

    def run(*, keys: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(agent), start],
            cwd=front.folder,
            env=front.environment(keys=keys),
            capture_output=True,
            text=True,
            timeout=120,
        )

    front.openprogram("recordings", "record", "workers")
    with SdkServer() as model:
        front.url = model.base_url
        live = run(keys=True)
        assert live.returncode == 0, live.stderr
        assert len(model.received) == 4
    recording = front.home / "recordings" / "workers.jsonl"
    assert recording.read_text().count('"type":"request"') == 4

    front.openprogram("recordings", "replay", "workers")
    for _ in range(2):  # two runs in a row each replay from the start
        replayed = run(keys=False)
        assert replayed.returncode == 0, replayed.stderr
        assert replayed.stdout == live.stdout
        assert replayed.stderr == ""


@pytest.mark.parametrize("option", ["-I", "-E", "-S"])
def test_isolated_and_no_environment_pythons_start_in_the_mode_and_no_site_skips_it(
    front: Front, option: str
) -> None:
    front.openprogram("recordings", "record", "agent")
    started = front.python(
        "import sys; print('openprogram.activation.startup' in sys.modules)", options=(option,)
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout == ("False\n" if option == "-S" else "True\n")


def test_openprogram_s_own_commands_never_start_in_the_mode(front: Front) -> None:
    front.openprogram("recordings", "record", "agent")

    def imported(*command: str) -> str:
        """What ``python -X importtime COMMAND`` imported (its stderr lists every module)."""
        result = subprocess.run(
            [sys.executable, "-X", "importtime", *command],
            env=front.environment(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result.stderr

    console_script = str(Path(sys.executable).parent / "openprogram")
    assert "openprogram.activation.startup" not in imported(console_script, "--version")
    assert "openprogram.activation.startup" not in imported("-m", "openprogram", "--version")
    assert "openprogram.activation.startup" in imported("-c", "pass")  # any other process


def test_exec_s_plan_comes_before_the_configured_mode(front: Front) -> None:
    front.openprogram("recordings", "record", "configured")
    with SdkServer() as model:
        front.url = model.base_url
        result = openprogram_process(
            "exec", "--record", "by-exec", "--", sys.executable, "-c",
            textwrap.dedent(OPENAI_AGENT), "hello",
            env=front.environment(keys=True),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    recordings = front.home / "recordings"
    assert (recordings / "by-exec.jsonl").read_text().count('"type":"request"') == 1
    assert (recordings / "configured.jsonl").read_text().count('"type":"request"') == 0


ROOT = Path(__file__).resolve().parents[2]


def test_the_project_s_own_suite_passes_under_its_user_s_configured_replay(tmp_path: Path) -> None:
    # The user's own configuration, where openprogram looks by default, replays a recording
    # of one call: the suite's live SDK calls and the processes it starts must not see it.
    user = tmp_path / "user"
    env = {
        **user_environment(user),
        "HOME": str(user),
        "XDG_CONFIG_HOME": str(user / ".config"),
        "XDG_DATA_HOME": str(user / ".local" / "share"),
    }
    del env["OPENPROGRAM_HOME"]
    front = Front(tmp_path)
    front.home = user  # the store is the user's default one (no OPENPROGRAM_HOME)

    def openprogram(*args: str) -> None:
        assert openprogram_process(*args, env=env).returncode == 0

    openprogram("recordings", "record", "mine")
    with SdkServer() as model:
        recorded = subprocess.run(
            [sys.executable, "-c", OPENAI_AGENT, "hello"],
            env={**env, **KEYS, "AGENT_URL": model.base_url},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert recorded.returncode == 0, recorded.stderr
    openprogram("recordings", "replay", "mine")
    status = openprogram_process("recordings", "status", "--json", env=env)
    assert json.loads(status.stdout)["mode"] == "replay"

    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "tests/http_boundary/sdks/test_loopback_server.py", "tests/e2e/test_run_echo.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert suite.returncode == 0, suite.stdout[-3000:] + suite.stderr[-3000:]
    assert " passed" in suite.stdout


def test_a_process_that_makes_no_model_call_never_opens_the_recording(front: Front) -> None:
    front.record_the_agent()
    front.openprogram("recordings", "replay", "agent")
    recording = front.home / "recordings" / "agent.jsonl"
    recording.write_text(recording.read_text() + "{damaged\n")  # replay would refuse it

    quiet = front.python("print('no model call')")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "no model call\n", "")

    refused = front.python(OPENAI_AGENT, "hello")
    assert refused.returncode == 1
    assert "record/replay is blocked" in refused.stderr.splitlines()[-1]
    assert "not valid JSON" in refused.stderr.splitlines()[-1]


def test_a_program_s_own_exit_status_is_kept_when_it_failed_already(front: Front) -> None:
    front.record_the_agent()
    front.openprogram("recordings", "replay", "agent")
    swallowed = front.python(
        """
        import os, sys, openai
        client = openai.OpenAI(base_url=os.environ["AGENT_URL"] + "/v1")
        try:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "other"}])
        except BaseException:
            sys.exit(3)
        """
    )
    assert swallowed.returncode == 3
    assert "replay mismatch at call 0" in swallowed.stderr


def test_under_record_a_connection_to_a_model_host_no_library_captured_is_named(
    front: Front,
) -> None:
    with JsonApi() as gateway:
        front.openprogram("recordings", "record", "agent")
        config = front.home / "config.toml"
        config.write_text(
            config.read_text().replace(
                "[record_replay]", f'[record_replay]\nmodel_hosts = ["127.0.0.1:{gateway.port}"]'
            )
        )
        raw = front.python(  # a socket of its own: what a C extension's client does
            """
            import socket, sys
            with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as connection:
                connection.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
                connection.recv(100)
            """,
            str(gateway.port),
        )
    assert raw.returncode == 0, raw.stderr
    assert raw.stderr == (
        f"openprogram: 1 connection to a model host not recorded: 127.0.0.1:{gateway.port} "
        "(raw socket) — no boundary captures that client library, so a replay cannot answer "
        "it (run the program under `openprogram exec` to see its connections refused under "
        "replay)\n"
    )
