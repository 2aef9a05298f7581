"""``--openprogram-record-mode=drift``: a test replays as in ``none``, then its calls are sent
live and each live answer is compared with the recorded one.

The code under test is served the *recorded* answers (so the test stays as deterministic as its
replay), and a test that fails or mismatches under replay fails exactly as in ``none``. Once its
body passed and left nothing unconsumed, :func:`check_test_drift` sends the calls it was served —
every call of its recording, since replay fails a test that leaves one unmade — with
:func:`openprogram.drift.check.check_drift`, and keeps the report on the session (the suite summary
and the JSON report show it). The plugin fails the test, in its call phase, when a call drifted by
the run's ``--openprogram-drift-fail-on`` class or worse, or got no answer (:func:`drift_failure`).

Where the calls are sent from: the test's replay is left for the check and entered again after it
(:meth:`~openprogram.testing.session_lifecycle.RecordingSession.suspended`), so the connection guard
of replay does not refuse the sends, and the fixtures' teardowns still replay; the network block
(``--openprogram-block-network``) lets the check reach the hosts of the calls it sends, and the
proxies the environment names, nothing else. The keys: the replay's placeholder keys are unset while
the check runs, and the check reads the vendors' keys from the environment without them, so a
placeholder is never sent — a vendor with no real key has its calls skipped
(``no openai key: set OPENAI_API_KEY``), never sent unauthenticated. Where the keys go: a call is
sent only to an origin trusted for its vendor (:mod:`openprogram.drift.origins`) — the vendor's
official API, an origin ``--openprogram-drift-base-url`` names, or a configured
``providers.<api>.base_url`` — and a call recorded to any other, loopback included, is skipped with
the option that would trust it; nothing is sent to it.

Spend is bounded by ``--openprogram-drift-max-calls``: a :class:`DriftBudget` per run (per
pytest-xdist worker, each a run of its own) counts the calls sent; a call over it is
skipped, and counted. The recording is never changed."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from urllib.request import getproxies

from openprogram.activation.boundaries import PLACEHOLDER_API_KEY, hide_placeholder_keys
from openprogram.config.settings import load_config
from openprogram.drift.check import DriftReport, check_drift
from openprogram.drift.credentials import Credentials
from openprogram.drift.origins import BaseUrls, configured_base_urls
from openprogram.drift.sending import Unsent, destination
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.wording import plural

if TYPE_CHECKING:
    from openprogram.drift.check import Result
    from openprogram.drift.response_shapes import DriftClass
    from openprogram.recording.format import Recording
    from openprogram.testing.network_block import NetworkBlock
    from openprogram.testing.session_lifecycle import RecordingSession

__all__ = ["DriftBudget", "check_test_drift", "drift_failure"]

CONCURRENCY = 4
"""Calls of one test sent at once."""

TIMEOUT = 120.0
"""Seconds one call may take."""

_NOT_SENT = "not sent"
"""The reason :func:`_unsent` has the calls it asks nothing of skipped for, then replaces."""


@dataclass
class DriftBudget:
    """The calls a run may still send live (``--openprogram-drift-max-calls``)."""

    limit: int | None
    sent: int = 0

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.sent)


def check_test_drift(
    session: RecordingSession,
    *,
    fail_on: DriftClass,
    budget: DriftBudget,
    block: NetworkBlock | None,
    base_urls: BaseUrls,
) -> DriftReport:
    """Send the calls ``session`` served live, compare their answers with the recorded ones,
    keep the report as ``session.drift`` and return it. ``base_urls``: the origins
    ``--openprogram-drift-base-url`` named (the configuration's are added here)."""
    assert session.replay is not None
    replay = session.replay.session
    recording, served = replay.recording, replay.served_calls
    base_urls = _with_configured(base_urls)
    remaining = budget.remaining
    refused = len(block.refusals) if block is not None else 0
    sent = False
    with session.suspended() as left:
        restore_keys = hide_placeholder_keys()
        try:
            credentials = _credentials()
            if not left:
                report = _unsent(
                    recording,
                    served,
                    credentials,
                    base_urls,
                    fail_on,
                    "skipped",
                    "a record/replay scope entered after the test's own (by a fixture) was "
                    "still active when the test's body returned",
                )
            else:
                allowing: AbstractContextManager[None] = (
                    block.allowing(_hosts(recording, served, base_urls))
                    if block is not None
                    else nullcontext()
                )
                try:
                    with allowing:
                        sent = True
                        report = check_drift(
                            recording,
                            credentials=credentials,
                            base_urls=base_urls,
                            concurrency=CONCURRENCY,
                            timeout=TIMEOUT,
                            max_calls=remaining,
                            only=served,
                            fail_on=fail_on,
                            user=session.user_redaction,
                            over_budget=f"over --openprogram-drift-max-calls {budget.limit}",
                        )
                except RecordReplayEscape as escape:  # a connection refused by a guard
                    if block is not None:
                        del block.refusals[refused:]  # reported here, not again at teardown
                    report = _unsent(
                        recording,
                        served,
                        credentials,
                        base_urls,
                        fail_on,
                        "failed",
                        str(escape.error),
                    )
        finally:
            restore_keys()
    for call in report.calls:
        if sent and call.result in ("drifted", "unchanged", "failed"):
            budget.sent += 1
    session.drift = report
    return report


def drift_failure(report: DriftReport, session: RecordingSession) -> str | None:
    """Why the test fails on its drift check: the lines of each call that drifted by the
    report's ``fail_on`` class or worse, or got no answer — its drift in shape (breaking,
    additive) and of the ``fail_on`` class, the rest counted — or None when none did."""
    failing = report.failing
    if not failing:
        return None
    shown = {"breaking", "additive", report.fail_on}
    milder = sum(1 for call in failing for drift in call.drift if drift.kind not in shown)
    drifted = [call for call in failing if call.result == "drifted"]
    if drifted:
        worse = "" if report.fail_on == "breaking" else " or worse"
        head = (
            f"the live answers to {plural(len(drifted), 'call')} drifted from "
            f"{session.display_path} ({report.fail_on} drift{worse} fails the test):"
        )
    else:
        head = f"the drift check got no live answer to calls of {session.display_path}:"
    lines = [head]
    for call in failing:
        lines.extend(replace(call, drift=[d for d in call.drift if d.kind in shown]).lines())
    if milder:
        lines.append(
            f"(and {plural(milder, 'path')} of content drift: -v and --openprogram-report "
            "list them)"
        )
    lines.append(
        "the test passed against its recording, which is unchanged; to accept the provider's "
        f"new answers, re-record: {session.rerecord_command}"
    )
    return "\n".join(lines)


def _credentials() -> Credentials:
    """The vendors' keys from the environment, never a placeholder of replay's."""
    return Credentials(
        {name: value for name, value in os.environ.items() if value != PLACEHOLDER_API_KEY}
    )


def _with_configured(base_urls: BaseUrls) -> BaseUrls:
    """``base_urls`` with the configuration's ``providers.<api>.base_url`` origins (none when
    it cannot be read: a test using the fixture has failed on that already)."""
    loaded = load_config()
    if loaded.settings is None:
        return base_urls
    return replace(base_urls, configured=configured_base_urls(loaded.settings))


def _hosts(recording: Recording, served: list[int], base_urls: BaseUrls) -> set[str]:
    """The hosts the check sends the ``served`` calls to (each on its trusted origin; a call
    to any other is not sent), and the proxies it may go through."""
    chosen = set(served)
    hosts: set[str] = set()
    for call in recording.calls:
        if call.call_index not in chosen:
            continue
        try:
            url = destination(call, base_urls)
        except Unsent:
            continue
        host = urlsplit(url or "").hostname
        if host:
            hosts.add(host)
    for scheme, proxy in getproxies().items():
        host = urlsplit(proxy).hostname if scheme != "no" else None
        if host:
            hosts.add(host)
    return hosts


def _unsent(
    recording: Recording,
    served: list[int],
    credentials: Credentials,
    base_urls: BaseUrls,
    fail_on: DriftClass,
    result: Result,
    reason: str,
) -> DriftReport:
    """The report of a check that sent nothing: each call that would have been sent
    ``result`` (``skipped`` or ``failed``) for ``reason``; the others skipped for their own."""
    report = check_drift(
        recording,
        credentials=credentials,
        base_urls=base_urls,
        max_calls=0,
        only=served,
        fail_on=fail_on,
        over_budget=_NOT_SENT,
    )
    for call in report.calls:
        if call.reason == _NOT_SENT:
            call.result = result
            call.reason = reason
    return report
