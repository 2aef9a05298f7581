"""The suite summary as a page to review, and as a few lines of Markdown for a CI job.

``--openprogram-html=PATH`` writes :func:`suite_page`: the totals (tests by what they did
with their recording, calls replayed and recorded, tokens replayed instead of spent), then a
row per test — replayed, recorded, re-recorded, mismatched, unconsumed, live, failed, error,
and in ``drift`` mode its worst drift — with its recording, its calls, and what a reviewer
needs: the first difference of a mismatched or re-recorded test (for a re-recorded one,
between the recording it replaced and the new one), the calls never requested, the drift
lines. It is the review pages' kind of page (:mod:`openprogram.store.html_pages`): one file,
inline CSS, no script, nothing loaded, every string escaped.

``--openprogram-summary-md=PATH`` writes :func:`suite_markdown`: the totals and the tests
that did anything but replay cleanly, short enough for ``$GITHUB_STEP_SUMMARY`` or a pull
request comment, naming the HTML page (an artifact of the job) when one is written. A test's
name, what it recorded and a model's words are not Markdown: each is written as a code span
(:func:`markdown_code`), where nothing is markup — an image or a link to any host, HTML, a
heading, emphasis, a bare URL all read as the text they are — its pipes escaped inside the
table, its control characters as their escapes."""

from __future__ import annotations

import re

from openprogram.store.html_pages import clipped, escaped, page_document
from openprogram.testing.suite_summary import (
    OUTCOME_KINDS,
    SuiteSummary,
    TestOutcome,
    outcome_detail,
)
from openprogram.visible_text import visible
from openprogram.wording import plural, which_calls

__all__ = ["markdown_code", "suite_markdown", "suite_page"]

_SHOWN_IN_MARKDOWN = 30
"""Tests the Markdown summary lists before it says how many more the page holds."""


def suite_page(summary: SuiteSummary) -> str:
    """The page of a test run's summary."""
    counts = summary.counts
    kinds = ", ".join(f"{counts[kind]} {kind}" for kind in OUTCOME_KINDS if counts[kind])
    parts = [
        "<h1>openprogram recordings: the test run</h1>",
        f'<p class="meta">{plural(len(summary.outcomes), "test")}: {escaped(kinds or "none")}'
        f"<br>{plural(summary.calls_replayed, 'call')} replayed, "
        f"{plural(summary.calls_recorded, 'call')} recorded, "
        f"{summary.tokens_replayed:,} tokens replayed instead of spent</p>",
    ]
    drift = summary.drift_totals()
    if drift is not None:
        parts.append(
            f'<p class="meta">drift against the live providers: {drift["tests"]} tests '
            f"checked, {drift['failing_tests']} failing; {drift['calls_sent']} calls sent "
            f"({drift['breaking']} breaking, {drift['additive']} additive, {drift['content']} "
            f"content), {drift['skipped']} skipped</p>"
        )
    rows = ["<table><thead><tr><th>test</th><th>did</th><th>recording</th><th>calls</th>"
            "<th>what to look at</th></tr></thead><tbody>"]  # fmt: skip
    for outcome in sorted(summary.outcomes, key=_order):
        rows.append(_row(outcome))
    rows.append("</tbody></table>")
    parts.append("".join(rows))
    if summary.orphans:
        listed = "".join(f"<li>{escaped(orphan)}</li>" for orphan in summary.orphans)
        parts.append(
            f"<h2>{plural(len(summary.orphans), 'orphaned recording')} (no collected test "
            f"uses them)</h2><ul>{listed}</ul>"
        )
    return page_document("openprogram: the test run", parts)


def suite_markdown(summary: SuiteSummary, page: str | None = None) -> str:
    """A few lines of Markdown: the totals, then each test that did anything but replay
    cleanly (the first few), and where the page is."""
    counts = summary.counts
    kinds = ", ".join(f"{counts[kind]} {kind}" for kind in OUTCOME_KINDS if counts[kind])
    lines = [
        "### openprogram recordings",
        "",
        f"{plural(len(summary.outcomes), 'test')}: {kinds or 'none'} · "
        f"{plural(summary.calls_replayed, 'call')} replayed, "
        f"{plural(summary.calls_recorded, 'call')} recorded · "
        f"{summary.tokens_replayed:,} tokens replayed instead of spent",
    ]
    notable = [outcome for outcome in sorted(summary.outcomes, key=_order) if _notable(outcome)]
    if notable:
        lines += ["", "| test | did | what to look at |", "| --- | --- | --- |"]
        for outcome in notable[:_SHOWN_IN_MARKDOWN]:
            name = markdown_code(outcome.nodeid, in_table=True)
            look_at = markdown_code(_look_at(outcome), in_table=True)
            lines.append(f"| {name} | {_kind(outcome)} | {look_at} |")
        if len(notable) > _SHOWN_IN_MARKDOWN:
            lines.append(f"\n… and {len(notable) - _SHOWN_IN_MARKDOWN} more on the page.")
    if page is not None:
        shown = markdown_code(page)
        lines += ["", f"The whole run, test by test: {shown} (the job's artifact)."]
    return "\n".join(lines) + "\n"


