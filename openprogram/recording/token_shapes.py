"""The shapes of credentials: the patterns redaction finds in text, each with its kind.

Every :class:`TokenShape` names a *kind* of credential (``github-token``, ``jwt``, …), the
pattern that finds one in a string, and what a found one becomes: the whole match replaced
by :data:`PLACEHOLDER`, or only its value when a prefix says what it is (``Bearer …``,
``?api_key=…``, ``password=…``). :data:`TOKEN_SHAPES` lists them in the order redaction
applies them; ``openprogram recordings scan`` reports a finding under the kind of the first
shape that matches it. The shapes here name no vendor; the vendor APIs add theirs (the shape
of their keys, their key header's name, a key passed as ``?key=…``) as data handed down
(:mod:`~openprogram.recording.wire_rules`), and :func:`credential_rules` is the whole set.

The shapes are written so that prose survives: fixed prefixes, minimum lengths, character
classes that stop at white space and quotes, and, for ``password=``-style assignments, a
value that looks like a credential (see :data:`ASSIGNMENT_NAMES`).

**The JSON text of a value redacts like the value.** A model streams a tool call's
arguments as JSON text (``{"cmd": "mysql --password=hunter2"}`` in ``toolcall_delta`` rows,
``partial_json`` pieces, ``arguments`` strings) and the same arguments also stand parsed in
other rows. Parsing the redacted text gives the redacted value, because no shape matches,
consumes or depends on what JSON escaping changes:

* a match never holds a quote or a backslash (a quoted assignment value is matched inside
  its quotes, escaped ``\\"…\\"`` or not), so it never spans a JSON string's boundary or an
  escape;
* a shape that must not follow a letter also accepts following an escape (``\\n``, ``\\t``,
  ``\\u00e9``), which in the parsed value is a newline, a tab, a character;
* an assignment's name is never quoted: ``password=…`` and ``password: …`` in text are
  assignments, a JSON member ``"password": "…"`` is not (in configuration the field-name rule
  removes it; in model output and the conversation it stays, so a tool called with a
  ``password`` argument replays with what the model gave it).

A PEM private key block (with newlines) is replaced whole, in both forms. A credential the
model streamed split across two deltas is not whole in either: it survives in the delta
rows, where ``recordings scan`` finds it in the reassembled text."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openprogram.recording.wire_rules import KeyShape, WireRules, derived

__all__ = [
    "ASSIGNMENT_NAMES",
    "PLACEHOLDER",
    "SECRET_FIELD_NAMES",
    "TOKEN_SHAPES",
    "CredentialRules",
    "TokenShape",
    "credential_rules",
    "normalized_field_name",
    "shape_kinds",
]

PLACEHOLDER = "[secret removed]"
_PLACEHOLDER_PATTERN = re.escape(PLACEHOLDER)

_ESCAPE_BEFORE = re.compile(r"\\(?:[nrtbf]|u[0-9A-Fa-f]{4})\Z")
_END = r"(?![A-Za-z0-9])"
# White space between a prefix and its value, or its JSON escapes.
_GAP = r"(?:\s|\\[tnr])+"


@dataclass(frozen=True, slots=True)
class TokenShape:
    """One kind of credential: how it is found in text and what it becomes."""

    kind: str
    """A short name, shown by ``recordings scan``: ``github-token``, ``jwt``, …"""
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    """The text a match becomes (the placeholder, or a kept prefix and the placeholder; a
    match it leaves as it is was not a credential after all)."""
    hints: tuple[str, ...]
    """Substrings one of which every match holds (compared with the text as it is, or
    lower-cased when ``hints_lower``): the pattern runs only when one is present, so most
    strings cost a few substring checks."""
    hints_lower: bool = False
    also: str = ""
    """A substring every match holds besides one of the hints ("" for none)."""
    names: tuple[str, ...] = ()
    """For a shape whose match starts with a name (an assignment): what the name must end
    with, lower-cased, without ``-`` and ``_``. The pattern is then tried only from the
    start of each word that holds a hint and is followed by ``=`` or ``:``, instead of at
    every position of the text (a pattern starting with many names costs ten times more)."""

    @property
    def lowered_hints(self) -> frozenset[str]:
        """Its hints, lower-cased (what :attr:`CredentialRules.hints_lower` is made of)."""
        return frozenset(hint.lower() for hint in self.hints)

    def may_match(self, text: str, lower: str) -> bool:
        haystack = lower if self.hints_lower else text
        return (not self.also or self.also in haystack) and any(
            hint in haystack for hint in self.hints
        )

    def matches(self, text: str) -> Iterator[re.Match[str]]:
        """The matches of the pattern in ``text``, left to right, not overlapping."""
        if not self.names:
            yield from self.pattern.finditer(text)
            return
        haystack = text.lower() if self.hints_lower else text
        if len(haystack) != len(text):  # lower() lengthened a letter: every word is a start
            starts: Iterator[int] = (match.start() for match in _WORD.finditer(text))
        else:
            starts = iter(_word_starts(haystack, self.hints))
        end = 0
        for start in starts:
            if start < end:
                continue
            match = self.pattern.match(text, start)
            if match is not None and self._named(match.group("name")):
                end = match.end()
                yield match

    def _named(self, name: str) -> bool:
        return normalized_field_name(name).endswith(self.names)

    def sub(self, text: str) -> str:
        """``text`` with every match replaced."""
        if not self.names:
            return self.pattern.sub(self.replace, text)  # the fast path of most shapes
        parts: list[str] = []
        position = 0
        for match in self.matches(text):
            parts.append(text[position : match.start()])
            parts.append(self.replace(match))
            position = match.end()
        if not parts:
            return text
        parts.append(text[position:])
        return "".join(parts)


_WORD = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]")
_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


_REST_OF_WORD = re.compile(r"[A-Za-z0-9_.-]*[ \t]*")


def _word_starts(haystack: str, hints: tuple[str, ...]) -> list[int]:
    """Where each word (letters, digits, ``_``, ``.``, ``-``) holding a hint and followed by
    ``=`` or ``:`` (after spaces or tabs) starts, in order: where an assignment may start."""
    starts: set[int] = set()
    size = len(haystack)
    for hint in hints:
        found = haystack.find(hint)
        while found >= 0:
            rest = _REST_OF_WORD.match(haystack, found + len(hint))
            end = rest.end() if rest is not None else found + len(hint)
            if end < size and haystack[end] in ":=":
                start = found
                while start > 0 and haystack[start - 1] in _WORD_CHARACTERS:
                    start -= 1
                starts.add(start)
            found = haystack.find(hint, found + 1)
    return sorted(starts)


def starts_a_token(text: str, start: int) -> bool:
    """Whether a token may start at ``start`` of ``text``: not right after a letter or digit,
    unless that letter ends a JSON escape (``\\n``, ``\\t``, ``\\u00e9``), which in the parsed
    value is not a letter. (Checked after a match rather than as a lookbehind, which would
    keep the regular expression engine from skipping ahead to the token's fixed prefix.)"""
    if start == 0 or not text[start - 1].isascii() or not text[start - 1].isalnum():
        return True
    return _ESCAPE_BEFORE.search(text, max(0, start - 6), start) is not None


def _at_token_start(replace: Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    """``replace``, for a match that starts a token; other matches are left as they are."""

    def checked(match: re.Match[str]) -> str:
        if starts_a_token(match.string, match.start()):
            return replace(match)
        return match.group(0)

    return checked


def _whole(match: re.Match[str]) -> str:
    return PLACEHOLDER


def _after_prefix(match: re.Match[str]) -> str:
    """The first group (``Bearer ``, ``?api_key=``, ``password=``) kept, the rest replaced."""
    # A function, not an r"\g<1>" template: templates are several times slower in re.sub.
    return match.group(1) + PLACEHOLDER


def _value_only(match: re.Match[str]) -> str:
    """An assignment with its value (group ``quoted`` or ``bare``) replaced, the rest kept."""
    group = "quoted" if match.group("quoted") is not None else "bare"
    start, end = match.span(group)
    base = match.start()
    whole = match.group(0)
    return whole[: start - base] + PLACEHOLDER + whole[end - base :]


def _userinfo_password(match: re.Match[str]) -> str:
    userinfo = match.group(2)
    _, colon, password = userinfo.partition(":")
    if not colon or not password:
        return match.group(0)
    return match.group(1) + PLACEHOLDER + match.group(3)


# --- secret-named URL query parameters ---------------------------------------------------

_SECRET_FIELD_NAMES: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api_key",
        "api-key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "cookie",
        "set-cookie",
        "secret",
        "client_secret",
        "password",
        "session_key",
    }
)
"""Names whose value is a credential (in any spelling with ``-``, ``_`` or case changed),
besides each vendor API's key header: a field of configuration so named is replaced whole
(:func:`~openprogram.recording.redaction.is_secret_field_name`), and so is the value of a URL
query parameter so named (``?api_key=…``)."""


