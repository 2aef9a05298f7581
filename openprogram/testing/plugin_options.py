"""The pytest plugin's options and markers: declared for pytest, and read back once per run.

:func:`add_options` declares them, each with its help (``pytest --help`` shows them under
"openprogram recordings"): the record mode; recording on CI (also
``OPENPROGRAM_ALLOW_RECORD_ON_CI=1``); the deterministic sources ``openprogram.now()`` and
``random()`` draw from while a test records (a clock also runs the tests in UTC, at record and
replay alike); blocking the network (:mod:`~openprogram.testing.network_block`) but for some hosts;
importing vcrpy cassettes (:mod:`~openprogram.testing.cassette_import`); the suite summary as JSON,
HTML or Markdown (:mod:`~openprogram.testing.suite_summary`,
:mod:`~openprogram.testing.suite_pages`); the ``drift`` mode's failing class, call budget and
trusted origins (:mod:`openprogram.drift.origins`); and the ini settings a test records and replays
with (``openprogram_recordings_dir``, relative to rootdir, the layout in ``recording_paths.py``;
``openprogram_ignore_fields``, ``_match``, ``_http_passthrough_hosts``, ``_http_headers``,
``_tools``, ``_redact_patterns``), which the ``openprogram_config`` fixture and the
``@pytest.mark.openprogram(...)`` marker override (:mod:`~openprogram.testing.recording_settings`
tells the order).

Markers: ``openprogram(**settings)`` (a test's own settings) and ``openprogram_match(match)``.

:func:`read_plugin_settings` reads what every test's settings start from into
:class:`PluginSettings`, which the plugin keeps in ``config.stash[PLUGIN_SETTINGS]``;
:func:`network_block_allowed_hosts` reads whether the network is blocked, and for which hosts
it is not. This module imports nothing heavy: the plugin loads it in every pytest run.

Record modes take pytest-recording's (and vcrpy's) names, with openprogram's meanings; they
are defined with the settings they belong to (:data:`~openprogram.testing.recording_settings.
RecordMode`):

* ``none`` (default) replays only; a missing recording is an error;
* ``once`` records a missing recording and replays an existing one;
* ``new_episodes`` serves each request from an equal unconsumed recorded call, calls the
  provider live for any other and records it; at a passing end the recording holds exactly
  the calls the run made (recorded calls never requested are dropped);
* ``all`` records every test afresh, replacing its recording; ``rewrite`` is another name
  for it (pytest-recording's);
* ``live`` calls the providers live and records nothing (pytest-recording's
  ``--disable-recording``);
* ``drift`` replays as ``none``; then, when the test's body passed, the calls it was served
  are sent live and each answer is compared with the recorded one
  (:mod:`~openprogram.testing.drift_mode`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from openprogram.deterministic_sources import sources_of_options
from openprogram.drift.origins import BaseUrlError, BaseUrls, parse_base_urls
from openprogram.testing import recording_settings
from openprogram.testing.recording_settings import RECORD_MODES, Layer
from openprogram.testing.suite_summary import DRIFT_CLASSES

if TYPE_CHECKING:
    from openprogram.drift.response_shapes import DriftClass

DEFAULT_RECORDINGS_DIR = "tests/recordings"
DRIFT_BASE_URL = "--openprogram-drift-base-url"

MARKERS = (
    "openprogram(**settings): this test's recording settings: name, record_mode, "
    "ignore_fields, compare_loopback_ports, match, http_passthrough_hosts, http_headers, "
    "tools, redact_patterns, redact, seed, clock",
    "openprogram_match(match): how replay pairs this test's requests with its recorded "
    "calls, 'content' or 'order' (overrides the openprogram_match ini option)",
)
"""The plugin's markers, as the ``markers`` ini lines that declare them."""


@dataclass(frozen=True, slots=True)
class PluginSettings:
    """What the run was started with; each test's settings start from ``ini_layer`` and
    ``command_line_layer``."""

    recordings_dir: Path
    allow_record_on_ci: bool
    ini_layer: Layer
    command_line_layer: Layer
    drift_fail_on: DriftClass = "breaking"
    """``drift`` mode: the class of drift (or worse) that fails a test."""
    drift_max_calls: int | None = None
    """``drift`` mode: the most calls sent live in the run (None: no limit)."""
    drift_base_urls: BaseUrls = field(default_factory=lambda: BaseUrls(option=DRIFT_BASE_URL))
    """``drift`` mode: the origins trusted with a vendor's key besides its official API."""


PLUGIN_SETTINGS = pytest.StashKey[PluginSettings]()
"""Where the run's :class:`PluginSettings` are kept, in ``config.stash``."""


