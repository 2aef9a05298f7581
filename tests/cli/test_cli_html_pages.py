"""``recordings show --html`` and ``diff --html``: one self-contained page per recording or
comparison — opened in a real headless Chromium (Debian's, through Playwright) to check its
structure through the DOM, that a recorded ``<script>`` is shown and never run, and that the
page asks for nothing — and the page's size growing linearly with the recording."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.agent.loop import run_agent
from openprogram.agent.tools import tool
from openprogram.providers import ECHO_MODEL
from openprogram.store.html_pages import CLIP
from tests.support.chromium import chromium
from tests.support.cli_runner import run
from tests.support.sdk_server import SdkServer

SCRIPT = "<script>window.pwned = true</script><img src=x onerror='window.pwned=true'>"


@tool
def lookup(q: str) -> str:
    """Look a word up."""
    return f"result-{q} {SCRIPT}"


def agent_session(path: Path, prompt: str) -> None:
    """The echo agent loop with a tool on its tape, recorded into ``path``."""
    with openprogram.record_replay(path, mode="record", tools={"lookup": "replay"}):
        asyncio.run(run_agent(ECHO_MODEL, prompt, tools=[lookup]))


def sdk_session(path: Path) -> None:
    """OpenAI chat with a tool, a Responses stream and an Anthropic stream, recorded."""
    import anthropic
    import openai

    weather = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    }
    with SdkServer() as server, openprogram.record_replay(path, mode="record"):
        chat = openai.OpenAI(api_key="sk-test", base_url=server.openai_url, max_retries=0)
        ask = [{"role": "user", "content": f"weather? {SCRIPT}"}]
        chat.chat.completions.create(model="gpt-4o-mini", messages=ask, tools=[weather])
        for _ in chat.responses.create(model="gpt-4o-mini", input="hi", stream=True):
            pass
        claude = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.base_url)
        with claude.messages.stream(model="claude-x", max_tokens=32, messages=ask) as stream:
            stream.until_done()


def apart(record: Any, *args: Any) -> None:
    """``record(*args)`` in a thread of its own: Playwright's sync API keeps an event loop
    running in this one, where ``asyncio.run`` cannot start another."""
    failures: list[BaseException] = []

    def target() -> None:
        try:
            record(*args)
        except BaseException as error:
            failures.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def page_of(*args: str) -> str:
    result = run(*args)
    assert result.exit_code in (0, 1), result.output
    return Path(args[args.index("--html") + 1]).read_text()


def test_a_recorded_script_is_escaped_and_the_page_loads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    agent_session(path, f'/tool lookup {{"q": "x"}} {SCRIPT}')
    page = page_of("show", str(path), "--html", str(tmp_path / "agent.html"))
    assert "<script" not in page.lower()
    assert "onerror=" not in page.replace("onerror=&#x27;", "")  # only as escaped text
    assert "&lt;script&gt;window.pwned = true&lt;/script&gt;" in page
    assert "default-src &#x27;none&#x27;" in page or "default-src 'none'" in page
    assert (tmp_path / "agent.html").stat().st_mode & 0o777 == 0o600


INVISIBLE = "nul\x00 esc\x1b[2J bell\x07 \u202eevil.exe\u202c del\x7f"
"""A NUL, a terminal's clear-screen sequence, a bell, a right-to-left override (which shows
``exe.live`` for ``evil.exe``) and DEL."""
SHOWN = "nul\\x00 esc\\x1b[2J bell\\x07 \\u202eevil.exe\\u202c del\\x7f"


def test_control_characters_are_shown_as_their_escapes(tmp_path: Path) -> None:
    path = tmp_path / "controls.jsonl"
    agent_session(path, INVISIBLE)
    page = page_of("show", str(path), "--html", str(tmp_path / "controls.html"))
    for character in ("\x00", "\x1b", "\x07", "\x7f", "\u202e", "\u202c"):
        assert character not in page
    assert SHOWN in page  # the user's message and the echo's reply
    terminal = run("show", str(path))
    assert SHOWN in terminal.stdout, "as the terminal shows them"


def test_the_page_grows_linearly_with_the_recording(tmp_path: Path) -> None:
    sizes = []
    for turns in (20, 40):
        path = tmp_path / f"{turns}.jsonl"
        with openprogram.record_replay(path, mode="record"):
            for turn in range(turns):
                asyncio.run(openprogram.providers.complete_simple(
                    ECHO_MODEL, openprogram.providers.Context(
                        messages=[openprogram.providers.UserMessage(content=f"turn {turn} " * 20)]
                    ),
                ))  # fmt: skip
        sizes.append(len(page_of("show", str(path), "--html", str(tmp_path / f"{turns}.html"))))
    assert 1.8 < sizes[1] / sizes[0] < 2.2, sizes


def test_a_long_text_is_clipped_with_the_whole_one_click_away(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    agent_session(path, "word " * 1_000)
    page = page_of("show", str(path), "--html", str(tmp_path / "long.html"))
    assert f"<summary>all {5_000:,} characters</summary>" in page
    assert CLIP < 5_000


# --- in a real browser -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Module-scoped: launched before a test's autouse fixture sets HOME to its fake home,
    # while HOME is still the real one — so the browser is given a home of its own.
    with chromium(tmp_path_factory.mktemp("browser")) as launched:
        yield launched


def opened(browser: Any, page_path: Path, screenshot: Path) -> Any:
    """The page at ``page_path`` in a new tab, every request it makes but its own refused
    and listed in ``page.asked``; a screenshot taken."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    asked: list[str] = []

    def refuse(route: Any) -> None:
        if route.request.url != page_path.as_uri():
            asked.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", refuse)
    page.goto(page_path.as_uri())
    page.screenshot(path=str(screenshot), full_page=True)
    page.asked = asked
    return page


