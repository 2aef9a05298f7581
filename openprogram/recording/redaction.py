"""Remove credentials from everything openprogram writes to a recording.

Redaction is always on. :func:`remove_secret_values` returns a copy of a JSON-like value in
which every secret is replaced by the fixed placeholder ``[secret removed]``. Three families
of rules decide what a secret is:

* **By field name.** A dict entry whose key is a secret field name (compared
  case-insensitively, with ``-``, ``_`` and camelCase spellings treated as the same name) and
  whose value is a string or a number is replaced whole. If the value is an object or a list
  it is walked into instead, so a JSON Schema with a property called ``token`` stays a schema.
* **By value shape**, in every remaining string (dict keys included), at word boundaries and
  with minimum lengths so that prose survives (:mod:`~openprogram.recording.token_shapes`
  lists them): ``Bearer <16+ credential characters>``, ``sk-<20+ key characters>``, GitHub
  tokens (``ghp_…``, ``github_pat_…``), AWS access key ids (``AKIA…``) and secret keys in
  assignments, Slack tokens and webhooks, Google API keys (``AIza…``), JWTs, PEM private key
  blocks, ``password=``-style assignments (``password: hunter2!``, ``secret = "x"``: the
  value only), secret-named URL query parameters (``?api_key=…``, ``&access_token=…``,
  Google's ``?key=…``) and the password in URL userinfo (``https://user:pass@host``). The
  JSON text of a value redacts like the value itself, so tool-call arguments streamed as
  text and the same arguments parsed come out alike.
* **By known value.** The literal values, 8 characters or longer, of the credentials this
  process knows are removed wherever they appear in text: the call's own ``options.api_key``,
  the values of environment variables whose names look like credentials (ending in
  ``API_KEY``, ``_TOKEN``, ``_SECRET``, ``_PASSWORD`` or ``ACCESS_KEY``), and of any variable
  a provider reads its key from (:func:`remember_secret_variable`); see
  :func:`known_secret_values`.

Which rules apply depends on who wrote the value (:meth:`SecretRedactor.redact_request`):

* **What the caller sends as configuration** — the ``model`` (its ``headers`` included), the
  ``options`` (``headers`` and ``metadata`` included), the tool definitions and the system
  prompt: all three families.
* **Model-produced content and the conversation** — every event (text deltas, tool-call
  arguments in ``toolcall_delta``, ``toolcall_end`` and ``done`` rows, the final message) and
  a request's ``context.messages`` (user text, tool results, earlier assistant replies and
  their tool-call arguments): the value-shape and known-value rules only, never the
  field-name rule (:meth:`SecretRedactor.redact_model_output`). A tool call's arguments are
  therefore redacted identically in its delta, end and done rows, and replay runs a tool
  with the arguments the model produced (``{"password": "hunter2!"}`` stays), unless they
  held a known key or a key-shaped value.

An HTTP request (:meth:`SecretRedactor.redact_http_request`) follows the same rule: its
headers and a JSON body are configuration, except the body's top-level conversation keys
(each vendor API's, handed down as :attr:`~openprogram.recording.wire_rules.WireRules.
conversation_keys`: ``messages``, ``input``, ``system``, ``prompt``, ``instructions``,
``contents``, …), redacted as conversation; its URL and a text body by value.

The vendor APIs' part of these rules — their key headers, the shapes of their keys, their
conversation keys — is handed down to the core as data
(:mod:`~openprogram.recording.wire_rules`); every redactor applies all of it. An HTTP
response is model output (:meth:`SecretRedactor.redact_model_output`), its headers excepted,
which are redacted as configuration.

Redaction covers credentials only: prompts, replies, tool results and personal data stay in the
recording exactly as they were. Replay redacts both sides again before comparing, so the result of
redaction must not change when it is redacted a second time; the text rules are therefore repeated
until nothing more changes (one extra pass, and only for strings that held a secret).

**The rules are versioned.** Bump :data:`REDACTION_VERSION` whenever a rule changes; a new
recording's header stores it as ``redaction_version``, and, when the user adds redaction
rules of their own (:mod:`~openprogram.recording.user_redaction`), their fingerprint as
``redaction_fingerprint`` (absent or null: none). When both equal this openprogram's,
redacting a recorded request again changes nothing, so replay compares recorded requests as
stored; otherwise it redacts each again with the current rules before comparing.
:func:`recorded_redaction_is_current` is that one decision."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from openprogram.recording.token_shapes import (
    PLACEHOLDER,
    CredentialRules,
    credential_rules,
    normalized_field_name,
)
from openprogram.recording.wire_rules import wire_rules

if TYPE_CHECKING:
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "REDACTION_VERSION",
    "RequestRedactor",
    "SecretRedactor",
    "is_secret_field_name",
    "known_secret_values",
    "recorded_redaction_is_current",
    "remember_secret_variable",
    "remove_secret_values",
]

REDACTION_VERSION = 4
"""2: model-produced content and the conversation are no longer redacted by field name.
3: the token shapes of :mod:`~openprogram.recording.token_shapes` (GitHub, AWS, Slack,
Google, JWTs, PEM private keys, ``password=``-style assignments), and JSON escapes count as
white space before a shape. 4: a URL's ``key=`` query parameter (Google's API key), and
Gemini's ``contents`` and ``systemInstruction`` are conversation."""

