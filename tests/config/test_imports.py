"""The configuration modules stay cheap to import: `recordings status` imports them."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import openprogram.config
assert "pydantic" not in sys.modules, "openprogram.config must import nothing"
import openprogram.config.settings, openprogram.config.editing
heavy = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"httpx", "httpx_sse", "orjson", "typer", "rich"}
    or name.startswith("openprogram.providers")
)
assert not heavy, heavy
"""


def test_config_imports_no_provider_no_httpx() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
