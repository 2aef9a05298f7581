"""openprogram: record an LLM agent session at the provider boundary, replay it offline.

Importing this package (or :mod:`openprogram.providers`) has no side effects: it registers
no provider, reads no configuration and opens no file. See ``docs/`` for the guides.

:func:`record_replay` (from :mod:`openprogram.activation`) records or replays a block of
code at both boundaries: the provider registry and every httpx / httpx2 client, so the
official ``openai`` and ``anthropic`` SDKs too. :func:`register_redactor` adds the user's own
redaction function to every recording started after it, and :func:`user_redaction_in_effect`
says what user redaction a recording started now uses. They are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.activation.context_manager import record_replay
    from openprogram.recording.user_redaction import register_redactor, user_redaction_in_effect
    from openprogram.tape_boundary.taped_functions import now, random, seeded_random, taped

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "now",
    "random",
    "record_replay",
    "register_redactor",
    "seeded_random",
    "taped",
    "user_redaction_in_effect",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "now": "openprogram.tape_boundary.taped_functions",
        "random": "openprogram.tape_boundary.taped_functions",
        "record_replay": "openprogram.activation.context_manager",
        "register_redactor": "openprogram.recording.user_redaction",
        "seeded_random": "openprogram.tape_boundary.taped_functions",
        "taped": "openprogram.tape_boundary.taped_functions",
        "user_redaction_in_effect": "openprogram.recording.user_redaction",
    },
)
