"""``pytest --openprogram-import-cassettes``: each test's vcrpy cassettes, named by
pytest-recording itself, made into the test's recording before the test runs.

A suite moving from pytest-recording to openprogram changes its tests from ``@pytest.mark.vcr`` to
the ``openprogram_recording`` fixture and keeps its cassettes: run once with this option, and each
test that has no recording yet asks pytest-recording where its cassette is — its
``vcr_cassette_dir`` and ``default_cassette_name`` fixtures, so a conftest that overrides them is
obeyed, and the serializer its ``vcr_config`` names (``.json`` for ``json``, else ``.yaml``) — and
the cassette is imported (:mod:`openprogram.importing.vcr_cassettes`) into the test's recording,
which the test then replays. A test that has no cassette runs as its record mode says; a test whose
``vcr`` marker names more cassettes than its own fails with one line: their interactions, merged,
are not a session one recording can replay in order, so import them with ``openprogram recordings
import`` into the recording you want. The end of the run lists each cassette imported, with its
summary (calls, skipped interactions, secrets removed), under xdist too (the lines travel with each
test's report)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import CassetteError, RecordingFileError
from openprogram.importing.vcr_cassettes import import_cassette, write_imported
from openprogram.recording.user_redaction import UserRedaction

__all__ = ["IMPORT_OPTION", "ImportSummary", "import_test_cassette"]

IMPORT_OPTION = "openprogram_import_cassettes"
_PROPERTY = "openprogram_cassette_imported"


def import_test_cassette(
    request: pytest.FixtureRequest, recording: Path, shown: str, user: UserRedaction | None
) -> None:
    """Import the test's cassette into ``recording`` (shown as ``shown``), redacted by the
    test's own redaction ``user`` too, when it has one; fails the test in one line when
    pytest-recording is not there, or the cassette cannot be imported."""
    try:
        folder = Path(str(request.getfixturevalue("vcr_cassette_dir")))
        name = str(request.getfixturevalue("default_cassette_name"))
        config = request.getfixturevalue("vcr_config")
    except pytest.FixtureLookupError:
        pytest.fail(
            "--openprogram-import-cassettes asks pytest-recording where each test's cassette "
            "is: install pytest-recording (pip install pytest-recording)",
            pytrace=False,
        )
    serializer = config.get("serializer", "yaml") if isinstance(config, dict) else "yaml"
    suffix = ".json" if serializer == "json" else ".yaml"
    own = folder / f"{name}{suffix}"
    others = [
        str(argument)
        for marker in request.node.iter_markers(name="vcr")
        for argument in marker.args
    ]
    if others:
        pytest.fail(
            f"{shown}: this test plays {len(others) + 1} cassettes ({own.name}, "
            f"{', '.join(others)}), which one recording cannot replay in order: import them "
            "with `openprogram recordings import` into the recording you want",
            pytrace=False,
        )
    if not own.exists():
        return
    try:
        imported = import_cassette(own, user)
        # the header names the cassette as the suite does, not by someone's home folder
        with contextlib.suppress(ValueError):
            imported.path = own = own.relative_to(request.config.rootpath)
        write_imported(imported, recording)
    except (CassetteError, RecordingFileError) as error:
        pytest.fail(str(error), pytrace=False)
    request.node.user_properties.append((_PROPERTY, f"{own} → {shown}: {imported.summary()}"))


class ImportSummary:
    """Lists the cassettes imported at the end of the run (registered with the option)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup":
            self.lines += [str(value) for key, value in report.user_properties if key == _PROPERTY]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lines:
            return
        terminalreporter.section("openprogram: cassettes imported")
        for line in self.lines:
            terminalreporter.write_line(f"✔ {line}")
