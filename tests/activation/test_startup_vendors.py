"""A process of the configured mode loads the vendor modules with its first model request,
not as it starts: the model layer, the HTTP boundary's codec and the placeholder keys read the
vendors' facts when first asked."""

from __future__ import annotations

import os

from tests.support.child_processes import python_process, reported

PROBE = """
import json, sys
import openprogram.activation.startup, openprogram.activation.placeholder_keys
import openprogram.http_boundary.codec as codec
started = sorted(m for m in sys.modules if m.startswith("openprogram.vendors"))
sections = codec.request_sections(
    "POST", "https://api.example.com/v1/messages",
    [("anthropic-version", "2023-06-01"), ("x-amz-date", "20260101T000000Z"), ("x", "1")], b"")
print("PROBE " + json.dumps({"started": started, "headers": sections.get("headers")}))
"""


def test_a_configured_process_starts_without_the_vendor_modules() -> None:
    result = python_process(PROBE, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert reported(result) == {"started": [], "headers": {"anthropic-version": "2023-06-01"}}
