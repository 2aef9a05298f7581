"""Whether a recording's requests were redacted by the rules in force now.

A recording's header names the rules its values were redacted with: ``redaction_version``
(:data:`~openprogram.recording.redaction.REDACTION_VERSION` when it was written) and, when
the user adds redaction rules of their own, ``redaction_fingerprint`` (absent or null: none).
When both equal this openprogram's, redacting a recorded request again changes nothing, so
replay compares recorded requests as stored; otherwise it redacts each again with the
current rules before comparing. :func:`recorded_redaction_is_current` is that one decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.recording.redaction import REDACTION_VERSION

if TYPE_CHECKING:
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["recorded_redaction_is_current"]


def recorded_redaction_is_current(header: dict[str, Any], user: UserRedaction | None) -> bool:
    """Whether the recording with ``header`` was redacted by the rules in force now: the
    same ``redaction_version`` and the fingerprint of ``user``, the user redaction in force
    (None: there is none)."""
    return header.get("redaction_version") == REDACTION_VERSION and header.get(
        "redaction_fingerprint"
    ) == (None if user is None else user.fingerprint)
