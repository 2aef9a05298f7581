"""The pytest plugin parses ``--openprogram-drift-base-url`` with :mod:`openprogram.drift.origins`
at every start-up: doing so loads no vendor module (their facts are read when first needed)."""

from __future__ import annotations

import os

from tests.support.child_processes import python_process, reported

PROBE = """
import json, sys
from openprogram.drift.origins import parse_base_urls
parse_base_urls([], option="--openprogram-drift-base-url")
before = sorted(m for m in sys.modules if m.startswith("openprogram.vendors"))
vendors = parse_base_urls(["openai=https://127.0.0.2:8080"]).vendors
print("PROBE " + json.dumps({"before": before, "vendors": dict(vendors),
                             "after": "openprogram.vendors" in sys.modules}))
"""


def test_parsing_no_base_url_loads_no_vendor_and_a_vendor_name_loads_them() -> None:
    result = python_process(PROBE, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert reported(result) == {
        "before": [],
        "vendors": {"openai": "https://127.0.0.2:8080"},
        "after": True,
    }
