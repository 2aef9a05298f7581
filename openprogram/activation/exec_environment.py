"""The environment ``openprogram exec`` runs a command in, and the folder it shares with it.

exec makes a private folder (``0700``) for each run — the *exchange* — holding:

* ``site/sitecustomize.py`` (:data:`SITECUSTOMIZE`), put FIRST on the command's
  ``PYTHONPATH``, so every Python process of the command (children and grandchildren too,
  which inherit the variable) runs it at start-up, before its first line. It takes its own
  folder off ``sys.path`` (so it shadows nothing), activates record/replay from the two
  variables below (:func:`openprogram.activation.exec_child.activate_from_environment`),
  then runs the user's own ``sitecustomize``, the next one on the path, if there is one;
* one handshake file per process that activated (``process-<pid>.json``), and under replay
  each one's report at exit (``report-<pid>.json``) and the claim of the process that
  replays (``replay-claim``): exec reads them when the command has exited.

The two variables: :data:`PLAN_VARIABLE` holds the plan as JSON (resolved once by exec, so
no process reads the configuration again), :data:`EXCHANGE_VARIABLE` the folder. Their
names do not start with ``OPENPROGRAM_``, so the configuration does not take them for
(misspelt) settings.

``PYTHONPATH`` is the folder, then the command's own ``PYTHONPATH`` if it has a non-empty
one: never a trailing separator, which Python would read as the working folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from openprogram.activation.plan import RecordReplayPlan

__all__ = [
    "CLAIM_FILE",
    "EXCHANGE_VARIABLE",
    "PLAN_VARIABLE",
    "SITECUSTOMIZE",
    "Exchange",
    "child_environment",
    "open_exchange",
]

PLAN_VARIABLE = "_OPENPROGRAM_EXEC_PLAN"
EXCHANGE_VARIABLE = "_OPENPROGRAM_EXEC_DIR"
CLAIM_FILE = "replay-claim"
"""In the exchange folder: the pid of the process that replays the recording."""

SITECUSTOMIZE = '''\
"""Written by `openprogram exec`: record/replay in this process from its first line.

It takes its own folder off sys.path, activates record/replay as exec decided
(openprogram.activation.exec_child), then runs your own sitecustomize, if you have one.
"""

import os as _os
import sys as _sys


def _openprogram_exec():
    here = _os.path.dirname(_os.path.abspath(__file__))
    _sys.path[:] = [p for p in _sys.path if not (p and _os.path.abspath(p) == here)]
    try:
        from openprogram.activation.exec_child import activate_from_environment
    except ImportError as error:
        folder = _os.environ.get("_OPENPROGRAM_EXEC_DIR")
        if folder:
            import json

            report = {
                "pid": _os.getpid(),
                "status": "refused",
                "python": _sys.executable,
                "reason": "it cannot import openprogram (%s)" % error,
            }
            try:
                with open(_os.path.join(folder, "process-%d.json" % _os.getpid()), "w") as f:
                    json.dump(report, f)
            except OSError:
                pass
        return
    activate_from_environment()


_openprogram_exec()
_this = _sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # the user's own, the next one on the path
except ImportError as _error:
    if _error.name != "sitecustomize":
        raise
    if _this is not None:
        _sys.modules["sitecustomize"] = _this
'''
"""The ``sitecustomize.py`` exec puts first on the command's ``PYTHONPATH``."""


@dataclass(frozen=True)
class Exchange:
    """The private folder of one exec run."""

    folder: Path

    @property
    def site(self) -> Path:
        """The folder put first on ``PYTHONPATH``: it holds ``sitecustomize.py`` only."""
        return self.folder / "site"

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def open_exchange() -> Exchange:
    """A new private exchange folder holding the ``sitecustomize``."""
    folder = Path(tempfile.mkdtemp(prefix="openprogram-exec-"))  # 0700
    exchange = Exchange(folder)
    exchange.site.mkdir(mode=0o700)
    (exchange.site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return exchange


def child_environment(
    environ: Mapping[str, str], plan: RecordReplayPlan, exchange: Exchange
) -> dict[str, str]:
    """``environ`` for the command: the exchange's ``sitecustomize`` first on
    ``PYTHONPATH``, the plan and the folder in their variables, and under replay the
    placeholder keys where ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` are unset."""
    from openprogram.activation.placeholders import set_placeholder_keys

    child = dict(environ)
    existing = child.get("PYTHONPATH", "")
    site = str(exchange.site)
    child["PYTHONPATH"] = f"{site}{os.pathsep}{existing}" if existing else site
    child[PLAN_VARIABLE] = plan.to_json()
    child[EXCHANGE_VARIABLE] = str(exchange.folder)
    if plan.mode == "replay":
        set_placeholder_keys(child)
    return child
