"""The pytest plugin: the ``openprogram_recording`` fixture gives a test its own recording.

Registered under the ``pytest11`` entry point (name ``openprogram``; ``-p no:openprogram``
turns it off). It is inert for a test that does not request the fixture: importing it loads
no provider, and its hooks return at once for such a test.

Options (command line, or the ini file):

* ``--openprogram-record-mode=MODE`` / ``openprogram_record_mode`` — ``none`` (default)
  replays only, ``once`` records missing recordings, ``new_episodes`` replays what the
  recording holds and records the rest, ``all`` (or ``rewrite``) re-records, ``live`` calls
  live and records nothing (:mod:`~openprogram.testing.record_modes`);
* ``--openprogram-allow-record-on-ci`` (or ``OPENPROGRAM_ALLOW_RECORD_ON_CI=1``) — record
  even though ``CI`` is set;
* ``--openprogram-block-network`` / ``openprogram_block_network`` — fail a test that opens a
  connection to another machine (:mod:`~openprogram.testing.network_block`), except to
  ``--openprogram-allowed-hosts`` / ``openprogram_allowed_hosts``;
* ``--openprogram-report=PATH`` — write the suite summary as JSON
  (:mod:`~openprogram.testing.suite_summary`);
* ``openprogram_recordings_dir`` — where recordings live, relative to rootdir (default
  ``tests/recordings``; the layout is described in ``recording_paths.py``);
* ``openprogram_ignore_fields``, ``openprogram_match``, ``openprogram_http_passthrough_hosts``,
  ``openprogram_http_headers``, ``openprogram_tools`` (how replay treats each agent tool:
  ``NAME=POLICY`` lines, ``live``, ``replay`` or ``check``), ``openprogram_redact_patterns``
  (the user's own redaction) — the settings a test records and replays with, which the
  ``openprogram_config`` fixture and the ``@pytest.mark.openprogram(...)`` marker override
  (:mod:`~openprogram.testing.recording_settings` tells the order).

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
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from openprogram.testing import settings_sources
from openprogram.testing.outcome import OUTCOME_KEY, TestOutcome
from openprogram.testing.record_modes import RECORD_MODES, record_command
from openprogram.testing.recording_paths import module_folder_name, recording_path
from openprogram.testing.recording_settings import Layer, SettingsError, combine_layers

if TYPE_CHECKING:
    from openprogram.testing.network_block import NetworkBlock
    from openprogram.testing.recording_session import RecordingSession

DEFAULT_RECORDINGS_DIR = "tests/recordings"


@dataclass(frozen=True, slots=True)
class PluginSettings:
    """What the run was started with; each test's settings start from ``ini_layer`` and
    ``command_line_layer``."""

    recordings_dir: Path
    allow_record_on_ci: bool
    ini_layer: Layer
    command_line_layer: Layer


_SETTINGS = pytest.StashKey[PluginSettings]()
_RESTORE_KEYS = pytest.StashKey[Callable[[], None]]()
_BLOCK = pytest.StashKey["NetworkBlock"]()
_ACTIVE = pytest.StashKey["RecordingSession"]()
_BODY_PASSED = pytest.StashKey[bool]()
_SKIPPED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("openprogram", "openprogram recordings")
    group.addoption(
        "--openprogram-record-mode",
        choices=RECORD_MODES,
        default=None,
        help=(
            "none: replay only, a missing recording fails (default); once: record tests "
            "without a recording, replay the others; new_episodes: replay what a recording "
            "holds, record the other calls live, drop the recorded calls never requested; "
            "all (or rewrite): re-record every test that uses the openprogram_recording "
            "fixture; live: call live, record nothing"
        ),
    )
    group.addoption(
        "--openprogram-allow-record-on-ci",
        action="store_true",
        default=False,
        help="record (or call live) even when the CI environment variable is set",
    )
    group.addoption(
        "--openprogram-block-network",
        action="store_true",
        default=None,
        help=(
            "fail any test that connects to another machine (tests using the fixture may "
            "while they record or run live)"
        ),
    )
    group.addoption(
        "--openprogram-allowed-hosts",
        default=None,
        metavar="HOSTS",
        help="comma-separated hosts (names or addresses) a blocked network still reaches",
    )
    group.addoption(
        "--openprogram-report",
        default=None,
        metavar="PATH",
        help="write the suite summary of the recordings as JSON to PATH",
    )
    parser.addini(
        "openprogram_record_mode",
        help=f"{' | '.join(RECORD_MODES)}, when --openprogram-record-mode is not given",
        default=None,
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
        default=None,
    )
    parser.addini(
        "openprogram_match",
        help="content | order: how replay pairs requests with recorded calls (default content)",
        default=None,
    )
    parser.addini(
        "openprogram_http_passthrough_hosts",
        type="linelist",
        help="hosts (host or host:port) whose HTTP requests are sent live, never recorded",
        default=None,
    )
    parser.addini(
        "openprogram_http_headers",
        type="linelist",
        help="HTTP request headers to store and compare besides the semantic ones",
        default=None,
    )
    parser.addini(
        "openprogram_tools",
        type="linelist",
        help="agent tools under replay: NAME=POLICY or *=POLICY lines, POLICY live (default), "
        "replay or check",
        default=None,
    )
    parser.addini(
        "openprogram_redact_patterns",
        type="linelist",
        help="regular expressions whose matches are removed from recordings (your own secrets)",
        default=None,
    )
    parser.addini(
        "openprogram_block_network",
        type="bool",
        help="fail any test that connects to another machine (as --openprogram-block-network)",
        default=False,
    )
    parser.addini(
        "openprogram_allowed_hosts",
        type="linelist",
        help="hosts (names or addresses) a blocked network still reaches, one a line",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    for marker in (
        "openprogram(**settings): this test's recording settings: name, record_mode, "
        "ignore_fields, match, http_passthrough_hosts, http_headers, tools, redact_patterns, "
        "redact",
        "openprogram_match(match): how replay pairs this test's requests with its recorded "
        "calls, 'content' or 'order' (overrides the openprogram_match ini option)",
    ):
        config.addinivalue_line("markers", marker)
    ini_layer = settings_sources.ini_layer(config)
    option = config.getoption("openprogram_record_mode")
    command_line_layer: Layer = {} if option is None else {"record_mode": option}
    recordings_dir = Path(str(config.getini("openprogram_recordings_dir")).strip())
    config.stash[_SETTINGS] = PluginSettings(
        recordings_dir=config.rootpath / recordings_dir,
        allow_record_on_ci=bool(config.getoption("openprogram_allow_record_on_ci")),
        ini_layer=ini_layer,
        command_line_layer=command_line_layer,
    )
    run_mode = combine_layers([ini_layer, command_line_layer]).record_mode
    if run_mode == "none":
        from openprogram.activation.placeholders import set_placeholder_keys

        config.stash[_RESTORE_KEYS] = set_placeholder_keys()
    _install_network_block(config)
    from openprogram.testing.summary_plugin import SummaryPlugin

    config.pluginmanager.register(SummaryPlugin(config), "openprogram-summary")


def pytest_unconfigure(config: pytest.Config) -> None:
    restore_keys = config.stash.get(_RESTORE_KEYS, None)
    if restore_keys is not None:
        restore_keys()
    block = config.stash.get(_BLOCK, None)
    if block is not None:
        block.uninstall()


def _install_network_block(config: pytest.Config) -> None:
    option = config.getoption("openprogram_block_network")
    if not (option or (option is None and config.getini("openprogram_block_network"))):
        return
    from openprogram.testing.network_block import NetworkBlock

    allowed = list(config.getini("openprogram_allowed_hosts"))
    listed = config.getoption("openprogram_allowed_hosts")
    if listed:
        allowed.extend(host.strip() for host in str(listed).split(","))
    block = NetworkBlock(allowed)
    block.install()
    config.stash[_BLOCK] = block


@pytest.fixture(scope="module")
def openprogram_config() -> dict[str, Any]:
    """Recording settings for every test in its scope; override it (in a test module, or a
    ``conftest.py`` for the tests below it) to return a dict of settings: ``record_mode``,
    ``ignore_fields``, ``match``, ``http_passthrough_hosts``, ``http_headers``, ``tools``,
    ``redact_patterns``, ``redact``. A test's
    ``@pytest.mark.openprogram(...)`` overrides it."""
    return {}


@pytest.fixture
def openprogram_recording(
    request: pytest.FixtureRequest, openprogram_config: dict[str, Any]
) -> Iterator[RecordingSession]:
    """Record or replay this test's provider calls in its own recording.

    Yields a :class:`~openprogram.testing.recording_session.RecordingSession` (``path``,
    ``mode``, ``replay``). See ``docs/testing.md``.
    """
    from openprogram.errors import OpenProgramError, RecordingFileError
    from openprogram.recording.user_redaction import user_redaction_in_effect
    from openprogram.testing.recording_session import open_recording_session

    config = request.config
    plugin = config.stash[_SETTINGS]
    item = request.node
    bad_settings: str | None = None
    try:
        settings = settings_sources.settings_of_test(
            item,
            ini=plugin.ini_layer,
            command_line=plugin.command_line_layer,
            fixture_settings=openprogram_config,
        )
    except SettingsError as error:
        bad_settings = str(error)
    if bad_settings is not None:  # failed outside the except block: no "during handling" chain
        pytest.fail(bad_settings, pytrace=False)
    path = _recording_path(item, plugin.recordings_dir, config.rootpath, settings.name)
    display = _display_path(path, config.rootpath)
    argument = _test_argument(item, config)
    refusal: str | None = None
    try:
        session = open_recording_session(
            path,
            record_mode=settings.record_mode,
            display_path=display,
            test_argument=argument,
            allow_record_on_ci=plugin.allow_record_on_ci,
            ignore_fields=settings.ignore_fields,
            match=settings.match,
            passthrough_hosts=settings.http_passthrough_hosts,
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

    session.settings = settings
    block = config.stash.get(_BLOCK, None)
    item.stash[_ACTIVE] = session
    item.stash[_BODY_PASSED] = False
    try:
        with session.installed(), _lifted(block, session.calls_live):
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
    return result


def recording_path_of(item: pytest.Item) -> Path:
    """Where ``item``'s recording lives, its ``@pytest.mark.openprogram(name=...)`` counted
    (the summary's orphans are the recordings no collected test has this path)."""
    name = None
    for marker in item.iter_markers("openprogram"):
        if "name" in marker.kwargs:
            name = marker.kwargs["name"]
            break
    settings = item.config.stash[_SETTINGS]
    return _recording_path(
        item,
        settings.recordings_dir,
        item.config.rootpath,
        name if isinstance(name, str) else None,
    )


def _recording_path(
    item: pytest.Item, recordings_dir: Path, rootdir: Path, name: str | None
) -> Path:
    if name is not None:
        folder = module_folder_name(item.path, recordings_dir=recordings_dir, rootdir=rootdir)
        return recordings_dir / folder / f"{name}.jsonl"
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
        recordings_dir=recordings_dir,
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


def recordings_dir_of(config: pytest.Config) -> Path:
    """The run's recordings folder (absolute)."""
    return config.stash[_SETTINGS].recordings_dir
