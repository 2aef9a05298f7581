"""The pytest plugin: the ``openprogram_recording`` fixture gives a test its own recording.

Registered under the ``pytest11`` entry point (name ``openprogram``; ``-p no:openprogram``
turns it off). It is inert for a test that does not request the fixture: importing it loads
no provider, and its hooks return at once for such a test.

Its options and markers — the record mode, recording on CI, the network block, the JSON report, the
recordings folder and the settings a test records and replays with — are declared and read in
:mod:`~openprogram.testing.plugin_options`; where a test's recording lives, and how the plugin names
it and the test, in :mod:`~openprogram.testing.recording_paths`. This module holds the hooks:
``pytest_addoption``; ``pytest_configure`` and ``pytest_unconfigure`` (placeholder API keys, the
network block, the summary plugin of :mod:`~openprogram.testing.summary_plugin`); the
``openprogram_config`` and ``openprogram_recording`` fixtures; and the wrappers around each test's
protocol, setup, call and teardown.

The fixture covers both boundaries: the provider registry and every httpx / httpx2 client
(so the official ``openai`` and ``anthropic`` SDKs), in every thread of the process. When
the record mode replays (``none``, ``drift``), ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY``
are set to a placeholder at start-up when unset, so SDK clients built when a test module is
imported build without a key (drift's own sends never read the placeholders).

A test fails when replay mismatches (the :class:`ReplayMismatch` is an ``AssertionError``; at the
HTTP boundary it leaves the SDK inside a ``RecordReplayEscape``, which the test's failure shows as
the mismatch it carries), and also — right after its body returns — when the code under test caught
a mismatch and carried on (even with ``except BaseException``), or left recorded calls unmade (or
tape entries unread). A test that fails while recording keeps the previous recording. In ``drift``
mode a test that passed against its recording then has its calls sent live
(:mod:`~openprogram.testing.drift_mode`), still in its call phase, and fails on their drift."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from openprogram.errors import OpenProgramError, RecordingFileError
from openprogram.testing import recording_settings
from openprogram.testing.plugin_options import (
    PLUGIN_SETTINGS,
    add_markers,
    add_options,
    allowed_hosts,
    network_block_allowed_hosts,
    read_plugin_settings,
)
from openprogram.testing.recording_paths import (
    display_path,
    item_recording_path,
    selecting_argument,
)
from openprogram.testing.recording_settings import SettingsError, combine_layers, record_command
from openprogram.testing.suite_summary import OUTCOME_KEY, TestOutcome

if TYPE_CHECKING:
    from openprogram.testing.drift_mode import DriftBudget
    from openprogram.testing.network_block import NetworkBlock
    from openprogram.testing.session_lifecycle import RecordingSession

pytest_plugins = ["openprogram.testing.isolation"]
"""``--openprogram-isolate``: the whole session in a loopback-only network namespace
(:mod:`~openprogram.testing.isolation`, loaded with this plugin and turned off with it)."""

_RESTORE_KEYS = pytest.StashKey[Callable[[], None]]()
_BLOCK = pytest.StashKey["NetworkBlock"]()
_ACTIVE = pytest.StashKey["RecordingSession"]()
_BODY_PASSED = pytest.StashKey[bool]()
_SKIPPED = pytest.StashKey[bool]()
_DRIFT_BUDGET: pytest.StashKey[DriftBudget] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    add_markers(config)
    settings = read_plugin_settings(config)
    config.stash[PLUGIN_SETTINGS] = settings
    run_mode = combine_layers([settings.ini_layer, settings.command_line_layer]).record_mode
    if run_mode in ("none", "drift"):  # drift's own sends never read the placeholders
        from openprogram.activation.boundaries import set_placeholder_keys

        config.stash[_RESTORE_KEYS] = set_placeholder_keys()
    _install_network_block(config)
    from openprogram.testing.summary_plugin import SummaryPlugin

    config.pluginmanager.register(SummaryPlugin(config), "openprogram-summary")
    if config.getoption("openprogram_import_cassettes", False):
        from openprogram.testing.cassette_import import ImportSummary

        config.pluginmanager.register(ImportSummary(), "openprogram-cassette-import")


def pytest_unconfigure(config: pytest.Config) -> None:
    restore_keys = config.stash.get(_RESTORE_KEYS, None)
    if restore_keys is not None:
        restore_keys()
    block = config.stash.get(_BLOCK, None)
    if block is not None:
        block.uninstall()


def _install_network_block(config: pytest.Config) -> None:
    allowed = network_block_allowed_hosts(config)
    if allowed is None:
        return
    from openprogram.testing.network_block import NetworkBlock

    block = NetworkBlock(allowed)
    block.install()
    config.stash[_BLOCK] = block


@pytest.fixture(scope="module")
def openprogram_config() -> dict[str, Any]:
    """Recording settings for every test in its scope; override it (in a test module, or a
    ``conftest.py`` for the tests below it) to return a dict of settings: ``record_mode``,
    ``ignore_fields``, ``match``, ``http_passthrough_hosts``, ``http_headers``, ``tools``,
    ``redact_patterns``, ``redact``, ``seed``, ``clock``, ``children``,
    ``allowed_commands``. A test's
    ``@pytest.mark.openprogram(...)`` overrides it."""
    return {}


@pytest.fixture
def openprogram_recording(
    request: pytest.FixtureRequest, openprogram_config: dict[str, Any]
) -> Iterator[RecordingSession]:
    """Record or replay this test's provider calls in its own recording.

    Yields a :class:`~openprogram.testing.session_lifecycle.RecordingSession` (``path``,
    ``mode``, ``replay``). See ``docs/testing.md``."""
    from openprogram.recording.user_redaction import user_redaction_in_effect
    from openprogram.testing.recording_session import open_recording_session

    config = request.config
    plugin = config.stash[PLUGIN_SETTINGS]
    item = request.node
    bad_settings: str | None = None
    try:
        settings = recording_settings.settings_of_test(
            item,
            ini=plugin.ini_layer,
            command_line=plugin.command_line_layer,
            fixture_settings=openprogram_config,
        )
    except SettingsError as error:
        bad_settings = str(error)
    if bad_settings is not None:  # failed outside the except block: no "during handling" chain
        pytest.fail(bad_settings, pytrace=False)
    path = item_recording_path(item, plugin.recordings_dir, config.rootpath, settings.name)
    display = display_path(path, config.rootpath)
    argument = selecting_argument(item, config)
    if config.getoption("openprogram_import_cassettes", False) and not path.exists():
        from openprogram.testing.cassette_import import import_test_cassette

        user = user_redaction_in_effect(patterns=settings.redact_patterns, redact=settings.redact)
        import_test_cassette(request, path, display, user)
    refusal: str | None = None
    try:
        session = open_recording_session(
            path,
            record_mode=settings.record_mode,
            display_path=display,
            test_argument=argument,
            allow_record_on_ci=plugin.allow_record_on_ci,
            ignore_fields=settings.ignore_fields,
            compare_loopback_ports=settings.compare_loopback_ports,
            match=settings.match,
            passthrough_hosts=settings.http_passthrough_hosts,
            allowed_hosts=(*settings.allowed_hosts, *allowed_hosts(config)),
            http_headers=settings.http_headers,
            tools=dict(settings.tools),
            user_redaction=user_redaction_in_effect(
                patterns=settings.redact_patterns, redact=settings.redact
            ),
        )
    except RecordingFileError as error:
        refusal = f"{error}\nto replace it, re-record: {record_command('all', argument)}"
    except OpenProgramError as error:
        refusal = str(error)
    if refusal is not None:  # failed outside the except block: no "during handling" chain
        item.stash[OUTCOME_KEY] = TestOutcome(
            item.nodeid, display, settings.record_mode, "error", difference=refusal
        )
        pytest.fail(refusal, pytrace=False)

    session.settings = settings  # and its seed and clock, what now() and random() draw from
    block = config.stash.get(_BLOCK, None)
    item.stash[_ACTIVE] = session
    item.stash[_BODY_PASSED] = False
    try:
        with _zone_of(settings.clock), session.installed(), _lifted(block, session.calls_live):
            yield session
    finally:
        del item.stash[_ACTIVE]
        passed = item.stash.get(_BODY_PASSED, False)
        problem: str | None = None
        try:
            session.finish(passed=passed)
        except OpenProgramError as error:
            problem = str(error)
            passed = False
        if not item.stash.get(_SKIPPED, False):  # a skipped test did nothing to summarize
            item.stash[OUTCOME_KEY] = session.outcome(item.nodeid, passed=passed)
    if problem is None and passed:
        problem = session.problem_at_teardown()
    if problem is not None:
        pytest.fail(problem, pytrace=False)


def _zone_of(clock: object) -> Any:
    """A test given a clock runs in UTC, recorded or replayed: a time it shows in the local
    zone reads the same on every machine."""
    if clock is None:
        return nullcontext()
    from openprogram.deterministic_sources import local_time_in_utc

    return local_time_in_utc()


def _lifted(block: NetworkBlock | None, calls_live: bool) -> Any:
    return block.lifted() if block is not None and calls_live else nullcontext()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """The network block names the test running now."""
    block = item.config.stash.get(_BLOCK, None)
    if block is None:
        return (yield)
    block.test = item.nodeid
    block.refusals.clear()
    try:
        return (yield)
    finally:
        block.test = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    """A fixture stopped by the HTTP boundary errors with the error it carries."""
    return (yield from _carried_errors_unwrapped(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _carried_errors_unwrapped(item))


def _carried_errors_unwrapped(item: pytest.Item) -> Generator[None, object, object]:
    try:
        result = yield
    except BaseException as error:
        _fail_on_refused_connection(item)
        carried = _carried_error(error)
        if carried is None:
            raise
        raise carried from None
    _fail_on_refused_connection(item)
    return result


def _fail_on_refused_connection(item: pytest.Item) -> None:
    """Fail with the one line of the first connection the network block refused in this
    phase of the test, however the code under test handled the refusal."""
    block = item.config.stash.get(_BLOCK, None)
    if block is None or not block.refusals:
        return
    first = block.refusals[0]
    block.refusals.clear()
    raise pytest.fail.Exception(str(first), pytrace=False) from None


def _carried_error(error: BaseException) -> BaseException | None:
    """The error a ``RecordReplayEscape`` carries (with its traceback), or None for any
    other exception. Imports nothing until a test fails."""
    from openprogram.recording.mismatch import RecordReplayEscape

    if not isinstance(error, RecordReplayEscape):
        return None
    return error.error.with_traceback(error.__traceback__)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test failed by an error of openprogram's own (a mismatch, a refused connection)
    shows the test's own frames and the report: not the frames of the SDK, the HTTP client
    and openprogram the error passed through on its way out (``--full-trace`` shows them)."""
    excinfo = call.excinfo
    full = item.config.getoption("fulltrace", False)
    if excinfo is not None and isinstance(excinfo.value, OpenProgramError) and not full:
        own = _own_frames(excinfo.tb)
        if own is not None:
            # pytest cuts a traceback at the test's frame by following the frames' links,
            # so the chain of frames itself is what has to lose the others.
            excinfo.traceback = pytest.ExceptionInfo.from_exc_info(
                (type(excinfo.value), excinfo.value, own)
            ).traceback
    return (yield)


