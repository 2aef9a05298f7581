"""A recording, and two recordings compared, as one self-contained HTML page to review.

:func:`recording_page` shows a session as a conversation: the header's metadata, then each call —
its model or endpoint, the message it added (the earlier context folded), the tools it offered
(folded), the reply put back together (thinking, text, tool calls with their arguments, stop reason,
usage), its error, and the raw exchange one click away — with each tape entry (a tool, the clock, a
random draw) in line where its row stands. :func:`diff_page` shows B's calls aligned with A's as
``recordings diff`` aligns them: calls only in A or only in B marked, and in each paired call the
first difference and every other differing field highlighted, texts word by word.

The page fetches nothing and runs nothing: inline CSS, no script, folding with ``<details>`` (so it
works without JavaScript and prints). A recording is untrusted input: every recorded string is
escaped (a ``<script>`` in a reply is shown, never run; a NUL, an ESC or a bidi override shown as
its escape, ``\\u202e``, as in the terminal), and it was redacted when it was written; a very long
text is clipped, its whole one click away. The page grows linearly with the recording."""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from openprogram.recording.format import RecordedCall, Recording
from openprogram.recording.report import format_report
from openprogram.store.comparison import RecordingComparison
from openprogram.store.show import CallView, RecordingView, TapeView
from openprogram.visible_text import visible
from openprogram.wording import plural

__all__ = ["CLIP", "clipped", "diff_page", "escaped", "page_document", "recording_page"]

CLIP: Final = 2_000
"""Characters of a text shown before it is clipped (the rest one click away)."""

_RAW_CLIP: Final = 20_000
"""Characters of a call's raw rows shown (a stream of thousands of deltas is long)."""

