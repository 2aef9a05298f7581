"""A vcrpy cassette made into a recording: each interaction an HTTP call, as the HTTP boundary
would have recorded it.

A cassette (vcrpy 4 to 9, YAML or JSON, and pydantic-ai's serializer that stores JSON bodies
parsed as ``parsed_body``) is ``{"version": 1, "interactions": [{"request", "response"}]}``:

* the request: ``method``, ``uri``, ``headers`` (each name to a list of values, or one),
  ``body`` (text, bytes, a file-like or iterator body, or none) — or ``parsed_body``;
* the response: ``status`` (``{"code", "message"}``), ``headers``, ``body`` (``{"string":
  text or bytes}``) — or ``parsed_body``.

Each becomes a call through the recorder's own code (:mod:`openprogram.http_boundary.codec`): the
request's sections (method, URL, the headers that change what it means, the body parsed when JSON),
the response's head, and its body — a ``text/event-stream`` body split into one ``sse`` event per
server-sent event, an AWS event stream into one ``eventstream`` event per message, any other body
one ``http_body`` — so an imported recording replays an SDK call as one recorded by openprogram
does. A body recorded compressed (``content-encoding: gzip``, ``deflate``, ``br``) is stored decoded
(:mod:`~openprogram.importing.body_decoding`). No body may pass the largest body size
(``max_body_size``, by default the 64 MB the recording proxy reads), decoded or not, nor a
cassette's bodies together four times that: a cassette that does is refused whole, before anything
is written. Redaction runs over everything: cassettes often hold ``authorization`` headers and keys
in URLs. :class:`ImportedCassette` counts what it removed (never what it was), the interactions
skipped and why, and the requests that repeat a method and URL (vcrpy's default matching served
those in order; openprogram serves them by body)."""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn

import orjson

from openprogram.body_limit import MAX_BODY_SIZE
from openprogram.config.paths import recordings_dir
from openprogram.errors import CassetteError, RecordingFileError
from openprogram.http_boundary.codec import request_sections
from openprogram.http_boundary.exchange import call_redactor
from openprogram.http_boundary.whole_answers import answer_rows
from openprogram.importing.body_decoding import CODINGS, BodyRefused, decode_body, megabytes
from openprogram.importing.cassette_files import (
    CASSETTE_BODIES,
    RAISE_THE_LIMIT,
    cassette_limit,
    not_a_cassette_file,
    read_cassette_file,
)
from openprogram.private_files import make_private_dirs
from openprogram.recording.format import RecordedCall, new_header
from openprogram.recording.redaction import is_secret_field_name
from openprogram.recording.rewriting import rewrite_recording
from openprogram.recording.token_shapes import PLACEHOLDER
from openprogram.recording.user_redaction import UserRedaction
from openprogram.store.names import RECORDING_SUFFIX, resolve_recording, safe_file_name
from openprogram.wording import plural

__all__ = [
    "CassetteOutcome",
    "ImportedCassette",
    "cassette_files",
    "fixture_recording",
    "import_cassette",
    "import_cassettes",
    "write_imported",
]

_SIGNING_HEADERS: Final = frozenset({"authorization", "x-amz-security-token", "cookie"})


@dataclass
class ImportedCassette:
    """What one cassette held, made into calls."""

    path: Path
    serializer: str
    calls: list[RecordedCall] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    """Each interaction not converted: its index in the cassette, and why."""
    secrets: Counter[str] = field(default_factory=Counter)
    """What redaction removed, by where: ``authorization header``, ``url``, ``request
    body``, ``response``…"""
    repeated: dict[str, int] = field(default_factory=dict)
    """``METHOD URL`` of each request the cassette holds more than once, and how often."""
    content_types_restored: int = 0
    """Requests whose JSON body came without the ``content-type`` header (a cassette filter
    removed it), stored with ``application/json``: the SDK sends it, and replay compares it."""
    user: UserRedaction | None = None
    """The user redaction the calls were redacted with (its fingerprint goes in the header,
    as a recording made with it holds)."""

    def summary(self) -> str:
        """One line: calls converted, interactions skipped and why, secrets removed, repeated
        requests."""
        parts = [plural(len(self.calls), "call")]
        if self.skipped:
            reasons = Counter(reason for _, reason in self.skipped)
            shown = ", ".join(f"{reason} ×{count}" for reason, count in reasons.items())
            parts.append(f"{plural(len(self.skipped), 'interaction')} skipped ({shown})")
        removed = sum(self.secrets.values())
        if removed:
            where = ", ".join(f"{place} ×{count}" for place, count in sorted(self.secrets.items()))
            parts.append(f"{plural(removed, 'secret')} removed ({where})")
        if self.content_types_restored:
            parts.append(
                f"content-type restored on {plural(self.content_types_restored, 'JSON body')} "
                "(a filter had removed it)"
            )
        if self.repeated:
            shown = ", ".join(f"{request} ×{count}" for request, count in self.repeated.items())
            parts.append(
                f"requests sharing a method and URL ({shown}): vcrpy served them in order "
                "whatever else they held, replay matches each by its whole request"
            )
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "cassette": str(self.path),
            "serializer": self.serializer,
            "calls": len(self.calls),
            "skipped": [{"interaction": index, "reason": why} for index, why in self.skipped],
            "secrets_removed": dict(sorted(self.secrets.items())),
            "repeated_requests": self.repeated,
            "content_types_restored": self.content_types_restored,
        }


