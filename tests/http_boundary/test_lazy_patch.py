"""The capture patches httpx and httpx2 lazily, in whatever order a program imports them —
before or after the boundary is activated, with ``httpx2.alias_httpx()`` or without — and
every request is recorded exactly once. Each order runs in a fresh interpreter, since the
import order is what is tested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ACTIVATE = """
import sys
from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary
from openprogram.recording.writer import writer_for
activate_http_boundary(HttpBoundary("record", writer=writer_for(sys.argv[1])))
"""

SEND = """
def send(module):
    class Network(module.BaseTransport):
        def handle_request(self, request):
            return module.Response(200, json={"via": module.__name__})
    with module.Client(transport=Network()) as client:
        client.get("http://model.test/" + module.__name__)
"""

REPORT = """
import json, orjson
from pathlib import Path
requests = [
    row["url"] for row in map(orjson.loads, Path(sys.argv[1]).read_bytes().splitlines())
    if row["type"] == "request"
]
aliased = sys.modules.get("httpx") is sys.modules.get("httpx2")
print(json.dumps({"requests": requests, "httpx_is_httpx2": aliased}))
"""

SCENARIOS = {
    "activated, then httpx2, then httpx": (
        ACTIVATE
        + "assert 'httpx' not in sys.modules and 'httpx2' not in sys.modules\n"
        + "import httpx2\nimport httpx\n"
        + SEND
        + "send(httpx2); send(httpx)\n",
        ["http://model.test/httpx2", "http://model.test/httpx"],
        False,
    ),
    "activated, then httpx, then httpx2": (
        ACTIVATE + "import httpx\nimport httpx2\n" + SEND + "send(httpx); send(httpx2)\n",
        ["http://model.test/httpx", "http://model.test/httpx2"],
        False,
    ),
    "activated, then alias_httpx(), then import httpx": (
        ACTIVATE
        + "import httpx2\nhttpx2.alias_httpx()\nimport httpx\n"
        + SEND
        + "send(httpx); send(httpx2)\n",
        ["http://model.test/httpx2", "http://model.test/httpx2"],
        True,
    ),
    "alias_httpx() and both imported, then activated": (
        "import httpx2\nhttpx2.alias_httpx()\nimport httpx\n" + ACTIVATE + SEND + "send(httpx)\n",
        ["http://model.test/httpx2"],
        True,
    ),
    "both imported, then activated twice": (
        "import httpx, httpx2\n" + ACTIVATE + ACTIVATE + SEND + "send(httpx); send(httpx2)\n",
        ["http://model.test/httpx", "http://model.test/httpx2"],
        False,
    ),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_request_is_recorded_once_whatever_the_import_order(
    scenario: str, tmp_path: Path
) -> None:
    script, expected, aliased = SCENARIOS[scenario]
    path = tmp_path / "r.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", script + REPORT, str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"requests": expected, "httpx_is_httpx2": aliased}


def test_the_patched_library_keeps_its_own_loader_and_nothing_is_imported_early() -> None:
    script = (
        "import sys\n"
        "from openprogram.http_boundary.patching import install_http_capture\n"
        "import openprogram.http_boundary, openprogram.http_boundary.exchange\n"
        "import openprogram.http_boundary.clients.httpx_clients\n"
        "install_http_capture()\n"
        "early = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpx2'))\n"
        "import httpx2\n"
        "import importlib.machinery as machinery\n"
        "print(early, type(httpx2.__loader__).__name__, type(httpx2.__spec__.loader).__name__,"
        " '_openprogram_http_capture' in vars(httpx2.Client))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "SourceFileLoader", "SourceFileLoader", "True"]


def test_the_websockets_client_modules_are_checked_once_imported_after_activation() -> None:
    pytest.importorskip("websockets")
    script = (
        ACTIVATE + "assert 'websockets' not in sys.modules\n"
        "import websockets.sync.client as sync_client, websockets.asyncio.client as async_client\n"
        "print(getattr(sync_client.connect, '_openprogram_websocket_check', False),"
        " '_openprogram_websocket_check' in vars(async_client.connect))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, "/dev/null"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]
