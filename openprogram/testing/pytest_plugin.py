"""The pytest plugin: the ``openprogram_recording`` fixture gives a test its own recording.

Registered under the ``pytest11`` entry point (name ``openprogram``; ``-p no:openprogram``
turns it off). It is inert for a test that does not request the fixture: importing it loads
no provider, and its one hook returns at once for such a test.

Options (command line, or the ini file):

* ``--openprogram-record-mode=none|once|all`` / ``openprogram_record_mode`` — ``none``
  (default) replays only, ``once`` records missing recordings, ``all`` re-records;
* ``--openprogram-allow-record-on-ci`` (or ``OPENPROGRAM_ALLOW_RECORD_ON_CI=1``) — record
  even though ``CI`` is set;
* ``openprogram_recordings_dir`` — where recordings live, relative to rootdir (default
  ``tests/recordings``; the layout is described in ``recording_paths.py``);
* ``openprogram_ignore_fields`` — more request fields replay leaves out of the comparison;
* ``openprogram_match`` — how replay pairs requests with recorded calls: ``content``
  (default) or ``order``; a test's ``@pytest.mark.openprogram_match("order")`` overrides it;
* ``openprogram_http_passthrough_hosts`` — hosts whose HTTP requests are sent live and never
  recorded (telemetry), one a line;
* ``openprogram_http_headers`` — request headers to store and compare besides the semantic
  ones, one a line;
* ``openprogram_tools`` — how replay treats the agent tools, one ``NAME=POLICY`` (or
  ``*=POLICY``) a line: ``live`` (default) runs a tool, ``replay`` serves its taped result,
  ``check`` runs it and fails the test when its result differs from the taped one.

The fixture covers both boundaries: the provider registry and every httpx / httpx2 client
(so the official ``openai`` and ``anthropic`` SDKs), in every thread of the process. When
the record mode only replays (``none``), ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` are
set to a placeholder at start-up when unset, so SDK clients built when a test module is
imported build without a key.

A test fails when replay mismatches (the :class:`ReplayMismatch` is an ``AssertionError``;
at the HTTP boundary it leaves the SDK inside a ``RecordReplayEscape``, which the test's
failure shows as the mismatch it carries), and also — right after its body returns — when
the code under test caught a mismatch and carried on (even with ``except BaseException``),
or left recorded calls unmade (or tape entries unread). A test that fails while recording
keeps the previous recording.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from openprogram.testing.record_modes import (
    DEFAULT_RECORD_MODE,
    RECORD_MODES,
    RecordMode,
    record_command,
)
from openprogram.testing.recording_paths import recording_path

if TYPE_CHECKING:
    from openprogram.testing.recording_session import RecordingSession

DEFAULT_RECORDINGS_DIR = "tests/recordings"


@dataclass(frozen=True, slots=True)
class PluginSettings:
    record_mode: RecordMode
    recordings_dir: Path
    allow_record_on_ci: bool
    ignore_fields: tuple[str, ...]
    match: str = "content"
    passthrough_hosts: tuple[str, ...] = ()
    http_headers: tuple[str, ...] = ()
    tools: tuple[tuple[str, str], ...] = ()


_SETTINGS = pytest.StashKey[PluginSettings]()
_RESTORE_KEYS = pytest.StashKey[Callable[[], None]]()
_ACTIVE = pytest.StashKey["RecordingSession"]()
_BODY_PASSED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("openprogram", "openprogram recordings")
    group.addoption(
        "--openprogram-record-mode",
        choices=RECORD_MODES,
        default=None,
        help=(
            "none: replay only, a missing recording fails (default); once: record tests "
            "without a recording, replay the others; all: re-record every test that uses "
            "the openprogram_recording fixture"
        ),
    )
    group.addoption(
        "--openprogram-allow-record-on-ci",
        action="store_true",
        default=False,
        help="record even when the CI environment variable is set (refused otherwise)",
    )
    parser.addini(
        "openprogram_record_mode",
        help="none | once | all, when --openprogram-record-mode is not given (default none)",
        default=DEFAULT_RECORD_MODE,
    )
    parser.addini(
        "openprogram_recordings_dir",
        help=f"folder of the recordings, relative to rootdir (default {DEFAULT_RECORDINGS_DIR})",
        default=DEFAULT_RECORDINGS_DIR,
    )
    parser.addini(
        "openprogram_ignore_fields",
        type="linelist",
        help="request field names or dotted paths replay leaves out of the comparison",
        default=[],
    )
    parser.addini(
        "openprogram_match",
        help="content | order: how replay pairs requests with recorded calls (default content)",
        default="content",
    )
    parser.addini(
        "openprogram_http_passthrough_hosts",
        type="linelist",
        help="hosts (host or host:port) whose HTTP requests are sent live, never recorded",
        default=[],
    )
    parser.addini(
        "openprogram_tools",
        type="linelist",
        help="agent tools under replay: NAME=POLICY or *=POLICY lines, POLICY live (default), "
        "replay or check",
        default=[],
    )
    parser.addini(
        "openprogram_http_headers",
        type="linelist",
        help="HTTP request headers to store and compare besides the semantic ones",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("openprogram_record_mode")
    ini_mode = str(config.getini("openprogram_record_mode")).strip()
    record_mode = option if option is not None else ini_mode
    if record_mode not in RECORD_MODES:
        raise pytest.UsageError(
            f"openprogram_record_mode must be one of {', '.join(RECORD_MODES)}, not {record_mode!r}"
        )
    ignore_fields = tuple(config.getini("openprogram_ignore_fields"))
    if ignore_fields:
        _check_ignore_fields(ignore_fields)
    match = _checked_match(str(config.getini("openprogram_match")).strip(), "openprogram_match")
    config.addinivalue_line(
        "markers",
        "openprogram_match(match): how replay pairs this test's requests with its recorded "
        "calls, 'content' or 'order' (overrides the openprogram_match ini option)",
    )
    recordings_dir = Path(str(config.getini("openprogram_recordings_dir")).strip())
    config.stash[_SETTINGS] = PluginSettings(
        record_mode=record_mode,
        recordings_dir=config.rootpath / recordings_dir,
        allow_record_on_ci=bool(config.getoption("openprogram_allow_record_on_ci")),
        ignore_fields=ignore_fields,
        match=match,
        passthrough_hosts=_entries(config, "openprogram_http_passthrough_hosts"),
        http_headers=_entries(config, "openprogram_http_headers"),
        tools=_tool_policies(config),
    )
    if record_mode == "none":
        from openprogram.activation.placeholders import set_placeholder_keys

        config.stash[_RESTORE_KEYS] = set_placeholder_keys()


def pytest_unconfigure(config: pytest.Config) -> None:
    restore_keys = config.stash.get(_RESTORE_KEYS, None)
    if restore_keys is not None:
        restore_keys()


def _entries(config: pytest.Config, name: str) -> tuple[str, ...]:
    """The non-empty lines of a ``linelist`` ini option, stripped."""
    return tuple(entry.strip() for entry in config.getini(name) if entry.strip())


def _tool_policies(config: pytest.Config) -> tuple[tuple[str, str], ...]:
    from openprogram.recording.tool_policies import parse_tool_policies

    try:
        return tuple(parse_tool_policies(_entries(config, "openprogram_tools")).items())
    except ValueError as error:
        raise pytest.UsageError(f"openprogram_tools: {error}") from None


def _checked_match(match: str, where: str) -> str:
    from openprogram.recording.matching import MATCHINGS

    if match not in MATCHINGS:
        raise pytest.UsageError(f"{where} must be one of {', '.join(MATCHINGS)}, not {match!r}")
    return match


def _test_match(item: pytest.Item, settings: PluginSettings) -> str:
    """The test's ``openprogram_match`` marker's matching, else the ini option's."""
    marker = item.get_closest_marker("openprogram_match")
    if marker is None:
        return settings.match
    from openprogram.recording.matching import MATCHINGS

    value = marker.args[0] if marker.args else marker.kwargs.get("match")
    if value not in MATCHINGS:
        pytest.fail(
            f"@pytest.mark.openprogram_match takes one of {', '.join(MATCHINGS)}, not {value!r}",
            pytrace=False,
        )
    return str(value)