def _own_frames(tb: TracebackType | None) -> TracebackType | None:
    """A chain of ``tb``'s frames without the standard library's, installed packages' and
    openprogram's (None when that leaves none)."""
    from openprogram.recording.mismatch import is_library_file

    kept = []
    while tb is not None:
        if not is_library_file(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    chain: TracebackType | None = None
    for entry in reversed(kept):
        chain = TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail a test whose body passed but left replay unsatisfied; annotate one that failed.

    A ``RecordReplayEscape`` (how the HTTP boundary stops a run past the SDKs' retry loops)
    fails the test with the error it carries: the mismatch report, not the carrier."""
    session = item.stash.get(_ACTIVE, None)
    try:
        result = yield
    except BaseException as error:
        _fail_on_refused_connection(item)
        if isinstance(error, pytest.skip.Exception):
            item.stash[_SKIPPED] = True
        carried = _carried_error(error)
        failure = error if carried is None else carried
        if session is not None and isinstance(failure, Exception | pytest.fail.Exception):
            session.explain_failure(failure)
        if carried is None:
            raise
        raise carried from None
    _fail_on_refused_connection(item)
    if session is None:
        return result
    problem = session.problem_after_call()
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    item.stash[_BODY_PASSED] = True
    if session.record_mode == "drift":
        problem = _drift_problem(item, session)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
    return result


def _drift_problem(item: pytest.Item, session: RecordingSession) -> str | None:
    """``drift`` mode, once the test passed against its recording: send its calls live and
    say why it fails on their drift (None when it does not)."""
    from openprogram.testing.drift_mode import DriftBudget, check_test_drift, drift_failure

    config = item.config
    settings = config.stash[PLUGIN_SETTINGS]
    budget = config.stash.setdefault(_DRIFT_BUDGET, DriftBudget(settings.drift_max_calls))
    report = check_test_drift(
        session,
        fail_on=settings.drift_fail_on,
        budget=budget,
        block=config.stash.get(_BLOCK, None),
        base_urls=settings.drift_base_urls,
    )
    return drift_failure(report, session)
