"""User redaction: the patterns and functions a user adds to the built-in rules.

The built-in rules (:mod:`~openprogram.recording.redaction`) remove credentials; a user adds
what only they know is private — customer ids, internal host names, a house token format:

* **patterns** — regular expressions (``record_replay.redact_patterns`` in the configuration,
  ``redact_patterns=`` of :func:`openprogram.record_replay`). Each match is replaced by the
  placeholder ``[secret removed]``; a pattern with a group named ``secret`` replaces only
  what that group matched (``customer-(?P<secret>\\d+)`` keeps ``customer-``);
* **functions** — a callable taking a string and returning it with the user's secrets
  replaced (``redact=`` of :func:`openprogram.record_replay`, or :func:`register_redactor` for
  the whole process; ``recordings scan --redactor module:attr`` loads one by name).

:class:`UserRedaction` holds both, and a :class:`~openprogram.recording.redaction. SecretRedactor`
given one applies it to every string it redacts, after the built-in rules: every value written to a
recording, and both sides of every comparison replay makes. A function must therefore be
deterministic and leave its own output as it is (``f(f(text)) == f(text)``); like a pattern, it sees
model output and the JSON text of tool calls' arguments too.

**The fingerprint** (:attr:`UserRedaction.fingerprint`, stored in a new recording's header as
``redaction_fingerprint``) is ``sha256:`` and 16 hex digits of the canonical JSON of the
patterns' sources, in order, and the functions' *names*: the ``name`` given to
:func:`register_redactor` or ``record_replay(redact_name=…)``, else the function's
``module:qualname``. Equal fingerprints mean the same patterns and the same function names;
a function whose rules change keeps its fingerprint unless its name changes (give it a new
``name`` then). A recording without user redaction has no fingerprint (null)."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson

from openprogram.errors import UserRedactionError
from openprogram.named_objects import NotAModuleAttributeName, load_named_object
from openprogram.recording.token_shapes import PLACEHOLDER

__all__ = [
    "Redactor",
    "UserRedaction",
    "compile_redact_pattern",
    "load_redactor",
    "register_redactor",
    "registered_redactor",
    "substitute_pattern",
    "user_redaction_in_effect",
]

Redactor = Callable[[str], str]
"""A user's redaction function: a string in, the same string with secrets replaced out."""

SECRET_GROUP = "secret"


def compile_redact_pattern(source: str) -> re.Pattern[str]:
    """``source`` compiled; :class:`UserRedactionError` naming it when it is not a regular
    expression, or when it would change the placeholder itself (redacting twice would then
    keep changing the text)."""
    try:
        pattern = re.compile(source)
    except re.error as error:
        raise UserRedactionError(
            f"{source!r} is not a regular expression ({error}): write a Python regular "
            "expression, like 'ACME-[0-9]{6}'"
        ) from None
    if substitute_pattern(pattern, PLACEHOLDER) != PLACEHOLDER:
        raise UserRedactionError(
            f"{source!r} matches part of the placeholder {PLACEHOLDER!r} itself, so redacting "
            "a redacted recording would change it again: make the pattern more specific"
        )
    return pattern