RequestRedactor = Callable[[dict[str, Any]], dict[str, Any]]
"""Redacts a request's sections, as its boundary redacts them: for the provider boundary
:meth:`SecretRedactor.redact_request`, for HTTP :meth:`SecretRedactor.redact_http_request`."""

MIN_KNOWN_SECRET_LENGTH = 8
"""Known secret values shorter than this are ignored: too likely to be ordinary words."""

_CREDENTIAL_ENV_SUFFIXES = ("API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "ACCESS_KEY")

# Variables a provider reads its key from that do not look like credentials by name
# (``api_key_env = "GPU_BOX_KEY"``): remembered for the life of the process.
_remembered_variables: set[str] = set()

# A rule that removed one secret can reveal the shape of another (a known key glued to
# "Bearer …"), so the text rules repeat until the text stops changing. Two passes are the
# norm; the bound only guards against a pathological known value.
_MAX_PASSES = 4

# Strings this long are remembered once redacted, with the rules that redacted them (the
# oldest forgotten first, past a count or a total size); shorter ones are mostly streamed
# deltas, each seen once.
_REMEMBERED_LENGTH = 64
_REMEMBERED_TEXTS = 4096
_REMEMBERED_CHARACTERS = 16_000_000
_remembered: dict[tuple[str, int], str] = {}
_remembered_size = 0
_remembered_lock = threading.Lock()

# No token shape fits in fewer characters of letters and digits only (an AWS key id has 20).
_SHORTEST_SHAPE = 20

_rule_sets: dict[tuple[tuple[str, ...], UserRedaction | None], int] = {}
"""Each set of rules (known values, user redaction) seen, numbered for the process's life."""


def is_secret_field_name(name: str) -> bool:
    """Whether ``name`` is a secret field name, ignoring case, ``-``, ``_`` and camelCase."""
    return normalized_field_name(name) in credential_rules().normalized_names


def remember_secret_variable(name: str) -> None:
    """Treat the environment variable ``name`` as holding a credential from now on.

    Providers call this for the variable they read their key from (``api_key_env``), so its value is
    removed from recordings and messages even when the name does not look like a credential's."""
    if name:
        _remembered_variables.add(name.upper())


def known_secret_values(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values (8+ characters) of environment variables that hold credentials.

    A variable holds a credential when its name ends in ``API_KEY``, ``_TOKEN``, ``_SECRET``,
    ``_PASSWORD`` or ``ACCESS_KEY`` (any case), or when a provider named it as the variable it reads
    its key from (:func:`remember_secret_variable`). ``environ`` defaults to :data:`os.environ`."""
    source = os.environ if environ is None else environ
    values: set[str] = set()
    remembered = _remembered_variables
    for name in source:  # names first: only credential variables have their value read
        upper = name.upper()
        if upper.endswith(_CREDENTIAL_ENV_SUFFIXES) or upper in remembered:
            value = source[name]
            if len(value) >= MIN_KNOWN_SECRET_LENGTH:
                values.add(value)
    return frozenset(values)


def remove_secret_values(value: object, *, known_secrets: Iterable[str] | None = None) -> Any:
    """A copy of ``value`` with every secret replaced by :data:`PLACEHOLDER`, by all three
    families of rules (as for configuration; see :meth:`SecretRedactor.redact_request`).

    ``value`` is JSON-like: dicts, lists, tuples (returned as lists), strings, numbers,
    booleans and ``None``; any other object is returned as it is. The input is never
    modified. ``known_secrets`` are literal values to remove wherever they appear; when it is
    ``None`` the credentials found by :func:`known_secret_values` are used."""
    return SecretRedactor(known_secrets).redact(value)


class SecretRedactor:
    """:func:`remove_secret_values` with the known values prepared once, for many values.

    The recorder makes one per call and redacts every event of the call with it."""

    __slots__ = ("_rules",)

    def __init__(
        self, known_secrets: Iterable[str] | None = None, *, user: UserRedaction | None = None
    ) -> None:
        """``user``: the user's own patterns and functions, applied to every string after
        the built-in rules (:mod:`~openprogram.recording.user_redaction`)."""
        if known_secrets is None:
            known_secrets = known_secret_values()
        self._rules = _Rules(_prepare_known(known_secrets), user)

    @classmethod
    def for_request(
        cls, api_key: str | None, *, user: UserRedaction | None = None
    ) -> SecretRedactor:
        """A redactor knowing the credential variables' values and the call's own key."""
        known = known_secret_values()
        return cls(known | {api_key} if api_key else known, user=user)

    @property
    def known_values(self) -> tuple[str, ...]:
        """The literal credentials it removes wherever they appear, longest first."""
        return self._rules.known

    @property
    def user(self) -> UserRedaction | None:
        """The user redaction it applies after the built-in rules."""
        return self._rules.user

    @property
    def rules(self) -> Hashable:
        """What this redactor removes, as a value: two redactors with equal ``rules`` redact
        every value alike (so a value one redacted need not be redacted by the other): the
        known values and the user redaction, as one number for the life of the process."""
        return self._rules.identity

    def redact(self, value: object) -> Any:
        """A copy of the JSON-like ``value`` with every secret replaced (all three rules:
        for configuration the caller sends)."""
        return _redact_value(value, self._rules)

    def redact_model_output(self, value: object) -> Any:
        """A copy of the JSON-like ``value`` redacted as model-produced content or
        conversation: by value shape and known value only, never by field name."""
        return _redact_content(value, self._rules)

    def redact_parsed_output(self, value: object, text: str | bytes) -> Any:
        """:meth:`redact_model_output` of ``value``, the JSON ``text`` parsed: ``value`` itself when
        the text holds nothing to remove (one pass of the rules over the whole text instead of one
        per string; a streamed delta is a few hundred characters of JSON around one short string).

        Every string and key of ``value`` is a substring of ``text`` between quotes when the text
        holds no backslash escape, and the shapes end at a quote as they end at the end of a string,
        so the text holding no match means no string does. A text with an escape, or rules with the
        user's own redaction (a function may look at whole values), are walked value by value."""
        raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if (
            self._rules.user is None
            and "\\" not in raw
            and _redact_text_once(raw, self._rules) == raw
        ):
            return value
        return _redact_content(value, self._rules)

    def redact_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """A request (``{"model", "context", "options"}``) redacted: its conversation,
        ``context.messages``, as model output, everything else as configuration. Replay
        applies it to both the recorded and the incoming request before comparing."""
        redacted: dict[str, Any] = {}
        for section, value in request.items():
            if section == "context" and isinstance(value, dict):
                redacted[section] = {
                    key: (
                        _redact_content(item, self._rules)
                        if key == "messages"
                        else _redact_value(item, self._rules)
                    )
                    for key, item in value.items()
                }
            else:
                redacted[section] = _redact_value(value, self._rules)
        return redacted

    def redact_http_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """An HTTP request's sections (``method``, ``url``, ``headers``, a body form)
        redacted: ``headers`` by name and value, ``url`` and ``body_text`` by value, a JSON
        ``body`` as configuration except its conversation keys (those of the wire rules, by
        value only); ``method`` and ``body_base64`` (bytes openprogram cannot read) are
        kept. Replay applies it to both the recorded and the incoming request."""
        redacted: dict[str, Any] = {}
        conversation = wire_rules().conversation_keys
        for section, value in request.items():
            if section == "body" and isinstance(value, dict):
                redacted[section] = {
                    (_redact_text(key, self._rules) if isinstance(key, str) else key): (
                        _redact_content(item, self._rules)
                        if key in conversation
                        else _redact_entry(key, item, self._rules)
                    )
                    for key, item in value.items()
                }
            elif section in ("method", "body_base64"):
                redacted[section] = value
            else:
                redacted[section] = _redact_value(value, self._rules)
        return redacted

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced (the value-shape and known-value rules)."""
        return _redact_text(text, self._rules)


class _Rules:
    """What one redactor applies: the credential rules in force, the known values, longest
    first, and the user's redaction."""

    __slots__ = ("credentials", "identity", "known", "user")

    def __init__(self, known: tuple[str, ...], user: UserRedaction | None) -> None:
        self.credentials: CredentialRules = credential_rules()
        self.known = known
        self.user = user
        with _remembered_lock:
            self.identity = _rule_sets.setdefault((known, user), len(_rule_sets))
        """The same number for the same rules, for as long as the process lives."""


def _prepare_known(known_secrets: Iterable[str]) -> tuple[str, ...]:
    """Usable known values, longest first so a key containing another is removed whole."""
    usable = {
        secret
        for secret in known_secrets
        if len(secret) >= MIN_KNOWN_SECRET_LENGTH
        and secret not in PLACEHOLDER
        and PLACEHOLDER not in secret
    }
    return tuple(sorted(usable, key=len, reverse=True))


def _redact_value(value: object, rules: _Rules) -> Any:
    if isinstance(value, str):
        return _redact_text(value, rules)
    if isinstance(value, dict):
        return {
            (_redact_text(key, rules) if isinstance(key, str) else key): _redact_entry(
                key, item, rules
            )
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact_value(item, rules) for item in value]
    return value


def _redact_content(value: object, rules: _Rules) -> Any:
    if isinstance(value, str):
        return _redact_text(value, rules)
    if isinstance(value, dict):
        return {
            (_redact_text(key, rules) if isinstance(key, str) else key): _redact_content(
                item, rules
            )
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact_content(item, rules) for item in value]
    return value


def _redact_entry(key: object, value: object, rules: _Rules) -> Any:
    if (
        isinstance(key, str)
        and isinstance(value, str | int | float)
        and not isinstance(value, bool)
        and normalized_field_name(key) in rules.credentials.normalized_names
    ):
        return PLACEHOLDER
    return _redact_value(value, rules)


def _redact_text(text: str, rules: _Rules) -> str:
    if len(text) >= _REMEMBERED_LENGTH:
        # A conversation is sent again with every call, and with it its tool definitions,
        # system prompt, tool results and earlier replies: each is redacted once per process.
        key = (text, rules.identity)
        remembered = _remembered.get(key)
        if remembered is None:
            remembered = _redact_text_passes(text, rules)
            _remember(key, remembered)
        return remembered
    if len(text) < _SHORTEST_SHAPE and text.isalnum():  # "role", "toolCall": no shape fits
        return _redact_known_and_user(text, rules)
    return _redact_text_passes(text, rules)


def _remember(key: tuple[str, int], redacted: str) -> None:
    global _remembered_size
    with _remembered_lock:
        if key in _remembered:
            return
        _remembered[key] = redacted
        _remembered_size += len(key[0])
        while len(_remembered) > _REMEMBERED_TEXTS or _remembered_size > _REMEMBERED_CHARACTERS:
            oldest = next(iter(_remembered))
            del _remembered[oldest]
            _remembered_size -= len(oldest[0])


def _redact_known_and_user(text: str, rules: _Rules) -> str:
    if rules.user is not None:
        return _redact_text_passes(text, rules)
    for secret in rules.known:
        if secret in text:
            return _redact_text_passes(text, rules)
    return text


def _redact_text_passes(text: str, rules: _Rules) -> str:
    for _ in range(_MAX_PASSES):
        redacted = _redact_text_once(text, rules)
        if redacted == text:
            break
        text = redacted
    return text


def _redact_text_once(text: str, rules: _Rules) -> str:
    # Each shape runs only when the text holds a substring that every match must contain;
    # most strings (streamed deltas) hold none and cost a few substring checks.
    credentials = rules.credentials
    lower = text.lower()
    present = {hint for hint in credentials.hints_lower if hint in lower}
    if present:
        for shape, hints in zip(credentials.shapes, credentials.shape_hints, strict=True):
            if not present.isdisjoint(hints) and shape.may_match(text, lower):
                redacted = shape.sub(text)
                if redacted != text:
                    text = redacted
                    lower = text.lower()
    for secret in rules.known:
        if secret in text:
            text = text.replace(secret, PLACEHOLDER)
    if rules.user is not None:
        text = rules.user.apply(text)
    return text


def recorded_redaction_is_current(header: dict[str, Any], user: UserRedaction | None) -> bool:
    """Whether the recording with ``header`` was redacted by the rules in force now: the
    same ``redaction_version`` and the fingerprint of ``user``, the user redaction in force
    (None: there is none)."""
    return header.get("redaction_version") == REDACTION_VERSION and header.get(
        "redaction_fingerprint"
    ) == (None if user is None else user.fingerprint)