def _check_ignore_fields(ignore_fields: tuple[str, ...]) -> None:
    from openprogram.recording.difference import find_first_difference

    try:
        find_first_difference({}, {}, ignore_fields=ignore_fields)
    except ValueError as error:
        raise pytest.UsageError(f"openprogram_ignore_fields: {error}") from None


@pytest.fixture
def openprogram_recording(request: pytest.FixtureRequest) -> Iterator[RecordingSession]:
    """Record or replay this test's provider calls in its own recording.

    Yields a :class:`~openprogram.testing.recording_session.RecordingSession` (``path``,
    ``mode``, ``replay``). See ``docs/testing.md``.
    """
    from openprogram.errors import OpenProgramError, RecordingFileError
    from openprogram.testing.recording_session import open_recording_session

    config = request.config
    settings = config.stash[_SETTINGS]
    item = request.node
    path = _recording_path(item, settings, config.rootpath)
    argument = _test_argument(item, config)
    refusal: str | None = None
    try:
        session = open_recording_session(
            path,
            record_mode=settings.record_mode,
            display_path=_display_path(path, config.rootpath),
            test_argument=argument,
            allow_record_on_ci=settings.allow_record_on_ci,
            ignore_fields=settings.ignore_fields,
            match=_test_match(item, settings),
            passthrough_hosts=settings.passthrough_hosts,
            http_headers=settings.http_headers,
            tools=dict(settings.tools),
        )
    except RecordingFileError as error:
        refusal = f"{error}\nto replace it, re-record: {record_command('all', argument)}"
    except OpenProgramError as error:
        refusal = str(error)
    if refusal is not None:  # failed outside the except block: no "during handling" chain
        pytest.fail(refusal, pytrace=False)

    item.stash[_ACTIVE] = session
    item.stash[_BODY_PASSED] = False
    try:
        with session.installed():
            yield session
    finally:
        del item.stash[_ACTIVE]
        passed = item.stash.get(_BODY_PASSED, False)
        problem: str | None = None
        try:
            session.finish(passed=passed)
        except OpenProgramError as error:
            problem = str(error)
    if problem is None and passed:
        problem = session.problem_at_teardown()
    if problem is not None:
        pytest.fail(problem, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    """A fixture stopped by the HTTP boundary errors with the error it carries."""
    return (yield from _carried_errors_unwrapped())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _carried_errors_unwrapped())


