"""openprogram: record an LLM agent session at the provider boundary, replay it offline.

Importing this package (or :mod:`openprogram.providers`) has no side effects: it registers
no provider, reads no configuration and opens no file. It states where the recording core
finds the vendor APIs' wire rules (:mod:`openprogram.recording.wire_rules`), loaded when the
core first needs them. See ``docs/`` for the guides, and
``docs/architecture.md`` for how the packages below depend on each other. (A process whose
configured record/replay mode is on imports it as it starts, before pytest can mark it for
assertion rewriting: PYTEST_DONT_REWRITE keeps pytest from warning about it.)

:func:`record_replay` (from :mod:`openprogram.activation`) records or replays a block of
code at both boundaries: the provider registry and every httpx / httpx2 client, so the
official ``openai`` and ``anthropic`` SDKs too. :func:`register_redactor` adds the user's own
redaction function to every recording started after it, and :func:`user_redaction_in_effect`
says what user redaction a recording started now uses. They are imported on first use.

    errors             every public exception, in one tree; imports nothing of openprogram
    recording          the core: the format, the strict reader, the writer, redaction, the
                       first difference and its report, replay by content or order
    providers          the provider layer: types, events, the registry, the vendor providers
    provider_boundary  record/replay at the provider registry
    http_boundary      record/replay at HTTP, one adapter per client library
    tape_boundary      tapes: taped functions, the clock and randomness, agent tools
    vendors            one module per model API: how its calls and replies read, its
                       streamed pieces, usage and the model-traffic rule
    store              the recordings folder: names, list, show, scan, diff, status, switching
    config             ``config.toml`` and the ``OPENPROGRAM_…`` variables
    activation         record/replay turned on for a block, a process, or ``openprogram exec``
    serving            ``openprogram serve``, the recording proxy for programs in any
                       language, and ``exec`` of a program that is not Python
    agent              the built-in agent loop ``openprogram run`` uses
    harness            sessions re-run under replay (``verify``) and the offline demo
    drift              recorded calls re-sent live, and how the provider's answers drifted
    importing          other tools' files made into recordings: vcrpy cassettes
    isolation          commands held by the operating system: a loopback-only network
                       namespace as the user, the relay for what is bridged into it, and
                       the connections a command opens below Python, seen under record
    testing            the pytest plugin
    cli                the ``openprogram`` command line
    json_nesting       the one nesting limit every reader of JSON-like values agrees on
    body_limit         the one default for how large a body is held whole in memory
    private_files      files written ``0600``, folders ``0700``, replaced atomically
    named_objects      what a ``module:attr`` name on the command line points at
    wording            how a count and a set of calls read in every message
    deterministic_sources  the seed and clocks a recording draws ``now()`` and
                       ``random()`` from, and the zone a deterministic clock runs in
    visible_text       untrusted text shown as text: control characters as their escapes
    lazy_exports       package exports loaded on first use
    quiet_threads      helper threads that leave every signal to the main thread
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.activation.context_manager import record_replay
    from openprogram.deterministic_sources import sequence_clock, stepping_clock
    from openprogram.recording.user_redaction import register_redactor, user_redaction_in_effect
    from openprogram.tape_boundary.taped_functions import now, random, seeded_random, taped

__version__ = "0.1.0"


def _vendor_wire_rules() -> object:
    """Every vendor API's rules for the recording core (:data:`openprogram.vendors.
    WIRE_RULES`), loaded the first time the core needs them: the core never imports the
    vendors, it asks for their rules here, where every import of openprogram passes."""
    return importlib.import_module("openprogram.vendors").WIRE_RULES


_EXPORTS: dict[str, str] = {
    "now": "openprogram.tape_boundary.taped_functions",
    "random": "openprogram.tape_boundary.taped_functions",
    "record_replay": "openprogram.activation.context_manager",
    "register_redactor": "openprogram.recording.user_redaction",
    "seeded_random": "openprogram.tape_boundary.taped_functions",
    "sequence_clock": "openprogram.deterministic_sources",
    "stepping_clock": "openprogram.deterministic_sources",
    "taped": "openprogram.tape_boundary.taped_functions",
    "user_redaction_in_effect": "openprogram.recording.user_redaction",
}
__all__ = ["__version__", *_EXPORTS]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
