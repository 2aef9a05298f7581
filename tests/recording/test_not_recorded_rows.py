"""The ``not_recorded`` row: a recorded session's connections that no boundary captured are
kept in the recording, read back, kept by rewrites, and named by ``status`` and ``show``."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import openprogram
from openprogram.errors import RecordingFileError
from openprogram.recording.reader import read_recording
from openprogram.recording.rewriting import rewrite_recording
from tests.support.cli_runner import run
from tests.support.recording_rows import call_rows, header, write_rows

NOTE = "connection of the recorded session not recorded: 127.0.0.1:{port} (raw socket)"


def listening_port() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server, server.getsockname()[1]


def test_record_replay_writes_the_connections_it_did_not_capture_into_the_recording(
    tmp_path: Path,
) -> None:
    path = tmp_path / "missed.jsonl"
    server, port = listening_port()
    with server, openprogram.record_replay(path, mode="record"):
        socket.create_connection(("127.0.0.1", port)).close()
        socket.create_connection(("127.0.0.1", port)).close()  # the same host and port: once
    recording = read_recording(path)
    assert recording.not_recorded == [{"host": "127.0.0.1", "port": port, "library": "raw socket"}]
    assert "not_recorded" in recording.header["features"]

    shown = run("show", str(path))
    assert shown.exit_code == 0, shown.stderr
    assert f"1 {NOTE.format(port=port)}" in " ".join(shown.stderr.split())
    assert run("show", str(path), "--json").stdout.count('"library": "raw socket"') == 1


def test_a_session_that_captured_everything_writes_no_row(tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    with openprogram.record_replay(path, mode="record"):
        pass
    assert b'not_recorded",' not in path.read_bytes().split(b"\n", 1)[1]
    assert read_recording(path).not_recorded == []


def test_status_names_them_for_the_configured_recording(tmp_path: Path) -> None:
    path = tmp_path / "configured.jsonl"
    server, port = listening_port()
    with server, openprogram.record_replay(path, mode="record"):
        socket.create_connection(("127.0.0.1", port)).close()
    assert run("replay", str(path)).exit_code == 0
    result = run("status")
    assert result.exit_code == 0, result.stdout
    assert f"note: 1 {NOTE.format(port=port)}" in " ".join(result.stdout.split())


def test_rows_add_up_and_a_rewrite_keeps_them(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "two.jsonl",
        [
            header("two"),
            *call_rows(0),
            {
                "type": "not_recorded",
                "connections": [{"host": "10.0.0.5", "port": 5432, "library": "raw socket"}],
            },
            {
                "type": "not_recorded",
                "connections": [
                    {"host": "10.0.0.5", "port": 5432, "library": "raw socket"},
                    {"host": "192.0.2.1", "port": 443, "library": "urllib3", "name": "api.x"},
                ],
            },
        ],
    )
    recording = read_recording(path)
    assert [entry["port"] for entry in recording.not_recorded] == [5432, 443]
    rewrite_recording(path, recording.header, recording.calls, not_recorded=recording.not_recorded)
    assert read_recording(path).not_recorded == recording.not_recorded
    result = run("show", str(path))
    assert "api.x (192.0.2.1):443 (urllib3)" in result.stderr


@pytest.mark.parametrize(
    ("connections", "problem"),
    [
        ("127.0.0.1:9", "not_recorded connections must be a list"),
        ([{"port": 9, "library": "x"}], "not_recorded connections[0].host must be"),
        ([{"host": "h", "port": 70000, "library": "x"}], "connections[0].port must be a port"),
        ([{"host": "h", "port": 9}], "not_recorded connections[0].library must be a string"),
    ],
)
def test_a_damaged_row_is_refused_naming_the_line(
    tmp_path: Path, connections: object, problem: str
) -> None:
    path = write_rows(
        tmp_path / "bad.jsonl",
        [header("bad"), {"type": "not_recorded", "connections": connections}],
    )
    with pytest.raises(RecordingFileError) as refused:
        read_recording(path)
    assert problem in str(refused.value)
    assert ":2" in str(refused.value) or "line 2" in str(refused.value)