def _order(outcome: TestOutcome) -> tuple[int, str]:
    """Tests to look at first: what failed, then what changed, then what replayed."""
    rank = {"mismatched": 0, "error": 0, "failed": 0, "unconsumed": 1, "re-recorded": 2,
            "recorded": 3, "live": 4, "replayed": 5}  # fmt: skip
    drifted = outcome.drift is not None and outcome.drift.get("failed")
    return (0 if drifted else rank.get(outcome.kind, 5), outcome.nodeid)


def _notable(outcome: TestOutcome) -> bool:
    return (
        outcome.kind != "replayed"
        or bool(outcome.unconsumed_calls or outcome.mismatched_calls)
        or _drift_worst(outcome) not in (None, "unchanged", "content")
    )


def _kind(outcome: TestOutcome) -> str:
    worst = _drift_worst(outcome)
    return outcome.kind if worst is None else f"{outcome.kind}, drift: {worst}"


def _drift_worst(outcome: TestOutcome) -> str | None:
    if outcome.drift is None:
        return None
    counts = outcome.drift.get("counts", {})
    for kind in ("failed", "breaking", "additive", "content"):
        if counts.get(kind):
            return str(kind)
    return "unchanged"


def _look_at(outcome: TestOutcome) -> str:
    """What a reviewer should read of this test, on one line."""
    if outcome.difference:
        return outcome.difference.splitlines()[0] + (
            " " + " ".join(outcome.difference.splitlines()[1:2])
        )
    if outcome.unconsumed_calls:
        return f"{which_calls(outcome.unconsumed_calls)} never requested"
    if outcome.drift is not None:
        lines = [
            drift["path"] + " " + drift["what"]
            for call in outcome.drift.get("calls", [])
            for drift in call.get("drift", [])
            if drift["class"] != "content"
        ]
        if lines:
            return "; ".join(lines[:3])
    return ""


def _row(outcome: TestOutcome) -> str:
    details = []
    if outcome.difference:
        label = (
            "first difference from the recording it replaced"
            if outcome.kind in ("re-recorded",)
            else "first difference"
        )
        details.append(f'<p class="first">{escaped(label)}: {clipped(outcome.difference)}</p>')
    if len(outcome.differences) > 1:
        shown = "".join(f'<p class="first">{clipped(item)}</p>' for item in outcome.differences)
        details.append(
            f"<details><summary>all {len(outcome.differences)} differences from the "
            f"recording it replaced</summary>{shown}</details>"
        )
    if outcome.drift is not None:
        lines = [
            f"{escaped(call.get('call', ''))}: {escaped(drift['class'])}: "
            f"{escaped(drift['path'])} {escaped(drift['what'])}: {escaped(drift['recorded'])} "
            f"→ {escaped(drift['live'])}"
            for call in outcome.drift.get("calls", [])
            for drift in call.get("drift", [])
        ]
        if lines:
            details.append(
                f"<details><summary>{plural(len(lines), 'drifted path')}</summary>"
                f"<pre>{'<br>'.join(lines)}</pre></details>"
            )
    if outcome.not_recorded:
        details.append(
            f'<p class="facts">not recorded: {escaped(", ".join(outcome.not_recorded))}</p>'
        )
    return (
        f"<tr><td><code>{escaped(outcome.nodeid)}</code></td>"
        f'<td class="kind kind-{escaped(outcome.kind)}">{escaped(_kind(outcome))}</td>'
        f"<td>{escaped(outcome.recording)}</td><td>{escaped(outcome_detail(outcome))}</td>"
        f"<td>{''.join(details)}</td></tr>"
    )


_LONGEST_IN_MARKDOWN = 160
"""Characters of a text the Markdown summary shows before it is clipped."""

_BACKTICKS = re.compile("`+")


def markdown_code(text: str, *, in_table: bool = False) -> str:
    """``text`` as a Markdown code span, which GitHub renders as exactly the text it holds:
    on one line (its white space runs made one space), control characters written as their
    escapes (:func:`~openprogram.visible_text.visible`), clipped past 160 characters. The
    fence is one backtick longer than the longest run of backticks in it, and a space pads
    each side (which the renderer takes off again), so no backtick ends it early; ``in_table``
    escapes its pipes, which would otherwise end a table's cell even inside a code span (the
    renderer takes the backslash off). An empty text is nothing."""
    flat = " ".join(visible(text).split())
    if not flat:
        return ""
    if len(flat) > _LONGEST_IN_MARKDOWN:
        flat = flat[: _LONGEST_IN_MARKDOWN - 1] + "…"
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(flat)), default=0))
    if in_table:
        flat = flat.replace("|", "\\|")
    return f"{fence} {flat} {fence}"