def normalized_field_name(name: str) -> str:
    """``name`` lower-cased, without ``-`` and ``_``: how secret names are compared."""
    return name.lower().replace("-", "").replace("_", "")


def _any_spelling(normalized_name: str) -> str:
    return "[-_]*" + "[-_]*".join(re.escape(char) for char in normalized_name) + "[-_]*"


_QUERY_VALUE = r"[^&#\s\"'\\]"
"""A character of a URL query parameter's value, as the shapes read one."""


def _query_names(normalized_names: frozenset[str], words: frozenset[str]) -> str:
    """The names of the query parameters whose value is a credential: the secret field
    names, and ``words`` (ordinary words a vendor takes a key by: ``?key=…``), whose value is
    taken for one only from 8 characters on (``?key=1`` stays)."""
    return "|".join(
        [
            *(_any_spelling(name) for name in sorted(normalized_names)),
            *(rf"{re.escape(word)}(?==(?:{_QUERY_VALUE}){{8}})" for word in sorted(words)),
        ]
    )


# --- password=-style assignments ---------------------------------------------------------

ASSIGNMENT_NAMES = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secret_key",
    "client_secret",
    "api_key",
    "access_key",
    "private_key",
    "access_token",
    "auth_token",
    "refresh_token",
    "api_token",
    "bot_token",
    "session_token",
)
"""What an assignment's name ends with (any case, ``-`` or ``_`` or nothing between the words):
``DB_PASSWORD=…``, ``client-secret: …``, ``apiKey = "…"``. An assignment is the name, ``=`` or
``:``, and a value: quoted (``"…"`` or ``'…'``, anything but a quote, a backslash or a line break),
or bare — then 4 or more characters without white space, quotes or brackets, holding a digit or one
of ``! # $ % * + ? @ ^ ~ |``, ended by white space, punctuation or the end (``password: hunter2!``
is one, ``password: required`` and ``password = get_password()`` are not)."""