def _carried_errors_unwrapped() -> Generator[None, object, object]:
    try:
        return (yield)
    except BaseException as error:
        carried = _carried_error(error)
        if carried is None:
            raise
        raise carried from None


def _carried_error(error: BaseException) -> BaseException | None:
    """The error a ``RecordReplayEscape`` carries (with its traceback), or None for any
    other exception. Imports nothing until a test fails."""
    from openprogram.recording.mismatch import RecordReplayEscape

    if not isinstance(error, RecordReplayEscape):
        return None
    return error.error.with_traceback(error.__traceback__)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail a test whose body passed but left replay unsatisfied; annotate one that failed.

    A ``RecordReplayEscape`` (how the HTTP boundary stops a run past the SDKs' retry loops)
    fails the test with the error it carries: the mismatch report, not the carrier."""
    session = item.stash.get(_ACTIVE, None)
    try:
        result = yield
    except BaseException as error:
        carried = _carried_error(error)
        failure = error if carried is None else carried
        if session is not None and isinstance(failure, Exception | pytest.fail.Exception):
            session.explain_failure(failure)
        if carried is None:
            raise
        raise carried from None
    if session is None:
        return result
    problem = session.problem_after_call()
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    item.stash[_BODY_PASSED] = True
    return result


def _recording_path(item: pytest.Item, settings: PluginSettings, rootdir: Path) -> Path:
    classes: list[str] = []
    node = item.parent
    while isinstance(node, pytest.Class):
        classes.append(node.name)
        node = node.parent
    if isinstance(item, pytest.Function):
        function = item.originalname
        callspec = getattr(item, "callspec", None)
        parameter_id = None if callspec is None else str(callspec.id)
    else:
        function, parameter_id = item.name, None
    return recording_path(
        recordings_dir=settings.recordings_dir,
        test_file=item.path,
        rootdir=rootdir,
        function=function,
        classes=classes[::-1],
        parameter_id=parameter_id,
    )


def _test_argument(item: pytest.Item, config: pytest.Config) -> str:
    """The command-line argument that selects ``item``, from where pytest was started."""
    file = os.path.relpath(item.path, config.invocation_params.dir)
    _, separator, rest = item.nodeid.partition("::")
    return shlex.quote(f"{file}{separator}{rest}")


def _display_path(path: Path, rootdir: Path) -> str:
    try:
        return str(path.relative_to(rootdir))
    except ValueError:
        return str(path)