def import_cassette(
    path: Path, user: UserRedaction | None = None, *, max_body_size: int = MAX_BODY_SIZE
) -> ImportedCassette:
    """The calls of the cassette at ``path``, redacted by the built-in rules and ``user``'s
    (the configuration's ``redact_patterns``, a registered redactor); raises
    :class:`CassetteError` for a file that is not a cassette (or holds a tag vcrpy never
    writes), or that passes a bound: a body larger than ``max_body_size`` bytes, decoded,
    and the others :mod:`~openprogram.importing.cassette_files` names."""
    data, serializer = read_cassette_file(path, max_body_size=max_body_size)
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list):
        raise CassetteError(
            str(path), "is not a vcrpy cassette (no list of interactions at its top)"
        )
    imported = ImportedCassette(path, serializer, user=user)
    bodies = _Bodies(path, largest=max_body_size, total=cassette_limit(max_body_size))
    seen: Counter[str] = Counter()
    for index, interaction in enumerate(interactions):
        bodies.interaction = index
        try:
            call = _call(len(imported.calls), interaction, imported, bodies, user)
        except _Skip as skip:
            imported.skipped.append((index, str(skip)))
            continue
        imported.calls.append(call)
        seen[f"{call.request['method']} {call.request['url']}"] += 1
    imported.repeated = {request: count for request, count in seen.items() if count > 1}
    return imported


def write_imported(imported: ImportedCassette, destination: Path) -> None:
    """Write ``imported``'s calls as the recording at ``destination`` (private, atomic)."""
    make_private_dirs(destination.parent)
    fingerprint = None if imported.user is None else imported.user.fingerprint
    header = new_header(destination.stem, redaction_fingerprint=fingerprint)
    header["imported_from"] = {"cassette": str(imported.path), "serializer": imported.serializer}
    rewrite_recording(destination, header, imported.calls)


class _Skip(Exception):
    """An interaction that is not converted, and why."""


@dataclass
class _Bodies:
    """The bodies of one cassette, each no larger than ``largest`` bytes, decoded, and all
    of them together no larger than ``total``."""

    path: Path
    largest: int
    total: int
    taken: int = 0
    interaction: int = 0

    def take(self, body: bytes, which: str) -> bytes:
        """``body``, counted; refused when it is too large."""
        if len(body) > self.largest:
            self._refuse_body(f"the {which} body", f"is more than {megabytes(self.largest)}")
        return self._counted(body)

    def decode(self, body: bytes, coding: str) -> bytes | None:
        """The response ``body`` decoded of ``coding``, counted (None, and nothing counted,
        when it is not in that coding); refused as soon as it decodes too large."""
        room = min(self.largest, self.total - self.taken)
        try:
            decoded = decode_body(body, coding, limit=room)
        except BodyRefused as refused:
            if not refused.too_large:
                raise CassetteError(
                    str(self.path),
                    f"the response body of interaction {self.interaction} {refused.problem}",
                ) from None
            if room < self.largest:
                self._refuse_total()
            self._refuse_body("the response body", refused.problem)
        return None if decoded is None else self._counted(decoded)

    def _counted(self, body: bytes) -> bytes:
        self.taken += len(body)
        if self.taken > self.total:
            self._refuse_total()
        return body

    def _refuse_body(self, which: str, problem: str) -> NoReturn:
        raise CassetteError(
            str(self.path),
            f"{which} of interaction {self.interaction} {problem}, the largest body imported: "
            f"nothing was written ({RAISE_THE_LIMIT})",
        )

    def _refuse_total(self) -> NoReturn:
        raise CassetteError(
            str(self.path),
            f"its bodies come to more than {megabytes(self.total)} decoded, the most one "
            f"cassette may hold ({CASSETTE_BODIES} × the largest body): nothing was written "
            f"({RAISE_THE_LIMIT})",
        )