_NAME = r"(?P<name>[A-Za-z0-9_.-]+)"
"""A named shape's name: the whole word its match starts with (the word must end with one of
the shape's ``names``, :attr:`TokenShape.names`)."""
_BARE_VALUE = (
    r"(?P<bare>(?=[^\s\"'\\,;&<>(){}\[\]`]*[0-9!#$%*+?@^~|])"
    r"[^\s\"'\\,;&<>(){}\[\]`=][^\s\"'\\,;&<>(){}\[\]`]{3,})"
    r"(?=[\s\"'\\,;&<>(){}\[\]`]|$)"
)
_QUOTED_VALUE = r"\\*(?P<quote>[\"'])(?P<quoted>[^\"'\\\r\n]+)\\*(?P=quote)"
_ASSIGNMENT = re.compile(rf"{_NAME}[ \t]*[:=](?![:=])[ \t]*(?:{_QUOTED_VALUE}|{_BARE_VALUE})")

# --- the shapes ----------------------------------------------------------------------------

_PEM_BODY = r"[A-Za-z0-9+/=\s\\:,.-]"
_PEM_LABEL = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

_SHAPES_BEFORE_QUERY: tuple[TokenShape, ...] = (
    TokenShape(
        "private-key",
        re.compile(
            rf"{_PEM_LABEL}(?:{_PEM_BODY}*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:(?:\s|\\[nr])+[A-Za-z0-9+/=]{16,})+)"
        ),
        _whole,
        ("PRIVATE KEY",),
    ),
    TokenShape(
        "bearer-token",
        re.compile(rf"(bearer{_GAP})[A-Za-z0-9._~+/=\-]{{16,}}", re.IGNORECASE),
        _at_token_start(_after_prefix),
        ("bearer",),
        hints_lower=True,
    ),
    TokenShape(
        "jwt",
        re.compile(rf"eyJ[A-Za-z0-9_-]{{5,}}\.eyJ[A-Za-z0-9_-]{{5,}}\.[A-Za-z0-9_-]{{16,}}{_END}"),
        _at_token_start(_whole),
        ("eyJ",),
    ),
    TokenShape(
        "github-token",
        re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        _at_token_start(_whole),
        ("gh", "github_pat_"),
    ),
    TokenShape(
        "aws-access-key-id",
        re.compile(rf"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{{16}}{_END}"),
        _at_token_start(_whole),
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    TokenShape(
        "aws-secret-access-key",
        re.compile(rf"({_NAME}[ \t]*[:=][ \t]*(?:\\*[\"'])?)[A-Za-z0-9/+]{{40}}(?![A-Za-z0-9/+=])"),
        _after_prefix,
        ("secret",),
        hints_lower=True,
        names=("secretaccesskey", "secretkey"),
    ),
    TokenShape(
        "slack-token",
        re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"),
        _at_token_start(_whole),
        ("xox",),
    ),
    TokenShape(
        "slack-webhook",
        re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]{16,}"),
        _after_prefix,
        ("hooks.slack.com",),
    ),
)
_SHAPES_AFTER_QUERY: tuple[TokenShape, ...] = (
    TokenShape(
        "url-password",
        re.compile(rf"(://)((?:{_PLACEHOLDER_PATTERN}|[^\s/?#@\"'\\])+)(@)"),
        _userinfo_password,
        ("://",),
        also="@",
    ),
    TokenShape(
        "password-assignment",
        _ASSIGNMENT,
        _value_only,
        ("pass", "secret", "key", "token"),
        hints_lower=True,
        names=tuple(name.replace("_", "") for name in ASSIGNMENT_NAMES),
    ),
)
"""The core's shapes, in the order redaction applies them, on either side of the one that
finds secret-named query parameters (made from the secret names the rules in force hold)."""