_CSS: Final = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee8;--bg:#fff;--soft:#f5f7fa;--add:#e3f7e8;
--del:#fde8e8;--mark:#fff1b8;--a:#b42318;--b:#067647}
*{box-sizing:border-box}body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:72rem;padding:1.5rem}
h1{font-size:1.35rem;margin:0 0 .25rem}h2{font-size:1.05rem;margin:0}
.meta{color:var(--muted);font-size:.85rem;margin:0 0 1rem}
.meta code{font-size:.8rem}
.call,.tape{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;margin:.75rem 0}
.call header{display:flex;gap:.75rem;align-items:baseline;flex-wrap:wrap}
.tag{font-size:.75rem;border:1px solid var(--line);border-radius:99px;padding:0 .5rem;
color:var(--muted)}.endpoint{color:var(--muted);font-size:.85rem;word-break:break-all}
.msg{margin:.5rem 0;padding:.5rem .75rem;border-radius:6px;background:var(--soft);
white-space:pre-wrap;word-break:break-word}
.msg .who{font-weight:600;font-size:.8rem;color:var(--muted);display:block}
.reply{background:#eef4ff}.thinking{background:#f3f0ff}.error{background:var(--del)}
.tool{font-family:ui-monospace,monospace;font-size:.85rem}
pre{white-space:pre-wrap;word-break:break-word;font-size:.8rem;background:var(--soft);
padding:.5rem;border-radius:6px;margin:.25rem 0}
details>summary{cursor:pointer;color:var(--muted);font-size:.85rem}
.facts{color:var(--muted);font-size:.85rem}
.only-a{border-left:4px solid var(--a)}.only-b{border-left:4px solid var(--b)}
.differs{border-left:4px solid #b54708}
table{border-collapse:collapse;width:100%;font-size:.9rem}
td,th{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}
.kind{font-weight:600}.kind-replayed{color:var(--b)}.kind-mismatched,.kind-failed,
.kind-error,.kind-unconsumed{color:var(--a)}.kind-re-recorded,.kind-recorded{color:#b54708}
.first{background:var(--mark);padding:.5rem .75rem;border-radius:6px;white-space:pre-wrap;
font-family:ui-monospace,monospace;font-size:.85rem}
mark{background:var(--mark)}ins{background:var(--add);text-decoration:none}
del{background:var(--del);margin-right:.25em}
@media print{details::details-content{content-visibility:visible;display:block}}
"""


def recording_page(view: RecordingView, recording: Recording) -> str:
    """The page of one recording (``recordings show --html``)."""
    header = recording.header
    facts = [
        ("recorded", header.get("created_at")),
        ("by openprogram", header.get("openprogram_version")),
        ("redaction version", header.get("redaction_version")),
        ("recording id", header.get("recording_id")),
    ]
    shown = " · ".join(f"{name} {escaped(value)}" for name, value in facts if value is not None)
    calls = {call.call_index: call for call in recording.calls}
    parts = [
        f"<h1>{escaped(view.path.name)}</h1>",
        f'<p class="meta">{escaped(view.path)}<br>{plural(view.total_calls, "call")}, '
        f"{len(view.tapes)} tape {'entry' if len(view.tapes) == 1 else 'entries'} · {shown}<br>"
        f"transcript hash <code>{escaped(view.transcript_hash)}</code></p>",
    ]
    if view.not_recorded:
        hosts = ", ".join(f"{entry.get('host')}:{entry.get('port')}" for entry in view.not_recorded)
        parts.append(f'<p class="msg error">connections no boundary captured: {escaped(hosts)}</p>')
    for item in _in_file_order(view, calls):
        if isinstance(item, TapeView):
            parts.append(_tape(item))
        else:
            parts.append(_call(item, calls.get(item.call_index)))
    return page_document(f"{view.path.name} — openprogram", parts)


def diff_page(
    a: RecordingView,
    b: RecordingView,
    recordings: tuple[Recording, Recording],
    comparison: RecordingComparison,
) -> str:
    """The page of ``a`` and ``b`` compared (``recordings diff --html``): B's calls in order,
    each paired with A's as the comparison aligned them."""
    calls_a = {view.call_index: view for view in a.calls}
    raw_b = {call.call_index: call for call in recordings[1].calls}
    by_b: dict[int, list[str]] = {}
    for difference in comparison.differences:
        if difference.b_call_index is not None and difference.kind != "tape":
            by_b.setdefault(difference.b_call_index, []).append(
                format_report(difference.difference)
            )
    same = "the same" if comparison.same else f"{plural(len(comparison.differences), 'difference')}"
    parts = [
        f"<h1>{escaped(a.path.name)} → {escaped(b.path.name)}</h1>",
        f'<p class="meta">A {escaped(a.path)} · {plural(comparison.calls_a, "call")} · '
        f"<code>{escaped(comparison.hash_a)}</code><br>B {escaped(b.path)} · "
        f"{plural(comparison.calls_b, 'call')} · <code>{escaped(comparison.hash_b)}</code>"
        f"<br>{same}</p>",
    ]
    if comparison.first is not None:
        report = format_report(comparison.first.difference)
        parts.append(f'<p class="first">first difference: {escaped(report)}</p>')
    # B's calls paired with A's: equal requests (their replies may differ), and the unpaired
    # calls whose nearest request on the other side diff compared them with
    pairs = dict(comparison.pairs)
    for difference in comparison.differences:
        if difference.kind == "request":
            a_index, b_index = difference.a_call_index, difference.b_call_index
            if a_index is not None and b_index is not None:
                pairs[b_index] = a_index
    paired_a = set(pairs.values())
    for index in comparison.only_in_a:
        view = calls_a.get(index)
        if view is not None and index not in paired_a:
            parts.append(_call(view, None, note=f"only in A (call {index})", kind="only-a"))
    for view in b.calls:
        index = view.call_index
        pair = pairs.get(index)
        if pair is None:
            parts.append(_call(view, raw_b.get(index), note="only in B", kind="only-b"))
            continue
        reports = by_b.get(index, [])
        parts.append(
            _call(
                view,
                raw_b.get(index),
                note=f"paired with A's call {pair}",
                kind="differs" if reports else "",
                before=calls_a.get(pair),
                reports=reports,
            )
        )
    for difference in comparison.differences:
        if difference.kind == "tape":
            report = format_report(difference.difference)
            parts.append(f'<p class="first">tape: {escaped(report)}</p>')
    return page_document(f"{a.path.name} → {b.path.name} — openprogram", parts)


# --- pieces ----------------------------------------------------------------------------------


def page_document(title: str, parts: Iterable[str]) -> str:
    """A whole page: ``parts`` (HTML, escaped already) under ``title``, with the house's
    inline style and a content security policy that lets nothing load."""
    body = "\n".join(parts)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escaped(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
        "</body></html>\n"
    )


def _in_file_order(
    view: RecordingView, calls: dict[int, RecordedCall]
) -> list[CallView | TapeView]:
    """Calls and tape entries in the order their rows stand in the file."""
    items: list[tuple[int, int, CallView | TapeView]] = []
    for position, call_view in enumerate(view.calls):
        recorded = calls.get(call_view.call_index)
        items.append((recorded.line if recorded is not None else 0, position, call_view))
    for position, tape in enumerate(view.tapes):
        items.append((tape.line, len(view.calls) + position, tape))
    return [item for _, _, item in sorted(items, key=lambda entry: (entry[0], entry[1]))]


def _call(
    view: CallView,
    raw: RecordedCall | None,
    *,
    note: str | None = None,
    kind: str = "",
    before: CallView | None = None,
    reports: Sequence[str] = (),
) -> str:
    boundary = "HTTP" if view.boundary == "http" else "provider"
    head = [
        f'<section class="call {kind}" id="call-{view.call_index}"><header>',
        f"<h2>call {view.call_index} · {escaped(view.model)}</h2>",
        f'<span class="tag">{boundary}</span>',
    ]
    if view.http is not None:
        exchange = view.http
        status = "no response" if exchange.status is None else str(exchange.status)
        api = f"{exchange.api} · " if exchange.api else ""
        head.append(
            f'<span class="endpoint">{escaped(api)}{escaped(exchange.method)} '
            f"{escaped(exchange.url)} → {escaped(status)}</span>"
        )
    if note:
        head.append(f'<span class="tag">{escaped(note)}</span>')
    head.append("</header>")
    parts = head + [f'<p class="first">{escaped(report)}</p>' for report in reports]
    if raw is not None:
        parts.append(_earlier_context(raw))
        parts.append(_tools(raw))
    parts.append(
        _message(
            view.input_role or "input",
            view.input_text,
            "",
            None if before is None else before.input_text,
        )
    )
    if view.thinking_text:
        parts.append(
            "<details><summary>thinking</summary>"
            + _message("thinking", view.thinking_text, "thinking")
            + "</details>"
        )
    if view.reply_text or not view.tool_calls:
        parts.append(
            _message(
                "reply", view.reply_text, "reply", None if before is None else before.reply_text
            )
        )
    for name, arguments in view.tool_calls:
        shown = arguments if isinstance(arguments, str) else _json(arguments)
        parts.append(
            f'<div class="msg tool"><span class="who">tool call {escaped(name)}</span>'
            f"{clipped(shown)}</div>"
        )
    if before is not None and before.tool_calls != view.tool_calls:
        called = "; ".join(
            f"{name} {arguments if isinstance(arguments, str) else _json(arguments, 0)}"
            for name, arguments in before.tool_calls
        )
        parts.append(
            f'<p class="facts"><mark>A called: {escaped(_clip_text(called or "no tool", 400))}'
            "</mark></p>"
        )
    if view.error:
        parts.append(
            f'<div class="msg error"><span class="who">error</span>{escaped(view.error)}</div>'
        )
    facts = []
    if view.stop_reason is not None:
        stop = escaped(view.stop_reason)
        if before is not None and before.stop_reason != view.stop_reason:
            stop = f"<mark>{stop}</mark> (A: {escaped(before.stop_reason)})"
        facts.append(f"stop reason {stop}")
    tokens = view.tokens
    if tokens is not None:
        facts.append(f"tokens {tokens[0]} in, {tokens[1]} out")
    facts.append(f"outcome {escaped(view.outcome or 'cut short')}")
    facts.append(plural(view.event_count, "event"))
    parts.append(f'<p class="facts">{" · ".join(facts)}</p>')
    if raw is not None:
        parts.append(_raw(raw))
    parts.append("</section>")
    return "\n".join(parts)


def _message(role: str, text: str, kind: str, before: str | None = None) -> str:
    if before is not None and before != text:
        shown = _word_diff(before, text)
    else:
        shown = clipped(text) if text else '<span class="facts">(empty)</span>'
    return f'<div class="msg {kind}"><span class="who">{escaped(role)}</span>{shown}</div>'


def _earlier_context(call: RecordedCall) -> str:
    """The messages before the last one the request carried, folded."""
    messages = _messages(call)
    if len(messages) <= 1:
        return ""
    shown = "".join(
        f'<div class="msg"><span class="who">{escaped(role)}</span>{clipped(text)}</div>'
        for role, text in messages[:-1]
    )
    return (
        f"<details><summary>earlier context ({plural(len(messages) - 1, 'message')})"
        f"</summary>{shown}</details>"
    )


def _messages(call: RecordedCall) -> list[tuple[str, str]]:
    request = call.request
    if call.boundary == "provider":
        context = request.get("context")
        found = context.get("messages") if isinstance(context, dict) else None
    else:
        body = request.get("body")
        found = None
        if isinstance(body, dict):
            found = next(
                (
                    body[key]
                    for key in ("messages", "input", "contents")
                    if isinstance(body.get(key), list)
                ),
                None,
            )
    messages = []
    for message in found or []:
        if isinstance(message, dict):
            role = str(message.get("role", message.get("type", "?")))
            content = message.get("content", message.get("parts", message))
            messages.append((role, content if isinstance(content, str) else _json(content)))
    return messages


def _tools(call: RecordedCall) -> str:
    request = call.request
    if call.boundary == "provider":
        context = request.get("context")
        tools = context.get("tools") if isinstance(context, dict) else None
    else:
        body = request.get("body")
        tools = body.get("tools") if isinstance(body, dict) else None
        if tools is None and isinstance(body, dict) and isinstance(body.get("toolConfig"), dict):
            tools = body["toolConfig"].get("tools")
    if not isinstance(tools, list) or not tools:
        return ""
    return (
        f"<details><summary>tools offered ({len(tools)})</summary>"
        f"<pre>{escaped(_clip_text(_json(tools), _RAW_CLIP))}</pre></details>"
    )


def _raw(call: RecordedCall) -> str:
    rows = _json({"request": call.request, "events": call.event_rows, "outcome": call.outcome})
    return (
        "<details><summary>raw exchange</summary>"
        f"<pre>{escaped(_clip_text(rows, _RAW_CLIP))}</pre></details>"
    )


def _tape(entry: TapeView) -> str:
    outcome = f"raised {entry.error}" if entry.error else _json(entry.result)
    kind = "tool" if entry.tool else "tape"
    return (
        f'<section class="tape" id="tape-{escaped(entry.label)}"><span class="tag">{kind}</span> '
        f"<strong>{escaped(entry.label)}</strong> "
        f'<span class="facts">{escaped(_clip_text(_json(entry.args), 400))}</span>'
        f'<div class="msg">{clipped(outcome)}</div></section>'
    )


_WORDS = re.compile(r"\s*\S+\s*|\s+")
"""A word with the white space around it: a sentence rewritten is one run replaced, read as
the old words struck through, then the new ones."""


def _word_diff(before: str, after: str) -> str:
    """``after`` with the words it changed from ``before`` marked: ``<del>`` removed,
    ``<ins>`` added (both clipped like any text)."""
    old, new = _WORDS.findall(before[: CLIP * 4]), _WORDS.findall(after[: CLIP * 4])
    parts: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(escaped("".join(new[j1:j2])))
            continue
        if i2 > i1:
            parts.append(f"<del>{escaped(''.join(old[i1:i2]))}</del>")
        if j2 > j1:
            parts.append(f"<ins>{escaped(''.join(new[j1:j2]))}</ins>")
    return "".join(parts)


def clipped(text: str) -> str:
    """``text`` escaped; past :data:`CLIP` characters, cut, the whole one click away."""
    if len(text) <= CLIP:
        return escaped(text)
    return (
        f"{escaped(text[:CLIP])}…<details><summary>all {len(text):,} characters</summary>"
        f"{escaped(text)}</details>"
    )


def _clip_text(text: str, limit: int) -> str:
    return (
        text if len(text) <= limit else f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"
    )


def _json(value: Any, option: int = orjson.OPT_INDENT_2) -> str:
    try:
        return orjson.dumps(value, option=option).decode()
    except TypeError:
        return repr(value)


def escaped(value: object) -> str:
    """A recorded value as HTML text: every character that means something escaped, and
    every character a browser would act on instead of showing (NUL, ESC, a bidi override)
    written as its escape, ``\\x1b``, ``\\u202e``, as the terminal shows it
    (:func:`~openprogram.visible_text.visible`)."""
    return html.escape(visible(str(value)), quote=True)
