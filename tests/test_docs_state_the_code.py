"""The docs state what the code does: the versions a recording's header carries, and the client
libraries the HTTP boundary captures (under exec, the pytest fixture and
``record_replay()``), wherever the docs list them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openprogram.http_boundary.clients import CLIENT_LIBRARIES
from openprogram.recording.format import RECORDING_FORMAT_VERSION
from openprogram.recording.redaction import REDACTION_VERSION

ROOT = Path(__file__).parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def text(name: str) -> str:
    return (ROOT / name).read_text()


@pytest.mark.parametrize(
    ("constant", "value"),
    [
        ("RECORDING_FORMAT_VERSION", RECORDING_FORMAT_VERSION),
        ("REDACTION_VERSION", REDACTION_VERSION),
    ],
)
def test_the_format_page_names_each_version_the_code_writes(constant: str, value: int) -> None:
    stated = re.findall(rf"`{constant} = (\d+)`", text("docs/recording-format.md"))
    assert stated, f"docs/recording-format.md does not state {constant}"
    assert {int(number) for number in stated} == {value}


@pytest.mark.parametrize(
    ("field", "value"),
    [("format_version", RECORDING_FORMAT_VERSION), ("redaction_version", REDACTION_VERSION)],
)
def test_every_header_the_docs_show_carries_todays_versions(field: str, value: int) -> None:
    shown = [
        (doc.relative_to(ROOT), int(number))
        for doc in DOCS
        for number in re.findall(rf'"{field}": ?(\d+)', doc.read_text())
    ]
    assert shown, f"no example shows {field}"
    assert [where for where, number in shown if number != value] == []


DOC_NAMES = {
    "httpx": ["httpx"],
    "httpx2": ["httpx2"],
    "urllib3.connectionpool": ["urllib3", "requests"],
    "aiohttp.client": ["aiohttp"],
    "http.client": ["http.client", "urllib.request"],
}
"""How the docs name each captured module: the library, or what everyone knows stands on it."""

CAPTURE_LISTS = [
    ("docs/testing.md", "The fixture covers both ways an agent reaches a model"),
    ("docs/testing.md", "- HTTP: every request an httpx or httpx2 client sends"),
    ("docs/testing.md", "| `tests/recordings/<module>/<test>.jsonl` |"),
    ("docs/recording-format.md", "A recording is a [JSON Lines]"),
    ("docs/recording-format.md", "An HTTP call is one request sent through"),
    ("docs/recording-format.md", "The HTTP boundary (`openprogram/http_boundary/`) is active"),
    ("docs/configuration.md", "The configured mode (`record_replay.mode`) covers"),
    ("docs/cli.md", "**The configured mode covers the model traffic of Python processes.**"),
    ("docs/sdks.md", "Most agents call their model through the official"),
    ("docs/architecture.md", "**`http_boundary/`** — record and replay of every request"),
    ("README.md", "An agent written with the official SDKs — or a framework on them"),
    ("README.md", "- [docs/sdks.md](docs/sdks.md) — agents on the official"),
]
"""The paragraphs that say which client libraries are captured (each from its first words
to the next blank line)."""


def paragraph(name: str, start: str) -> str:
    page = text(name)
    assert start in page, f"{name} no longer has the paragraph {start!r}"
    return page[page.index(start) :].split("\n\n")[0]


@pytest.mark.parametrize(("name", "start"), CAPTURE_LISTS)
def test_each_list_of_captured_libraries_names_them_all(name: str, start: str) -> None:
    said = paragraph(name, start)
    for library in CLIENT_LIBRARIES:
        for module in library.module_names:
            names = DOC_NAMES.get(module, [module])
            found = [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", said)]
            assert found, f"{name}: the paragraph {start!r} does not name {module}"