def add_options(parser: pytest.Parser) -> None:
    """Declare the plugin's command-line and ini options (see the module docstring)."""
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
            "fixture; live: call live, record nothing; drift: replay as none, then send each "
            "passing test's calls live and report how the answers drifted"
        ),
    )
    group.addoption(
        "--openprogram-import-cassettes",
        action="store_true",
        default=False,
        help=(
            "before a test without a recording runs, import its vcrpy cassette (where "
            "pytest-recording keeps it, its vcr_cassette_dir and cassette name obeyed) into "
            "its recording"
        ),
    )
    group.addoption(
        "--openprogram-allow-record-on-ci",
        action="store_true",
        default=False,
        help="record (or call live) even when the CI environment variable is set",
    )
    group.addoption(
        "--openprogram-seed",
        type=int,
        default=None,
        metavar="N",
        help="while a test records, openprogram.random() and seeded_random() draw from this "
        "seed (0 to 2**63-1; a marker's seed= overrides it)",
    )
    group.addoption(
        "--openprogram-clock-start",
        default=None,
        metavar="MS",
        help="while a test records, openprogram.now() reads this time first: milliseconds "
        "since 1970-01-01T00:00:00Z or a time with its zone (2025-07-03T00:00:00Z); the tests "
        "run in UTC (a marker's clock= overrides it)",
    )
    group.addoption(
        "--openprogram-clock-step",
        type=int,
        default=None,
        metavar="MS",
        help="with --openprogram-clock-start: how far the clock moves at each reading, in "
        "milliseconds (default 1000)",
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
    group.addoption(
        "--openprogram-html",
        default=None,
        metavar="PATH",
        help="write the suite summary as a self-contained HTML page to PATH",
    )
    group.addoption(
        "--openprogram-summary-md",
        default=None,
        metavar="PATH",
        help="write a short Markdown summary to PATH (for $GITHUB_STEP_SUMMARY or a comment)",
    )
    group.addoption(
        "--openprogram-drift-fail-on",
        choices=DRIFT_CLASSES,
        default="breaking",
        metavar="CLASS",
        help=(
            "drift mode: fail a test whose live answers drifted this much or more: breaking "
            "(default: a field gone, a type or a kind never recorded, another status), additive "
            "(also a new field or event type) or content (any drift, other text too)"
        ),
    )
    group.addoption(
        "--openprogram-drift-max-calls",
        type=int,
        default=None,
        metavar="N",
        help=(
            "drift mode: send at most N calls live in the whole run (in each pytest-xdist "
            "worker); the calls over it are skipped and counted"
        ),
    )
    group.addoption(
        DRIFT_BASE_URL,
        action="append",
        default=[],
        metavar="VENDOR=ORIGIN",
        help=(
            "drift mode: trust ORIGIN (scheme://host[:port]) as VENDOR's API (openai, "
            "anthropic, google, aws): its calls recorded there or to the official API are "
            "sent to ORIGIN, with its key; HOST=ORIGIN sends the calls recorded to HOST (or "
            "host:port) to ORIGIN. Repeatable. Without it, keys go only to the vendors' "
            "official APIs and calls recorded elsewhere, loopback too, are skipped"
        ),
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


def add_markers(config: pytest.Config) -> None:
    """Declare the plugin's markers (:data:`MARKERS`)."""
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)


def read_plugin_settings(config: pytest.Config) -> PluginSettings:
    """The run's settings from the ini file and the command line (a bad ini value is a usage
    error naming the option)."""
    ini_layer = recording_settings.ini_layer(config)
    option = config.getoption("openprogram_record_mode")
    command_line_layer: Layer = {} if option is None else {"record_mode": option}
    command_line_layer.update(_sources_layer(config))
    recordings_dir = Path(str(config.getini("openprogram_recordings_dir")).strip())
    max_calls = config.getoption("openprogram_drift_max_calls")
    if max_calls is not None and max_calls < 0:
        raise pytest.UsageError(
            f"--openprogram-drift-max-calls takes a count of 0 or more, not {max_calls}"
        )
    try:
        base_urls = parse_base_urls(
            config.getoption("openprogram_drift_base_url") or [], option=DRIFT_BASE_URL
        )
    except BaseUrlError as error:
        raise pytest.UsageError(str(error)) from None
    return PluginSettings(
        recordings_dir=config.rootpath / recordings_dir,
        allow_record_on_ci=bool(config.getoption("openprogram_allow_record_on_ci")),
        ini_layer=ini_layer,
        command_line_layer=command_line_layer,
        drift_fail_on=cast("DriftClass", config.getoption("openprogram_drift_fail_on")),
        drift_max_calls=max_calls,
        drift_base_urls=base_urls,
    )


def _sources_layer(config: pytest.Config) -> Layer:
    """``seed`` and ``clock`` as the command line gives them (a bad value is a usage error
    naming the option)."""
    try:
        sources = sources_of_options(
            config.getoption("openprogram_seed"),
            config.getoption("openprogram_clock_start"),
            config.getoption("openprogram_clock_step"),
            option_prefix="--openprogram-",
        )
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    if sources is None:
        return {}
    layer: Layer = {"seed": sources.seed} if sources.seed is not None else {}
    if sources.clock is not None:
        layer["clock"] = sources.clock
    return layer


def allowed_hosts(config: pytest.Config) -> list[str]:
    """The hosts a test may reach live while the network is blocked, and while it replays
    (the ini lines, then the command line's comma-separated list)."""
    allowed = list(config.getini("openprogram_allowed_hosts"))
    listed = config.getoption("openprogram_allowed_hosts")
    if listed:
        allowed.extend(host.strip() for host in str(listed).split(","))
    return [host for host in allowed if host]


def network_block_allowed_hosts(config: pytest.Config) -> list[str] | None:
    """The hosts a blocked network still reaches (:func:`allowed_hosts`), or None when the
    network is not blocked: the command-line flag when given, else the ini option."""
    option = config.getoption("openprogram_block_network")
    if not (option or (option is None and config.getini("openprogram_block_network"))):
        return None
    return allowed_hosts(config)
