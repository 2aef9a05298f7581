"""The fixture captures every client library the HTTP boundary knows, as the docs list them:
httpx, httpx2, urllib3 (``requests``), aiohttp and ``http.client`` (``urllib.request``) —
one call each, recorded, then replayed offline without reaching the server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from openprogram.recording import read_recording
from tests.support.inner_project import InnerProject
from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received

pytest_plugins = ["pytester"]

OFFLINE_WHEN_ASKED = """\
import os
import socket

import pytest


@pytest.fixture(autouse=True)
def _offline_when_asked(monkeypatch):
    if os.environ.get("INNER_OFFLINE"):
        def refuse(*args, **kwargs):
            raise OSError("sockets are disabled in this test")

        monkeypatch.setattr(socket.socket, "connect", refuse)
"""

EVERY_LIBRARY = """\
import asyncio
import http.client
import os
import urllib.request
from urllib.parse import urlsplit

import aiohttp
import httpx
import httpx2
import requests
import urllib3

URL = os.environ["AGENT_URL"]


async def with_aiohttp():
    async with aiohttp.ClientSession() as session:
        async with session.post(URL + "/aiohttp", json={}) as response:
            return (await response.json())["path"]


def with_http_client():
    url = urlsplit(URL)
    connection = http.client.HTTPConnection(url.hostname, url.port)
    connection.request("POST", "/http.client", body=b"{}")
    try:
        return connection.getresponse().read().decode()
    finally:
        connection.close()


def with_urllib():
    with urllib.request.urlopen(URL + "/urllib.request", data=b"{}") as response:
        return response.read().decode()


def with_urllib3():
    with urllib3.PoolManager() as pool:
        return pool.request("POST", URL + "/urllib3", json={}).json()["path"]


def test_every_library(openprogram_recording):
    paths = [
        httpx.post(URL + "/httpx", json={}).json()["path"],
        httpx2.post(URL + "/httpx2", json={}).json()["path"],
        requests.post(URL + "/requests", json={}).json()["path"],
        with_urllib3(),
        with_urllib(),
        with_http_client(),
        asyncio.run(with_aiohttp()),
    ]
    assert paths[:4] + paths[6:] == ["/httpx", "/httpx2", "/requests", "/urllib3", "/aiohttp"]
    assert all('"path"' in body for body in paths[4:6])
"""


class PathServer(LoopbackServer):
    """Answers every POST with its path, as JSON."""

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        body = json.dumps({"path": received.path}).encode()
        http.send_head(200, {"content-type": "application/json", "content-length": str(len(body))})
        http.send_body(body)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[PathServer]:
    with PathServer() as running:
        monkeypatch.setenv("AGENT_URL", running.base_url)
        yield running


def test_each_library_is_recorded_once_and_replayed_offline(
    project: InnerProject, server: PathServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("httpx2")
    project.write("conftest.py", OFFLINE_WHEN_ASKED)
    project.write("test_agent.py", EVERY_LIBRARY)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    paths = ["/httpx", "/httpx2", "/requests", "/urllib3", "/urllib.request", "/http.client"]
    assert [received.path for received in server.received] == [*paths, "/aiohttp"]
    calls = read_recording(project.recording("test_agent", "test_every_library")).calls
    assert [call.request["url"].removeprefix(server.base_url) for call in calls] == [
        *paths,
        "/aiohttp",
    ]
    monkeypatch.setenv("INNER_OFFLINE", "1")
    project.run().assert_outcomes(passed=1)
    assert len(server.received) == 7
