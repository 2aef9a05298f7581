"""gRPC is named: a grpcio channel (its C core opens the connection, below Python's
``socket``, where the in-process guard cannot see) under ``pytest --openprogram-isolate``,
inside a ``record_replay()`` block and under the fixture, in the test's own process and in a
child. The live echo server is outside the run, in this process; it counts every call.

Under replay it gets no call and the run fails naming ``127.0.0.1:PORT``, although the
test passed and the HTTP call beside it was served from the recording; under record (not
bridged: only the vendors' APIs and the allowed hosts are) it is stopped and named the same
way. A channel to an allowed ``host:port`` works (``test_pytest_isolate``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.isolation.isolated_runs import run_pytest, said
from tests.isolation.live import GrpcEchoServer, HitServer, grpc_unary, python_argv, urllib_get

pytestmark = pytest.mark.needs_namespaces

BLOCK_TEST = """\
import contextlib, io, subprocess
import openprogram

GRPC = {grpc!r}
CHILD = {child!r}
HTTP = {http!r}


def _run(source):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "client", "exec"), {{}})
    return out.getvalue()


def test_grpc_beside_http_in_a_replay_block(tmp_path):
    path = tmp_path / "agent.jsonl"
    with openprogram.record_replay(path, mode="record"):
        assert "reached: hit" in _run(HTTP)  # the upstream is bridged: a recording mode
    with openprogram.record_replay(path, mode="replay"):
        assert "reached: hit" in _run(HTTP)  # served from the recording
        print("in process:", _run(GRPC))
        print("child:", subprocess.run(CHILD, capture_output=True, text=True).stdout)
"""

FIXTURE_TEST = """\
import contextlib, io, subprocess

GRPC = {grpc!r}
CHILD = {child!r}
HTTP = {http!r}


def _run(source):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "client", "exec"), {{}})
    return out.getvalue()


def test_grpc_beside_http(openprogram_recording):
    assert "reached: hit" in _run(HTTP)
    print("in process:", _run(GRPC))
    print("child:", subprocess.run(CHILD, capture_output=True, text=True).stdout)
"""


def _write(folder: Path, template: str, http: HitServer, grpc: GrpcEchoServer) -> None:
    source = grpc_unary(grpc.target)
    text = template.format(
        grpc=source, child=python_argv(source), http=urllib_get(f"{http.url.rsplit('/', 1)[0]}/v1")
    )
    (folder / "test_agent.py").write_text(text)


def _stopped_names(done_stderr: str, port: int) -> bool:
    report = done_stderr.partition("stopped by the test session's network namespace")[2]
    return f"127.0.0.1:{port} (TCP, refused in the isolated namespace)" in report


def test_a_grpc_call_in_a_replay_block_gets_nothing_and_is_named(
    hit_server: HitServer, grpc_echo: GrpcEchoServer, tmp_path: Path
) -> None:
    _write(tmp_path, BLOCK_TEST, hit_server, grpc_echo)
    environ = {"OPENAI_BASE_URL": f"http://127.0.0.1:{hit_server.port}/v1"}
    done = run_pytest(
        tmp_path, "--openprogram-isolate", "--openprogram-record-mode=all", env=environ
    )
    assert grpc_echo.hits == 0, said(done)
    assert hit_server.hits == 1, said(done)  # recorded once, then replayed
    assert "1 passed" in done.stdout, said(done)
    assert done.returncode == 1, said(done)
    assert _stopped_names(done.stderr, grpc_echo.port), said(done)


def test_a_grpc_call_under_the_fixture_gets_nothing_and_is_named_in_record_and_replay(
    hit_server: HitServer, grpc_echo: GrpcEchoServer, tmp_path: Path
) -> None:
    _write(tmp_path, FIXTURE_TEST, hit_server, grpc_echo)
    environ = {"OPENAI_BASE_URL": f"http://127.0.0.1:{hit_server.port}/v1"}
    recorded = run_pytest(
        tmp_path, "--openprogram-isolate", "--openprogram-record-mode=once", env=environ
    )
    assert (grpc_echo.hits, hit_server.hits) == (0, 1), said(recorded)
    assert "1 passed" in recorded.stdout, said(recorded)
    assert recorded.returncode == 1, said(recorded)
    assert _stopped_names(recorded.stderr, grpc_echo.port), said(recorded)

    replayed = run_pytest(tmp_path, "--openprogram-isolate", env=environ)
    assert (grpc_echo.hits, hit_server.hits) == (0, 1), said(replayed)
    assert "1 passed" in replayed.stdout, said(replayed)
    assert replayed.returncode == 1, said(replayed)
    assert _stopped_names(replayed.stderr, grpc_echo.port), said(replayed)