def _query_shape(names: frozenset[str], words: frozenset[str]) -> TokenShape:
    return TokenShape(
        "url-query-credential",
        # Only secret-named parameters are matched, so a credential nested in another
        # parameter's value (``?next=/login?token=…``) is still found.
        re.compile(
            rf"([?&](?:{_query_names(names, words)})=)((?:{_PLACEHOLDER_PATTERN}|{_QUERY_VALUE})+)",
            re.IGNORECASE,
        ),
        _after_prefix,
        ("?", "&"),
        also="=",
    )


def _key_shape(shape: KeyShape) -> TokenShape:
    return TokenShape(shape.kind, re.compile(shape.pattern), _at_token_start(_whole), shape.hints)


@dataclass(frozen=True, slots=True)
class CredentialRules:
    """What redaction finds credentials by: the core's shapes and names with those of the
    wire rules in force."""

    shapes: tuple[TokenShape, ...]
    """Every shape, in the order redaction applies them."""
    field_names: frozenset[str]
    """Every secret field name, as written."""
    normalized_names: frozenset[str]
    """Every secret field name, :func:`normalized_field_name`."""
    hints_lower: tuple[str, ...]
    """Every shape's hints, lower-cased: a text holding none of them (most streamed deltas)
    holds no token shape, so redaction checks these first."""
    shape_hints: tuple[frozenset[str], ...]
    """Each shape's :attr:`TokenShape.lowered_hints`, in the order of :attr:`shapes`."""

    @classmethod
    def of(cls, rules: WireRules) -> CredentialRules:
        """The core's rules with those of ``rules``, each vendor key shape placed before the
        core's shape it names (``ValueError`` when it names none)."""
        names = _SECRET_FIELD_NAMES | rules.credential_names
        normalized = frozenset(normalized_field_name(name) for name in names)
        shapes = [
            *_SHAPES_BEFORE_QUERY,
            _query_shape(normalized, rules.credential_query_words),
            *_SHAPES_AFTER_QUERY,
        ]
        for key_shape in rules.key_shapes:
            kinds = [shape.kind for shape in shapes]
            if key_shape.before not in kinds:
                raise ValueError(
                    f"the key shape {key_shape.kind} goes before {key_shape.before!r}, which "
                    f"is no shape of the core's: name one of {', '.join(kinds)}"
                )
            shapes.insert(kinds.index(key_shape.before), _key_shape(key_shape))
        hints = tuple(dict.fromkeys(hint.lower() for shape in shapes for hint in shape.hints))
        return cls(
            tuple(shapes), names, normalized, hints, tuple(shape.lowered_hints for shape in shapes)
        )


@derived
def credential_rules(rules: WireRules) -> CredentialRules:
    """The credential rules of the wire rules in force."""
    return CredentialRules.of(rules)


def shape_kinds() -> tuple[str, ...]:
    """The kinds of :data:`TOKEN_SHAPES`, in order."""
    return tuple(shape.kind for shape in credential_rules().shapes)


if TYPE_CHECKING:
    TOKEN_SHAPES: tuple[TokenShape, ...]
    SECRET_FIELD_NAMES: frozenset[str]


def __getattr__(name: str) -> object:
    """``TOKEN_SHAPES`` (every shape, in the order redaction applies them) and
    ``SECRET_FIELD_NAMES`` (every secret field name) of the rules in force, made when
    first asked for: the vendors' part is handed down only then."""
    if name == "TOKEN_SHAPES":
        return credential_rules().shapes
    if name == "SECRET_FIELD_NAMES":
        return credential_rules().field_names
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
