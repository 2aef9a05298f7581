"""The hooks that gather the suite summary, in the process that prints it.

Each test's :class:`~openprogram.testing.suite_summary.TestOutcome` rides on its teardown report
(``report.openprogram_outcome``, plain data), which pytest-xdist carries from the worker that ran it
to the controller like any report attribute; :meth:`SummaryPlugin. pytest_runtest_logreport` picks
it up wherever the reports arrive. What the collection covered (:class:`CollectionScope`) is found
where tests are collected — in a worker under xdist, which collects the whole tree and sends it in
its ``workeroutput`` — and judged where the summary is printed, with that process's command line.

The summary lists the *orphans*, recordings no collected test uses any more. A recording under the
recordings folder is an orphan when no collected test that uses the fixture would replay it (a
test's own recording path, or the one its ``@pytest.mark.openprogram(name=...)`` gives it). That can
only be told when the run collected the whole test tree, so the orphans are looked for only then
(:class:`CollectionScope`): pytest was started with no file, folder or node id (or with exactly its
``testpaths``), from its rootdir, with no ``-k`` / ``-m``, no ``--lf`` (which skips whole files),
nothing ignored or deselected (``--deselect``, ``--sw``) and no collection error. Otherwise the
summary says why it did not look (:func:`orphans_skipped_because`)."""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.private_files import PRIVATE_FILE_MODE, replace_file
from openprogram.store.names import RECORDING_SUFFIX
from openprogram.testing.recording_paths import (
    TEMPORARY_FOLDER_PREFIX,
    display_path,
    recording_path_of,
    recordings_dir_of,
)
from openprogram.testing.suite_summary import OUTCOME_KEY, SuiteSummary, TestOutcome

__all__ = ["CollectionScope", "SummaryPlugin", "find_orphans", "orphans_skipped_because"]

_REPORT_ATTRIBUTE = "openprogram_outcome"

_WORKER_OUTPUT_KEY = "openprogram_collection"


class SummaryPlugin:
    """Gathers outcomes and the collection; prints the summary and writes the report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.outcomes: list[TestOutcome] = []
        self.scope: CollectionScope | None = None
        self.report_written: Path | None = None
        self.pages_written: list[Path] = []
        self._summary: SuiteSummary | None = None
        self._deselected = 0
        self._collection_errors = 0

    # --- where tests run -------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown":
            outcome = item.stash.get(OUTCOME_KEY, None)
            if outcome is not None:
                setattr(report, _REPORT_ATTRIBUTE, outcome.to_json())
        return report

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self._deselected += len(items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._collection_errors += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        used = {
            str(recording_path_of(item))
            for item in items
            if "openprogram_recording" in getattr(item, "fixturenames", ())
        }
        self.scope = CollectionScope(used)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.scope is not None:
            self.scope.deselected = self._deselected
            self.scope.collection_errors = self._collection_errors

    def pytest_sessionfinish(self) -> None:
        """A worker sends what it collected; elsewhere the report is written (before the
        terminal summary, so ``-p no:terminal`` still writes it)."""
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            if self.scope is not None:
                workeroutput[_WORKER_OUTPUT_KEY] = self.scope.to_json()
            return
        report_path = self.config.getoption("openprogram_report")
        if report_path is not None:
            self.report_written = Path(self.config.invocation_params.dir, report_path)
            _write_report(self.report_written, self.summary())
        page_path = self.config.getoption("openprogram_html", None)
        markdown_path = self.config.getoption("openprogram_summary_md", None)
        if page_path is not None or markdown_path is not None:
            from openprogram.testing.suite_pages import suite_markdown, suite_page

            here = self.config.invocation_params.dir
            if page_path is not None:
                _write_private(Path(here, page_path), suite_page(self.summary()).encode())
                self.pages_written.append(Path(here, page_path))
            if markdown_path is not None:
                markdown = suite_markdown(self.summary(), page_path)
                _write_private(Path(here, markdown_path), markdown.encode())
                self.pages_written.append(Path(here, markdown_path))

    # --- where the summary is printed ------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, _REPORT_ATTRIBUTE, None)
        if report.when == "teardown" and isinstance(data, dict):
            self.outcomes.append(TestOutcome.from_json(data))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist: a worker finished; what it collected came with it."""
        data = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT_KEY)
        if isinstance(data, dict) and self.scope is None:
            self.scope = CollectionScope.from_json(data)

    def summary(self) -> SuiteSummary:
        """The summary of the run (made once, when first asked for after the run)."""
        if self._summary is None:
            self._summary = self._make_summary()
        return self._summary

    def _make_summary(self) -> SuiteSummary:

        summary = SuiteSummary(sorted(self.outcomes, key=lambda outcome: outcome.nodeid))
        reason = self._orphans_not_checked()
        if reason is not None:
            summary.orphans_not_checked = reason
            return summary
        assert self.scope is not None
        rootdir = self.config.rootpath
        summary.orphans = [
            display_path(path, rootdir)
            for path in find_orphans(recordings_dir_of(self.config), self.scope.recordings)
        ]
        return summary

    def _orphans_not_checked(self) -> str | None:
        if self.scope is None:
            return "the tests were not collected"
        config = self.config
        option = config.option
        return orphans_skipped_because(
            self.scope,
            explicit_args=config.args_source == pytest.Config.ArgsSource.ARGS
            and not _args_are_testpaths(config),
            started_in_rootdir=config.invocation_params.dir == config.rootpath,
            keyword=getattr(option, "keyword", "") or "",
            markers=getattr(option, "markexpr", "") or "",
            ignored=bool(getattr(option, "ignore", None) or getattr(option, "ignore_glob", None)),
            last_failed=bool(getattr(option, "lf", False)),
        )

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        if self.outcomes:
            terminalreporter.write_sep("=", "openprogram recordings")
            for line in self.summary().lines(verbose=self.config.get_verbosity() > 0):
                terminalreporter.write_line(line)
        if self.report_written is not None:
            terminalreporter.write_line(
                f"openprogram: wrote the recordings report to {self.report_written}"
            )
        for written in self.pages_written:
            terminalreporter.write_line(f"openprogram: wrote the summary to {written}")


