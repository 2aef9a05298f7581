"""A drift check of one recording: its calls re-sent live, each answer compared with the
recorded one, and the report.

:func:`check_drift` sends the calls in recorded order, a few at a time (``concurrency``),
and reports them in that order whatever order their answers came in. Each call is one
:class:`CallDrift`: ``drifted`` (its drift, path by path, breaking first), ``unchanged``,
``skipped`` (not sent, with the reason: :mod:`openprogram.drift.sending`) or ``failed`` (sent,
but no answer came: the reason is the transport's error, redacted). :class:`DriftReport`
says whether the check failed: drift of the class ``fail_on`` or worse (``breaking`` by
default; ``additive`` also fails on new fields; ``content`` on any drift), or a call that
could not be sent — a check that did not run is no pass.

:func:`check_recordings` checks the recordings ``recordings drift`` names, one after the
other, and writes the ``--save`` snapshot. The recording itself is never changed: accepting
the provider's new behaviour is re-recording it (:data:`ACCEPTING`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

from openprogram.config.paths import recordings_dir
from openprogram.drift.comparison import LiveAnswer, answer_drift, answer_of_rows
from openprogram.drift.credentials import Credentials
from openprogram.drift.origins import BaseUrls
from openprogram.drift.response_shapes import DRIFT_CLASSES, DriftClass, PathDrift
from openprogram.drift.sending import (
    LiveRequest,
    Unsent,
    destination,
    live_request,
    send_http,
    send_provider_call,
)
from openprogram.drift.snapshot import write_snapshot
from openprogram.recording.format import refuse_a_snapshot
from openprogram.recording.reader import read_recording
from openprogram.store.names import resolve_recording

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from openprogram.recording.format import RecordedCall, Recording
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "ACCEPTING",
    "DRIFT_CLASSES",
    "CallDrift",
    "DriftReport",
    "check_drift",
    "check_recordings",
]

ACCEPTING: Final = (
    "the recording is unchanged; to accept the provider's new answers, re-record it "
    "(openprogram exec --record NAME -- COMMAND, or pytest --openprogram-record-mode=all)"
)

Result = Literal["drifted", "unchanged", "skipped", "failed"]

_CONTENT_LINES: Final = 2
"""The content drifts of a call the text report shows one by one; more are named on one
line (the model's text, and with it every token count, differs on every run)."""


@dataclass
class CallDrift:
    """One recorded call, checked against its live answer (or not sent, and why)."""

    call_index: int
    boundary: str
    label: str
    """``POST api.openai.com/v1/chat/completions``, or ``openai-completions gpt-4o-mini``."""
    result: Result
    drift: list[PathDrift] = field(default_factory=list)
    reason: str | None = None
    live_rows: list[dict[str, Any]] | None = None
    """The live answer's event rows (redacted), when one came and the check keeps them."""

    @property
    def worst(self) -> DriftClass | None:
        return self.drift[0].kind if self.drift else None

    def lines(self) -> list[str]:
        """The report's lines for this call: each breaking and additive drift, and the
        content drift — each path when there are a few, else one line naming them."""
        head = f"call {self.call_index} {self.label}"
        if self.result == "drifted":
            content = [drift for drift in self.drift if drift.kind == "content"]
            lines = [f"{head}: {drift.line()}" for drift in self.drift if drift.kind != "content"]
            if len(content) <= _CONTENT_LINES:
                return lines + [f"{head}: {drift.line()}" for drift in content]
            paths = ", ".join(drift.path for drift in content[:_CONTENT_LINES])
            more = len(content) - _CONTENT_LINES
            return [
                *lines,
                f"{head}: content: other values at {len(content)} paths: {paths} and {more} "
                "more (--json lists each)",
            ]
        if self.result == "unchanged":
            return [f"{head}: no drift"]
        return [f"{head}: {self.result}: {self.reason}"]

    def to_json(self) -> dict[str, Any]:
        return {
            "call_index": self.call_index,
            "boundary": self.boundary,
            "call": self.label,
            "result": self.result,
            "worst": self.worst,
            "reason": self.reason,
            "drift": [
                {
                    "class": drift.kind,
                    "path": drift.path,
                    "what": drift.what,
                    "recorded": drift.recorded,
                    "live": drift.live,
                }
                for drift in self.drift
            ],
        }


@dataclass
class DriftReport:
    """The drift of one recording's calls."""

    path: Path
    calls: list[CallDrift]
    fail_on: DriftClass = "breaking"

    def counts(self) -> dict[str, int]:
        """How many calls drifted at worst breaking, additive, content; how many did not
        drift, were skipped, failed."""
        counts = dict.fromkeys((*DRIFT_CLASSES, "unchanged", "skipped", "failed"), 0)
        for call in self.calls:
            key = call.worst if call.result == "drifted" else call.result
            counts[str(key)] += 1
        return counts

    def skipped_reasons(self) -> dict[str, int]:
        """Each reason calls were skipped for, with how many were, in the calls' order."""
        reasons: dict[str, int] = {}
        for call in self.calls:
            if call.result == "skipped":
                reasons[str(call.reason)] = reasons.get(str(call.reason), 0) + 1
        return reasons

    @property
    def failing(self) -> list[CallDrift]:
        """The calls that fail the check."""
        limit = DRIFT_CLASSES.index(self.fail_on)
        return [
            call
            for call in self.calls
            if call.result == "failed"
            or any(DRIFT_CLASSES.index(drift.kind) <= limit for drift in call.drift)
        ]

    @property
    def failed(self) -> bool:
        return bool(self.failing)

    def to_json(self) -> dict[str, Any]:
        return {
            "recording": str(self.path),
            "fail_on": self.fail_on,
            "failed": self.failed,
            "counts": self.counts(),
            "calls": [call.to_json() for call in self.calls],
        }


def check_drift(
    recording: Recording,
    *,
    credentials: Credentials,
    base_urls: BaseUrls | None = None,
    concurrency: int = 4,
    timeout: float = 120.0,
    max_calls: int | None = None,
    only: Sequence[int] | None = None,
    fail_on: DriftClass = "breaking",
    user: UserRedaction | None = None,
    client: httpx.Client | None = None,
    keep_live: bool = False,
    over_budget: str | None = None,
) -> DriftReport:
    """Re-send ``recording``'s calls live and compare each answer with the recorded one.

    ``base_urls``: the origins the user named; a call is sent only to an origin trusted for its
    vendor (:mod:`openprogram.drift.origins`), others are skipped and nothing is sent to them;
    ``max_calls``: at most this many calls are sent (the rest are skipped, counted); ``only``: the
    call indexes to check (all by default); ``client``: the httpx client to send with (one made for
    the check by default, closed after it); ``keep_live``: each :class:`CallDrift` keeps its live
    answer's rows (for a snapshot), else they are dropped once compared; ``over_budget``: the reason
    a call over ``max_calls`` is skipped for (``over the budget of N calls sent`` by default)."""
    import httpx

    from openprogram.http_boundary.boundary import PROVIDER_CLIENT_MARK

    trusted = base_urls if base_urls is not None else BaseUrls()
    wanted = None if only is None else set(only)
    chosen = [call for call in recording.calls if wanted is None or call.call_index in wanted]
    owned = client is None
    if client is None:
        client = httpx.Client(timeout=timeout, follow_redirects=False)
    # A client the HTTP boundary leaves alone: a check run inside a replayed test is sent.
    setattr(client, PROVIDER_CLIENT_MARK, True)
    planned: list[tuple[RecordedCall, LiveRequest | None, str | None]] = []
    budget = max_calls
    for call in chosen:
        try:
            if call.boundary == "http":
                request: LiveRequest | None = live_request(call, credentials, trusted)
            else:
                request = None
                destination(call, trusted)  # a provider call to an untrusted origin: skipped
        except Unsent as unsent:
            planned.append((call, None, str(unsent)))
            continue
        if budget is not None and budget <= 0:
            planned.append(
                (call, None, over_budget or f"over the budget of {max_calls} calls sent")
            )
            continue
        if budget is not None:
            budget -= 1
        planned.append((call, request, None))

    def checked(entry: tuple[RecordedCall, LiveRequest | None, str | None]) -> CallDrift:
        call, request, reason = entry
        label = _label(call)
        if reason is not None:
            return CallDrift(call.call_index, call.boundary, label, "skipped", reason=reason)
        checked = _checked(call, label, request, client, credentials, trusted, user)
        if not keep_live:
            checked.live_rows = None
        return checked

    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            results = list(pool.map(checked, planned))
    finally:
        if owned:
            client.close()
    return DriftReport(recording.path, results, fail_on=fail_on)


def _checked(
    call: RecordedCall,
    label: str,
    request: LiveRequest | None,
    client: httpx.Client,
    credentials: Credentials,
    base_urls: BaseUrls,
    user: UserRedaction | None,
) -> CallDrift:
    import httpx

    try:
        if request is not None:
            rows = send_http(client, request, user)
        else:
            rows = send_provider_call(call, credentials, base_urls)
    except Unsent as unsent:
        return CallDrift(call.call_index, call.boundary, label, "skipped", reason=str(unsent))
    except (httpx.HTTPError, OSError) as error:
        return CallDrift(
            call.call_index, call.boundary, label, "failed", reason=_failure(error, credentials)
        )
    drift = answer_drift(call.request, _recorded(call), _live(call, rows))
    result: Result = "drifted" if drift else "unchanged"
    return CallDrift(call.call_index, call.boundary, label, result, drift, live_rows=rows)


def _recorded(call: RecordedCall) -> LiveAnswer:
    if call.boundary == "provider":
        return _provider_answer(call.event_rows)
    return answer_of_rows(call.event_rows)


def _live(call: RecordedCall, rows: list[dict[str, Any]]) -> LiveAnswer:
    return _provider_answer(rows) if call.boundary == "provider" else answer_of_rows(rows)


def _provider_answer(rows: list[dict[str, Any]]) -> LiveAnswer:
    """A provider call's events, compared per event type as a stream is."""
    return LiveAnswer(kind="events", events=[(str(row.get("type")), row) for row in rows])


def _label(call: RecordedCall) -> str:
    request = call.request
    if call.boundary == "provider":
        model = request.get("model")
        model = model if isinstance(model, dict) else {}
        return f"{model.get('api')} {model.get('id')}"
    parts = urlsplit(str(request.get("url")))
    query = f"?{parts.query}" if parts.query else ""
    return f"{request.get('method')} {parts.netloc}{parts.path}{query}"


def _failure(error: BaseException, credentials: Credentials) -> str:
    from openprogram.recording.redaction import SecretRedactor, known_secret_values

    known = known_secret_values(credentials.environ) | {v for _, v in credentials.headers}
    message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return str(SecretRedactor(known).redact_text(message))


def check_recordings(
    names: Sequence[str],
    *,
    credentials: Credentials,
    base_urls: BaseUrls | None = None,
    concurrency: int = 4,
    timeout: float = 120.0,
    max_calls: int | None = None,
    only: Sequence[int] | None = None,
    fail_on: DriftClass = "breaking",
    user: UserRedaction | None = None,
    over_budget: str | None = None,
    save: Path | None = None,
) -> Iterator[DriftReport]:
    """The drift check of each recording ``names`` names (store names or paths), in order,
    each yielded as it ends, as ``recordings drift`` runs them: every recording is read, and
    a drift snapshot refused, before any call is sent. With ``save``, the live answers of the
    first recording are written there as a drift snapshot after its check
    (:mod:`openprogram.drift.snapshot`). The options are :func:`check_drift`'s."""
    store = recordings_dir()
    paths = [resolve_recording(name, store).path for name in names]
    read = [read_recording(path) for path in paths]
    for recording in read:
        refuse_a_snapshot(recording)
    first: DriftReport | None = None
    for recording in read:
        report = check_drift(
            recording,
            credentials=credentials,
            base_urls=base_urls,
            concurrency=concurrency,
            timeout=timeout,
            max_calls=max_calls,
            only=only,
            fail_on=fail_on,
            user=user,
            keep_live=save is not None,
            over_budget=over_budget,
        )
        if first is None:
            first = report
        yield report
    if save is not None and first is not None:
        write_snapshot(save.expanduser().absolute(), read[0], first)
