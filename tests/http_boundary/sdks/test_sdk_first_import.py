"""An SDK imported for the first time inside a record block is captured — also when the
import system was restored since the capture was first installed (pytest's in-process runs,
``pytester``, put ``sys.meta_path`` back as it was), which took its import hook away."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.recording.reader import read_recording
from tests.support.child_processes import python_process, user_environment
from tests.support.sdk_server import SdkServer

FIRST_IMPORT_IN_THE_BLOCK = """\
import sys

import openprogram
from openprogram.http_boundary.patching import install_http_capture

path, url, restore = sys.argv[1], sys.argv[2], sys.argv[3] == "restore"
saved = list(sys.meta_path)
install_http_capture()
if restore:
    sys.meta_path[:] = saved
assert "httpx2" not in sys.modules and "openai" not in sys.modules
with openprogram.record_replay(path, mode="record"):
    import openai

    client = openai.OpenAI(api_key="sk-first-import", base_url=url + "/v1", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
"""


@pytest.mark.parametrize("meta_path", ["kept", "restore"])
def test_an_sdk_first_imported_in_the_block_is_recorded(meta_path: str, tmp_path: Path) -> None:
    path = tmp_path / "first.jsonl"
    with SdkServer() as server:
        result = python_process(
            FIRST_IMPORT_IN_THE_BLOCK,
            str(path),
            server.base_url,
            meta_path,
            env=user_environment(tmp_path / "home"),
        )
        answered = len(server.received)

    assert result.returncode == 0, result.stderr
    assert answered == 1
    calls = read_recording(path).calls
    assert [call.boundary for call in calls] == ["http"]
