"""The examples in docs/testing.md run as documented: recorded once, then replayed (the
order agent: its tool served from the recording, its order numbers redacted)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.inner_project import InnerProject, literal

pytest_plugins = ["pytester"]

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
EXAMPLE = re.compile(
    r"<!-- example-test: weather-agent -->\s*```python\n(?P<code>.*?)```", re.DOTALL
)
DRIFT_OUTPUT = re.compile(r"was changed to say \"rainy\":\s*```text\n(?P<output>.*?)```", re.DOTALL)
# A project with pytest-asyncio in its default (strict) mode, as a user's would be.
STRICT_INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
RECORDINGS = {"test_agent_answers_with_the_tool.jsonl", "test_agent_answers_directly.jsonl"}


def documented(pattern: re.Pattern[str], group: str) -> str:
    match = pattern.search(DOCUMENT.read_text())
    assert match is not None, f"docs/testing.md lost its {group}"
    return match[group]


def write_example(project: InnerProject, code: str) -> None:
    (project.root / "pytest.ini").write_text(STRICT_INI)
    project.write("test_agent.py", code)


def test_the_documented_example_records_once_then_replays(project: InnerProject) -> None:
    write_example(project, documented(EXAMPLE, "code"))

    missing = project.run(subprocess=True)
    missing.assert_outcomes(errors=2)
    missing.stdout.fnmatch_lines(
        ["*record it with `pytest --openprogram-record-mode=once tests/test_agent.py::*`*"]
    )

    project.run("--openprogram-record-mode=once", subprocess=True).assert_outcomes(passed=2)
    folder = project.root / "tests" / "recordings" / "test_agent"
    assert {path.name for path in folder.iterdir()} == RECORDINGS
    for name in RECORDINGS:
        assert f"── {name}" in DOCUMENT.read_text()

    project.run(subprocess=True).assert_outcomes(passed=2)


def test_the_documented_drift_report_is_what_pytest_prints(project: InnerProject) -> None:
    code = documented(EXAMPLE, "code")
    write_example(project, code)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)

    write_example(project, code.replace('f"sunny in {city}"', 'f"rainy in {city}"'))
    result = project.run()
    result.assert_outcomes(passed=1, failed=1)
    expected = documented(DRIFT_OUTPUT, "output").splitlines()
    assert len(expected) == 3
    result.stdout.fnmatch_lines([f"E *{literal(line)}" for line in expected], consecutive=True)


ORDER_EXAMPLE = re.compile(
    r"<!-- example-test: order-agent -->\s*```python\n(?P<code>.*?)```", re.DOTALL
)
CHECK_OUTPUT = re.compile(
    r"the order service answering differently:\s*```text\n(?P<output>.*?)```", re.DOTALL
)


def test_the_documented_order_agent_replays_its_tool_and_records_no_order_number(
    project: InnerProject,
) -> None:
    code = documented(ORDER_EXAMPLE, "code")
    (project.root / "pytest.ini").write_text(STRICT_INI)
    project.write("test_orders.py", code)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    recording = project.recording("test_orders", "test_agent_reports_where_the_order_is")
    text = recording.read_text()
    assert "ORD-123456" not in text
    assert '"redaction_fingerprint":"sha256:' in text

    live = 'return f"{order} left the warehouse"'
    project.write("test_orders.py", code.replace(live, 'raise RuntimeError("service down")'))
    project.run().assert_outcomes(passed=1)  # replay: the tool does not run

    checked = code.replace(live, 'return f"{order} is delayed"').replace(
        '"order_status": "replay"', '"order_status": "check"'
    )
    project.write("test_orders.py", checked)
    result = project.run()
    result.assert_outcomes(failed=1)
    expected = documented(CHECK_OUTPUT, "output").splitlines()
    assert len(expected) == 2
    result.stdout.fnmatch_lines([f"*{literal(line)}" for line in expected], consecutive=True)