def substitute_pattern(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with the matches of a user's pattern replaced (only its ``secret`` group's
    part, when it has one; an empty match changes nothing)."""
    if SECRET_GROUP in pattern.groupindex:
        return pattern.sub(_secret_group, text)
    return pattern.sub(_whole_match, text)


def _whole_match(match: re.Match[str]) -> str:
    return PLACEHOLDER if match.end() > match.start() else ""


def _secret_group(match: re.Match[str]) -> str:
    start, end = match.span(SECRET_GROUP)
    if start < 0 or end == start:
        return match.group(0)
    base = match.start()
    whole = match.group(0)
    return whole[: start - base] + PLACEHOLDER + whole[end - base :]


def function_name(function: Redactor) -> str:
    """``module:qualname`` of a function (what its fingerprint names it by)."""
    module = getattr(function, "__module__", None) or "?"
    qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}:{qualname}"


@dataclass(frozen=True)
class UserRedaction:
    """A user's patterns and functions, applied after the built-in rules."""

    patterns: tuple[re.Pattern[str], ...] = ()
    functions: tuple[tuple[str, Redactor], ...] = ()
    """(name, function) pairs, applied in order."""

    @classmethod
    def of(
        cls, *, patterns: Iterable[str] = (), functions: Iterable[tuple[str | None, Redactor]] = ()
    ) -> UserRedaction | None:
        """The redaction of these pattern sources and (name, function) pairs (a None name:
        ``module:qualname``); None when there are neither. Raises
        :class:`UserRedactionError` for a bad pattern."""
        compiled = tuple(compile_redact_pattern(source) for source in dict.fromkeys(patterns))
        named = tuple(
            (name if name else function_name(function), function) for name, function in functions
        )
        if not compiled and not named:
            return None
        return cls(compiled, named)

    @property
    def fingerprint(self) -> str:
        """``sha256:`` and 16 hex digits naming the patterns and the functions (see the
        module's docstring for what it promises)."""
        canonical = orjson.dumps(
            {
                "patterns": [pattern.pattern for pattern in self.patterns],
                "functions": [name for name, _ in self.functions],
            },
            option=orjson.OPT_SORT_KEYS,
        )
        return "sha256:" + hashlib.sha256(canonical).hexdigest()[:16]

    @property
    def names(self) -> list[str]:
        """What it is made of, for messages: each pattern's source, each function's name."""
        return [pattern.pattern for pattern in self.patterns] + [n for n, _ in self.functions]

    def combined(self, other: UserRedaction | None) -> UserRedaction:
        """This redaction, then ``other``'s patterns and functions (each kept once)."""
        if other is None:
            return self
        patterns = tuple(dict.fromkeys(self.patterns + other.patterns))
        seen = {name for name, _ in self.functions}
        functions = self.functions + tuple(pair for pair in other.functions if pair[0] not in seen)
        return UserRedaction(patterns, functions)

    def apply(self, text: str) -> str:
        """``text`` with every pattern's matches, then every function's findings, replaced.
        Raises :class:`UserRedactionError` when a function fails or returns a non-string."""
        for pattern in self.patterns:
            text = substitute_pattern(pattern, text)
        for name, function in self.functions:
            try:
                result = function(text)
            except Exception as error:
                raise UserRedactionError(
                    f"the redaction function {name} failed: {type(error).__name__}: {error}"
                ) from error
            if not isinstance(result, str):
                raise UserRedactionError(
                    f"the redaction function {name} returned {type(result).__name__}, not "
                    "the string it was given with its secrets replaced"
                )
            text = result
        return text


def load_redactor(spec: str) -> Redactor:
    """The function ``module:attr`` names (the current folder importable, as for pytest);
    :class:`UserRedactionError` when it cannot be loaded or is not callable."""
    try:
        value = load_named_object(spec)
    except NotAModuleAttributeName:
        raise UserRedactionError(
            f"a redactor is named module:attr, like my_project.redaction:redact ({spec!r})"
        ) from None
    except (ImportError, AttributeError) as error:
        raise UserRedactionError(f"cannot load the redactor {spec} ({error})") from None
    if not callable(value):
        raise UserRedactionError(
            f"the redactor {spec} is a {type(value).__name__}, not a function str -> str"
        )
    function: Redactor = value
    return function


_registered: UserRedaction | None = None
_registered_lock = threading.Lock()


def register_redactor(function: Redactor | None, *, name: str | None = None) -> None:
    """Make ``function`` the process's redaction function (None: no function any more).

    It applies to every recording started after this call by :func:`openprogram. record_replay` and
    the configured record/replay mode, and by whatever asks :func:`user_redaction_in_effect`, in
    addition to their patterns and any ``redact=`` function given to them. Register it before
    recording starts (at import, in a ``conftest.py``). ``name`` is what the fingerprint names it by
    (default ``module:qualname``): change it when the function's rules change."""
    global _registered
    with _registered_lock:
        _registered = None if function is None else UserRedaction.of(functions=[(name, function)])


def registered_redactor() -> UserRedaction | None:
    """What :func:`register_redactor` registered (None: nothing)."""
    return _registered


def user_redaction_in_effect(
    *, patterns: Iterable[str] = (), redact: Redactor | None = None, redact_name: str | None = None
) -> UserRedaction | None:
    """The user redaction a recording started now uses: ``patterns`` (the configuration's
    ``record_replay.redact_patterns``, and any others the caller has), then the function
    :func:`register_redactor` registered, then ``redact`` (named ``redact_name``); None
    when there is none of them. Raises :class:`UserRedactionError` for a bad pattern."""
    given = UserRedaction.of(patterns=patterns)
    registered = registered_redactor()
    own = None if redact is None else UserRedaction.of(functions=[(redact_name, redact)])
    parts = [part for part in (given, registered, own) if part is not None]
    if not parts:
        return None
    combined = parts[0]
    for part in parts[1:]:
        combined = combined.combined(part)
    return combined
