"""Record/replay above both boundaries: the provider registry and HTTP (every captured
client library), and the tapes.

    startup           which way in decides for a starting Python process (exec's plan, then
                      the configuration), once, before its first line: the one place that
                      decides, called by the start-up hook and exec's ``sitecustomize``
    model_layer       the configured mode in a process: model traffic recorded, replayed or
                      refused, every other connection left alone, the problems said at exit
    plan              ``RecordReplayPlan``: what to activate (mode, recording, settings), and
                      its JSON form for the processes of ``openprogram exec``
    boundaries        one plan made into both boundaries' parts (one writer, or one replay
                      session, shared), installed process-wide for a block
    placeholder_keys  the API keys set under replay where a vendor has none
    uncaught_errors   an uncaught openprogram error shown short, at a process's end
    context_manager   ``record_replay()``, the library's way in for a block of code
    children          the child processes a block starts: a Python one inherits its plan,
                      any other runs in a loopback-only namespace, is refused, or is named
    connection_guard  the socket-level backstop: under replay, every connection and datagram
                      no recording serves is refused before it is made or sent
    configured        what the configured mode turns on: the provider runtime's activation,
                      and the configuration (and ``exec``'s flags) resolved into one plan
    exec_environment  ``openprogram exec``'s child environment with its ``sitecustomize``,
                      and the checks made before running
    exec_run          ``openprogram exec``: the run itself
    exec_child        what the ``sitecustomize`` does in each Python process of the command

Importing this package imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.activation.context_manager import RecordReplay, record_replay
    from openprogram.activation.placeholder_keys import PLACEHOLDER_API_KEY
    from openprogram.activation.plan import RecordReplayPlan

_EXPORTS = {
    "PLACEHOLDER_API_KEY": "openprogram.activation.placeholder_keys",
    "RecordReplay": "openprogram.activation.context_manager",
    "RecordReplayPlan": "openprogram.activation.plan",
    "record_replay": "openprogram.activation.context_manager",
}
__all__ = [*_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
