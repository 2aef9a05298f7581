"""Startup: the store library imports no provider, no httpx and no pydantic event/type model;
``show``, which checks events as replay does, imports the event models and nothing heavier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.tool_sessions import record_tool_session

FOR_SHOW_ONLY = ("openprogram.providers.events", "openprogram.providers.types")
FORBIDDEN = (
    "httpx",
    "openprogram.providers.builtins",
    "openprogram.provider_boundary.recorder",
    "openprogram.provider_boundary.replay",
    "openprogram.providers.runtime",
)

SCRIPT = """
import json, sys
from pathlib import Path

from openprogram.store import names, show, store, summary, summary_cache
from openprogram.store.show import call_views
from openprogram.store.store import create_recording, delete_recording, prune_recordings
from openprogram.store.summary import summarize_recording
from openprogram.store.summary_cache import summarize_store

folder, echo = Path(sys.argv[1]), Path(sys.argv[2])
forbidden, for_show_only = json.loads(sys.argv[3]), json.loads(sys.argv[4])

def imported(names):
    return [name for name in names if any(
        module == name or module.startswith(name + ".") for module in sys.modules)]

create_recording(folder, "fresh")
listed = [s.to_json() for s in summarize_store(folder)]
summarize_store(folder)
one = summarize_recording(echo).to_json()
prune_recordings(folder, keep=10, dry_run=True)
delete_recording(folder, "fresh", active=None)
before_show = imported(forbidden + for_show_only)
views = [v.to_json() for v in call_views(echo)]
print(json.dumps({"forbidden": before_show + imported(forbidden), "listed": len(listed),
                  "calls": one["calls"], "views": len(views)}))
"""


async def test_list_show_and_summary_import_nothing_heavy(tmp_path: Path) -> None:
    store = tmp_path / "store"
    echo = store / "echo.jsonl"
    await record_tool_session(echo)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(store),
            str(echo),
            json.dumps(FORBIDDEN),
            json.dumps(FOR_SHOW_ONLY),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {"forbidden": [], "listed": 2, "calls": 2, "views": 2}
