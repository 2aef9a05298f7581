"""``--openprogram-summary-md``: what a recording or a test's name holds reaches the job's
step summary as text. The Markdown is rendered by GitHub's own renderer (cmark-gfm, its
tables, autolinks and tag filter, raw HTML let through as a step summary's sanitizer lets
some through) and read back: no image, link, HTML element or heading comes from a recorded
value, each table row keeps its three cells, and each cell reads as the text it was given."""

from __future__ import annotations

from html.parser import HTMLParser

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.testing.suite_pages import markdown_code, suite_markdown
from openprogram.testing.suite_summary import SuiteSummary, TestOutcome
from openprogram.visible_text import visible

HOSTILE = [
    "![t](http://127.0.0.2/pixel.png)",
    "[click me](http://127.0.0.2/phish) and [ref][1]\n\n[1]: http://127.0.0.2/",
    "<img src=http://127.0.0.2/x.png> <script>alert(1)</script> <a href=x>a</a>",
    "# a heading\n## another\n---",
    "a | pipe | or two || and \\| an escaped one",
    "``` a fence ``` and `one` and ``two``",
    "`",
    "ends with a backtick `",
    "a backslash at the end \\",
    "http://127.0.0.2/bare www.example.com/autolinked user@example.com",
    "<http://127.0.0.2/angle>",
    "*emphasis* _under_ ~~struck~~ &lt; &amp; &#x27;",
    "nul\x00 esc\x1b[2J \u202eevil.exe\u202c line\u2028break",
    "> a quote\n- a list\n1. item",
]

EXPECTED_TAGS = {"h3", "p", "table", "thead", "tbody", "tr", "th", "td", "code"}
"""Every element the summary's own Markdown makes; anything else came from a recorded value."""


class Rendered(HTMLParser):
    """The elements of a rendered page, and each table row's cells as their text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def rendered(markdown: str) -> Rendered:
    """The Markdown as GitHub renders it, raw HTML let through (a step summary's sanitizer
    keeps images and links: the Markdown itself must make none)."""
    return Rendered(
        cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    )


def as_text(text: str) -> str:
    """What the summary should show for ``text``: one line, control characters as escapes,
    clipped past 160 characters."""
    flat = " ".join(visible(text).split())
    return flat if len(flat) <= 160 else flat[:159] + "…"


def summary_of(payload: str) -> str:
    outcome = TestOutcome(
        f"tests/test_x.py::test_case[{payload}]",
        "tests/recordings/test_x/test_case.jsonl",
        "none",
        "mismatched",
        [0],
        difference=f"replay mismatch at call 0, field x:\nrecorded 'a', incoming '{payload}'",
    )
    return suite_markdown(SuiteSummary([outcome]), page=f"out/{payload}.html")


def test_the_page_named_beneath_reads_as_its_path() -> None:
    page = rendered(summary_of("![t](http://127.0.0.2/x.png) `"))
    last = "".join(page.text).strip().splitlines()[-1]
    assert last == (
        "The whole run, test by test: out/![t](http://127.0.0.2/x.png) `.html (the job's artifact)."
    )


@pytest.mark.parametrize("payload", HOSTILE)
def test_a_hostile_recorded_value_renders_as_text(payload: str) -> None:
    page = rendered(summary_of(payload))
    assert page.tags <= EXPECTED_TAGS, page.tags - EXPECTED_TAGS
    header, row = page.rows
    assert header == ["test", "did", "what to look at"]
    name, kind, look_at = row
    assert name == as_text(f"tests/test_x.py::test_case[{payload}]")
    assert kind == "mismatched"
    assert look_at.startswith("replay mismatch at call 0, field x: recorded 'a', ")


@pytest.mark.parametrize("payload", HOSTILE)
def test_a_code_span_shows_exactly_its_text(payload: str) -> None:
    for in_table in (False, True):
        markdown = markdown_code(payload, in_table=in_table)
        if in_table:
            markdown = f"| a |\n| --- |\n| {markdown} |\n"
        page = rendered(markdown)
        if in_table:
            assert page.tags <= EXPECTED_TAGS
            assert page.rows[-1] == [as_text(payload)]
        else:
            assert page.tags == {"p", "code"}
            assert "".join(page.text).strip() == as_text(payload)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("`|\\*_[]()!<>#&;:/ ax\n\t"), max_size=40))
def test_any_text_of_markdown_s_characters_reads_as_itself(text: str) -> None:
    markdown = f"| a |\n| --- |\n| {markdown_code(text, in_table=True)} |\n"
    page = rendered(markdown)
    assert page.tags <= EXPECTED_TAGS
    assert len(page.rows) == 2
    assert page.rows[1] == [as_text(text)]


def test_a_long_text_is_clipped_inside_its_span() -> None:
    shown = rendered(f"| a |\n| --- |\n| {markdown_code('x' * 500, in_table=True)} |\n").rows[1]
    assert shown == ["x" * 159 + "…"]