def _args_are_testpaths(config: pytest.Config) -> bool:
    """Whether the arguments given name exactly the ``testpaths`` (as the whole tree)."""
    testpaths = config.getini("testpaths")
    if not testpaths:
        return False
    given = {os.path.normpath(Path(config.invocation_params.dir, arg)) for arg in config.args}
    wanted = {os.path.normpath(Path(config.rootpath, path)) for path in testpaths}
    return given == wanted


def _write_report(path: Path, summary: SuiteSummary) -> None:
    """The JSON report, written privately (it may quote recorded values) and atomically."""
    data = orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2) + b"\n"
    _write_private(path, data)


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data, mode=PRIVATE_FILE_MODE)


@dataclass(slots=True)
class CollectionScope:
    """What one process collected: the recordings its fixture tests use, and whether
    anything narrowed the collection."""

    recordings: set[str] = field(default_factory=set)
    """Absolute paths of the recordings the collected fixture tests use."""
    deselected: int = 0
    collection_errors: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "recordings": sorted(self.recordings),
            "deselected": self.deselected,
            "collection_errors": self.collection_errors,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollectionScope:
        return cls(
            set(data.get("recordings", [])),
            int(data.get("deselected", 0)),
            int(data.get("collection_errors", 0)),
        )


def orphans_skipped_because(
    scope: CollectionScope,
    *,
    explicit_args: bool,
    started_in_rootdir: bool,
    keyword: str,
    markers: str,
    ignored: bool,
    last_failed: bool = False,
) -> str | None:
    """Why the run cannot tell orphans (a reason in a few words), or None when it can."""
    if explicit_args:
        return "tests were selected by path or node id"
    if not started_in_rootdir:
        return "pytest was not started from its rootdir"
    if keyword:
        return "tests were selected with -k"
    if markers:
        return "tests were selected with -m"
    if ignored:
        return "paths were ignored (--ignore)"
    if last_failed:
        return "only the tests that failed last were run (--lf)"
    if scope.deselected:
        return "tests were deselected"
    if scope.collection_errors:
        return "some test files could not be collected"
    return None


def find_orphans(recordings_dir: Path, used: set[str]) -> list[Path]:
    """The recordings under ``recordings_dir`` whose path is not in ``used``, sorted (the
    temporary folders of recordings being made are skipped)."""
    if not recordings_dir.is_dir():
        return []
    found = []
    for path in recordings_dir.rglob(f"*{RECORDING_SUFFIX}"):
        relative = path.relative_to(recordings_dir)
        if any(part.startswith(TEMPORARY_FOLDER_PREFIX) for part in relative.parts):
            continue
        if path.is_file() and str(path) not in used:
            found.append(path)
    return sorted(found)