def _call(
    call_index: int,
    interaction: object,
    imported: ImportedCassette,
    bodies: _Bodies,
    user: UserRedaction | None,
) -> RecordedCall:
    secrets = imported.secrets
    if not isinstance(interaction, dict):
        raise _Skip("not an interaction")
    request, response = interaction.get("request"), interaction.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise _Skip("no request or no response")
    method, uri = request.get("method"), request.get("uri")
    if not isinstance(method, str) or not method or not isinstance(uri, str):
        raise _Skip("a request without a method or URI")
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    if not isinstance(code, int) or not 100 <= code <= 599:
        raise _Skip("a response without a status code")

    headers = _headers(request.get("headers"))
    for name, _ in headers:
        if is_secret_field_name(name) or name in _SIGNING_HEADERS:
            secrets[f"{name} header"] += 1
    content = bodies.take(_request_body(request), "request")
    if content and not any(name == "content-type" for name, _ in headers) and _is_json(content):
        headers.append(("content-type", "application/json"))
        imported.content_types_restored += 1
    sections = request_sections(method.upper(), uri, headers, content)
    redactor = call_redactor(headers, user)
    redacted = redactor.redact_http_request(sections)
    _count(secrets, "url", sections["url"], redacted["url"])
    for form in ("body", "body_text"):
        if form in sections:
            _count(secrets, "request body", sections[form], redacted[form])

    response_headers = _headers(response.get("headers"))
    body, response_headers = _decoded(_response_body(response), response_headers, bodies)
    for name, _ in response_headers:
        if name == "set-cookie":
            secrets["set-cookie header"] += 1
    rows = answer_rows(code, response_headers, [body], redactor)
    _count(secrets, "response", body.decode("utf-8", "replace"), rows[1:])
    return RecordedCall(
        call_index=call_index,
        line=0,
        request=redacted,
        event_rows=rows,
        outcome="complete",
        boundary="http",
    )


def _is_json(content: bytes) -> bool:
    """Whether a body is a JSON object or array (what an API client sends as JSON)."""
    if content.lstrip()[:1] not in (b"{", b"["):
        return False
    try:
        orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    return True


def _headers(value: object) -> list[tuple[str, str]]:
    """A cassette's headers as (lower-case name, value) pairs: each name maps to a list of
    values (vcrpy), or to one."""
    pairs: list[tuple[str, str]] = []
    if not isinstance(value, Mapping):
        return pairs
    for name, values in value.items():
        for item in values if isinstance(values, list | tuple) else [values]:
            if item is not None:
                pairs.append((str(name).lower(), _text(item)))
    return pairs


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def _request_body(request: dict[str, Any]) -> bytes:
    if "parsed_body" in request:  # pydantic-ai's serializer: a JSON body stored parsed
        return _json_bytes(request["parsed_body"])
    return _bytes(request.get("body"))


def _response_body(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:
        return _json_bytes(response["parsed_body"])
    body = response.get("body")
    return _bytes(body.get("string") if isinstance(body, dict) else body)


def _bytes(value: object) -> bytes:
    """A body as vcrpy stores it: text, bytes (``!!binary``), the items of an iterator body,
    or none."""
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, list):
        return b"".join(_bytes(item) for item in value)
    if isinstance(value, int | float | bool | dict):
        return _json_bytes(value)
    return str(value).encode()


