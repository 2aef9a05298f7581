"""Redacting what a tape records, paying for a redactor only when a value holds text.

Credentials are text: a call whose arguments and result hold no string (the clock, a random
draw, a count) has nothing to redact, and building a redactor — reading the environment for
the credentials this process knows — would cost more than the call. :class:`TapeRedaction`
makes the redactor the first time a value holding a string (a key or a value) is redacted,
and only once per call — and reuses the last one made while the environment (where the
known credentials come from) has not changed since.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.recording.redaction import SecretRedactor
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["TapeRedaction", "holds_text"]


def holds_text(value: Any) -> bool:
    """Whether ``value`` (JSON) holds a string anywhere, a key included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            return True
        if isinstance(item, dict):
            if item:
                return True  # every key is a string
        elif isinstance(item, list):
            stack.extend(item)
    return False


class TapeRedaction:
    """The redaction of one taped call: arguments as configuration (all rules, field names
    included: a ``password`` argument), results and messages as content (by shape and known
    value), the user's own redaction (``user``) after the built-in rules."""

    __slots__ = ("_redactor", "_user")

    def __init__(self, user: UserRedaction | None = None) -> None:
        self._redactor: SecretRedactor | None = None
        self._user = user

    @property
    def redactor(self) -> SecretRedactor:
        if self._redactor is None:
            self._redactor = current_redactor(self._user)
        return self._redactor

    def arguments(self, value: dict[str, Any]) -> dict[str, Any]:
        return dict(self.redactor.redact(value)) if holds_text(value) else value

    def content(self, value: Any) -> Any:
        return self.redactor.redact_model_output(value) if holds_text(value) else value


_last: tuple[object, int, UserRedaction | None, SecretRedactor] | None = None
_last_lock = threading.Lock()


def current_redactor(user: UserRedaction | None = None) -> SecretRedactor:
    """A redactor knowing the credentials the environment holds now, applying ``user`` after
    the built-in rules: the one made last if the environment and ``user`` are the same as
    then (the environment compared whole, which costs far less than reading it for
    credentials again), else a new one."""
    global _last
    from openprogram.recording import redaction

    data = getattr(os.environ, "_data", None)  # the raw mapping (CPython); else no reuse
    remembered = len(redaction._remembered_variables)
    with _last_lock:
        last = _last
        if (
            data is not None
            and last is not None
            and last[1] == remembered
            and last[2] is user
            and last[0] == data
        ):
            return last[3]
    made = redaction.SecretRedactor(user=user)
    if data is not None:
        with _last_lock:
            _last = (dict(data), remembered, user, made)
    return made
