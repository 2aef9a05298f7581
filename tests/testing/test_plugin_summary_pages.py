"""``--openprogram-html`` and ``--openprogram-summary-md``: the suite summary as a page to
review and as Markdown for a CI job — each test's outcome, the first difference of a
mismatched or re-recorded one, recorded strings escaped, under pytest-xdist too."""

from __future__ import annotations

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from tests.support.inner_project import InnerProject

pytest_plugins = ["pytester"]

CMARK_OPT_UNSAFE = Options.CMARK_OPT_UNSAFE

SUITE = """
import os

WORD = os.environ.get("WORD", "steady")


async def test_replays(openprogram_recording):
    assert await ask("steady") == "echo:steady"


async def test_changes(openprogram_recording):
    assert await ask(WORD) == "echo:" + WORD
"""


def test_the_run_as_a_page_and_as_markdown(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_tests(SUITE)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("WORD", "<script>window.pwned=1</script>")
    result = project.run(
        "-n", "2", "--openprogram-html=out/run.html", "--openprogram-summary-md=out/run.md"
    )
    result.assert_outcomes(passed=1, failed=1)
    page = (project.root / "out" / "run.html").read_text()
    assert "<script" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
    assert page.index("test_changes") < page.index("test_replays"), "what failed comes first"
    assert 'class="kind kind-mismatched"' in page
    assert "replay mismatch at call 0, field context.messages[0].content" in page
    markdown = (project.root / "out" / "run.md").read_text()
    assert markdown.splitlines()[:3] == [
        "### openprogram recordings",
        "",
        "2 tests: 1 replayed, 1 mismatched · 1 call replayed, 0 calls recorded · "
        "5 tokens replayed instead of spent",
    ]
    row = next(line for line in markdown.splitlines() if "test_changes" in line)
    assert row.startswith(
        "| ` tests/test_agent.py::test_changes ` | mismatched | ` replay mismatch"
    )
    shown = cmarkgfm.github_flavored_markdown_to_html(markdown, options=CMARK_OPT_UNSAFE)
    assert "<script" not in shown  # GitHub's renderer shows it as text, in a code span
    assert "<code>replay mismatch at call 0" in shown
    assert markdown.endswith(
        "The whole run, test by test: ` out/run.html ` (the job's artifact).\n"
    )
    result.stdout.fnmatch_lines(["openprogram: wrote the summary to */out/run.html"])

    # Re-recorded: the page names the first difference from the recording it replaced.
    monkeypatch.setenv("WORD", "changed")
    project.run("--openprogram-record-mode=all", "--openprogram-html=out/again.html")
    again = (project.root / "out" / "again.html").read_text()
    assert "first difference from the recording it replaced" in again
    assert 'class="kind kind-re-recorded"' in again


def test_every_difference_of_a_re_recording_is_one_click_away() -> None:
    from openprogram.testing.suite_pages import suite_page
    from openprogram.testing.suite_summary import SuiteSummary, TestOutcome

    reports = [f"difference at call {index}, field x:\nold 'a', new '<b>'" for index in range(3)]
    outcome = TestOutcome(
        "tests/test_a.py::test_x",
        "tests/recordings/test_a/test_x.jsonl",
        "all",
        "re-recorded",
        recorded_calls=3,
        difference=reports[0],
        differences=reports,
    )
    page = suite_page(SuiteSummary([outcome]))
    assert "all 3 differences from the recording it replaced" in page
    assert page.count("old &#x27;a&#x27;, new &#x27;&lt;b&gt;&#x27;") == 4  # the first, then all
    assert TestOutcome.from_json(outcome.to_json()) == outcome