def _json_bytes(value: object) -> bytes:
    """``value`` as JSON; an interaction whose body holds what JSON cannot (bytes, a set,
    an integer past 64 bits, a key that is not text) is skipped."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        raise _Skip("a body holding a value JSON cannot hold") from None


def _decoded(
    body: bytes, headers: list[tuple[str, str]], bodies: _Bodies
) -> tuple[bytes, list[tuple[str, str]]]:
    """The body decoded of its ``content-encoding`` (the header and the encoded length left
    out), as the recorder stores it; as it is when it does not decode."""
    encodings = [value.strip().lower() for name, value in headers if name == "content-encoding"]
    coding = next((item for item in encodings if item in CODINGS), None)
    decoded = None if coding is None or not body else bodies.decode(body, coding)
    if decoded is None:
        return bodies.take(body, "response"), headers  # vcrpy may have decoded it already
    kept = [
        (name, value)
        for name, value in headers
        if name not in ("content-encoding", "content-length")
    ]
    return decoded, kept


def _count(secrets: Counter[str], where: str, before: object, after: object) -> None:
    """Count the placeholders redaction put into ``after`` that ``before`` did not hold."""
    added = _placeholders(after) - _placeholders(before)
    if added > 0:
        secrets[where] += added


def _placeholders(value: object) -> int:
    if isinstance(value, str):
        return value.count(PLACEHOLDER)
    try:
        return orjson.dumps(value).decode().count(PLACEHOLDER)
    except TypeError:
        return 0


def cassette_files(paths: Iterable[Path]) -> list[tuple[Path, Path]]:
    """The cassettes ``paths`` name — files, and the ``.yaml``, ``.yml`` and ``.json`` files
    under folders — each with its path relative to the folder it was found in (a file given
    alone: its name). Raises :class:`CassetteError` for a path given that is missing, or
    that is neither a folder nor a regular file (a FIFO, a device, a link to one); what a
    folder holds is read, or refused, cassette by cassette."""
    found: list[tuple[Path, Path]] = []
    for given in paths:
        try:
            mode = os.stat(given).st_mode
        except FileNotFoundError:
            raise CassetteError(str(given), "no such cassette or folder") from None
        except OSError as error:
            raise CassetteError(str(given), f"cannot be read ({error.strerror or error})") from None
        if stat.S_ISDIR(mode):
            for suffix in ("*.yaml", "*.yml", "*.json"):
                found += [(path, path.relative_to(given)) for path in sorted(given.rglob(suffix))]
        elif stat.S_ISREG(mode):
            found.append((given, Path(given.name)))
        else:
            raise CassetteError(str(given), not_a_cassette_file(mode))
    return sorted(found, key=lambda pair: str(pair[1]))


# --- many cassettes at once, as ``recordings import`` imports them ---------------------------


@dataclass(frozen=True, slots=True)
class CassetteOutcome:
    """What became of one cassette of a batch: imported into ``destination``, skipped (not a
    test's cassette, with ``--pytest-recording``), or failed with ``error``."""

    cassette: Path
    destination: Path | None = None
    imported: ImportedCassette | None = None
    skipped: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.imported is None:
            why = {"skipped": self.skipped} if self.error is None else {"error": self.error}
            return {"cassette": str(self.cassette), **why}
        return {**self.imported.to_json(), "recording": str(self.destination)}


def import_cassettes(
    found: Iterable[tuple[Path, Path]],
    user: UserRedaction | None,
    *,
    into: Path | None,
    name: str | None,
    pytest_layout: bool,
    max_body_size: int,
    force: bool,
) -> Iterator[CassetteOutcome]:
    """Import each cassette ``found`` (as :func:`cassette_files` finds them), yielding its
    outcome as it is written: into the store under ``name`` or a name made of its path; with
    ``into``, at its path below the folder given; with ``pytest_layout``, where the
    ``openprogram_recording`` fixture reads its test's recording (below ``into``). A
    recording that exists is replaced only with ``force``. Raises
    :class:`~openprogram.errors.RecordingNameError` for a store name that cannot be used."""
    folder = None if into is None else into.expanduser().absolute()
    store = recordings_dir()
    for cassette, relative in found:
        if pytest_layout:
            assert folder is not None
            fixture_path = fixture_recording(cassette.absolute(), relative, folder.parent)
            if fixture_path is None:
                reason = "not a test's cassette where pytest-recording keeps one"
                yield CassetteOutcome(cassette, skipped=reason)
                continue
            destination = folder / fixture_path
        elif folder is not None:
            destination = folder / relative.with_suffix(RECORDING_SUFFIX)
        else:
            stem = name if name is not None else _store_name(relative)
            destination = resolve_recording(stem, store).path
        try:
            if destination.exists() and not force:
                raise CassetteError(
                    str(cassette),
                    f"{destination} exists: pass --force to replace it (nothing was written)",
                )
            imported = import_cassette(cassette, user, max_body_size=max_body_size)
            write_imported(imported, destination)
        except (CassetteError, RecordingFileError) as error:
            yield CassetteOutcome(cassette, error=str(error))
            continue
        yield CassetteOutcome(cassette, destination, imported)


def _store_name(relative: Path) -> str:
    """A store name for a cassette found at ``relative``: its path's parts joined by ``-``,
    without the suffix, made a safe name (as a test's recording is)."""
    return safe_file_name("-".join(relative.with_suffix("").parts))


def fixture_recording(cassette: Path, relative: Path, base: Path) -> Path | None:
    """Where the ``openprogram_recording`` fixture reads the recording of the test whose
    pytest-recording cassette is ``cassette`` (found at ``relative`` below the folder
    given), or None when it is not at ``<test folder>/cassettes/<module>/<test>.<ext>``:
    ``<module path>/<test>.jsonl`` in the recordings folder, the module path being the test
    file's path relative to ``base`` (the folder that holds the recordings folder, as the
    fixture counts it) with its folders joined by ``.``; the test's ``[parameters]`` written
    ``-parameters``; each part made a safe name."""
    parts = relative.parts
    if len(parts) < 3 or parts[-3] != "cassettes":
        return None
    test_folder = cassette.parent.parent.parent
    try:
        folders = test_folder.relative_to(base).parts
    except ValueError:
        folders = parts[:-3]
    module = ".".join((*folders, parts[-2]))
    test = relative.stem
    if test.endswith("]") and "[" in test:
        function, _, parameters = test[:-1].partition("[")
        test = f"{function}-{parameters}"
    return Path(safe_file_name(module)) / f"{safe_file_name(test)}{RECORDING_SUFFIX}"