def test_a_session_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    sdk, agent = tmp_path / "sdk.jsonl", tmp_path / "agent.jsonl"
    apart(sdk_session, sdk)
    apart(agent_session, agent, '/tool lookup {"q": "x"}')
    for recording, calls, tapes in ((sdk, 3, 0), (agent, 2, 1)):
        html = tmp_path / f"{recording.stem}.html"
        run("show", str(recording), "--html", str(html))
        page = opened(browser, html, tmp_path / f"{recording.stem}.png")
        assert page.locator("section.call").count() == calls
        assert page.locator("section.tape").count() == tapes
        assert page.evaluate("window.pwned === undefined")
        assert page.asked == []
        assert (tmp_path / f"{recording.stem}.png").stat().st_size > 0
    page = opened(browser, tmp_path / "sdk.html", tmp_path / "sdk-again.png")
    chat = page.locator("#call-0")
    assert "openai-completions" in chat.inner_text()
    assert "tool call get_weather" in chat.inner_text()
    assert page.locator("#call-1 .endpoint").inner_text().startswith("openai-responses")
    shown = page.locator("#call-2 .msg").first.inner_text()
    assert "<script>window.pwned = true</script>" in shown, "shown as text, never run"
    folded = page.locator("#call-0 details").first
    assert not folded.evaluate("element => element.open")  # the tools offered, folded
    assert not folded.locator("pre").is_visible()
    page.emulate_media(media="print")
    assert folded.locator("pre").is_visible(), "a printed page shows what is folded"
    page.emulate_media(media="screen")
    page = opened(browser, tmp_path / "agent.html", tmp_path / "agent-again.png")
    assert "lookup[0]" in page.locator("section.tape").inner_text()
    order = page.evaluate("[...document.querySelectorAll('section')].map(section => section.id)")
    assert order == ["call-0", "tape-tool:lookup[0]", "call-1"], "the tape where it happened"


def test_control_characters_read_as_their_escapes_in_chromium(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "controls.jsonl"
    apart(agent_session, path, INVISIBLE)
    html = tmp_path / "controls.html"
    run("show", str(path), "--html", str(html))
    page = opened(browser, html, tmp_path / "controls.png")
    text = page.locator("#call-0").inner_text()
    assert SHOWN in text
    assert "\u202e" not in text
    assert "\x1b" not in text


def test_a_diff_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    apart(agent_session, a, '/tool lookup {"q": "x"}')
    apart(agent_session, b, '/tool lookup {"q": "y"}')
    html = tmp_path / "diff.html"
    result = run("diff", str(a), str(b), "--html", str(html))
    assert result.exit_code == 1
    page = opened(browser, html, tmp_path / "diff.png")
    assert page.locator(".first").first.inner_text().startswith("first difference:")
    differing = page.locator("section.call.differs")
    assert differing.count() == 2
    assert page.locator("section.call.differs del").count() > 0
    assert page.locator("section.call.differs ins").count() > 0
    assert page.locator("#call-0 .tag").last.inner_text() == "paired with A's call 0"
    assert page.asked == []


def test_a_test_run_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    from openprogram.testing.suite_pages import suite_page
    from openprogram.testing.suite_summary import SuiteSummary, TestOutcome

    mismatch = f"replay mismatch at call 1, field x:\nrecorded 'a', incoming '{SCRIPT}'"
    outcomes = [
        TestOutcome("tests/test_a.py::test_fine", "tests/recordings/test_a/test_fine.jsonl",
                    "none", "replayed", replayed_calls=[0, 1]),
        TestOutcome("tests/test_a.py::test_changed", "tests/recordings/test_a/test_changed.jsonl",
                    "none", "mismatched", replayed_calls=[0],
                    difference=mismatch),
    ]  # fmt: skip
    html = tmp_path / "run.html"
    html.write_text(suite_page(SuiteSummary(outcomes)))
    page = opened(browser, html, tmp_path / "run.png")
    rows = page.locator("tbody tr")
    assert rows.count() == 2
    assert "test_changed" in rows.first.inner_text(), "what failed comes first"
    assert page.locator("td.kind-mismatched").inner_text() == "mismatched"
    assert SCRIPT in page.locator("tbody tr .first").inner_text()
    assert page.evaluate("window.pwned === undefined")
    assert page.asked == []
