"""Starting the bridge from outside: its command line, and whether it can work here at all.

:func:`bridge_argv` is the command line that runs a command inside a new loopback-only namespace. It
starts the bridge as ``python -I -S -c <launcher>``: no ``site`` (so neither the environment's
start-up hooks nor openprogram's configured mode run in the bridge, and the start is a few
milliseconds shorter), and the bridge's own modules are loaded from this installation without
importing the ``openprogram`` package itself (whose lazy exports load ``typing``: about as long
again as Python's whole start). The command it runs gets the environment unchanged.

:func:`unavailable_reason` runs the bridge once with ``--check`` (it makes the namespace,
watches ``lo`` and exits) and keeps the answer for the life of the process."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from openprogram.isolation import wire

__all__ = ["bridge_argv", "unavailable_reason"]

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_LAUNCHER = (
    "import sys\n"
    "for name, path in (('openprogram', {root!r}), ('openprogram.isolation', {here!r})):\n"
    "    package = type(sys)(name)\n"
    "    package.__path__ = [path]\n"
    "    sys.modules[name] = package\n"
    "from openprogram.isolation.bridge import run\n"
    "run()\n"
)
_CHECK_TIMEOUT = 30.0


def bridge_argv(
    command: Sequence[str],
    *,
    relay: str | None = None,
    bridged: Sequence[tuple[str, int]] = (),
    report: str | None = None,
) -> list[str]:
    """The argv that runs ``command`` in a new loopback-only namespace through the bridge."""
    launcher = _LAUNCHER.format(root=str(_PACKAGE_ROOT), here=str(_PACKAGE_ROOT / "isolation"))
    argv = [sys.executable, "-I", "-S", "-c", launcher]
    if relay is not None:
        argv += ["--relay", relay]
    for host, port in bridged:
        argv += ["--bridge", wire.format_endpoint(host, port)]
    if report is not None:
        argv += ["--report", report]
    return [*argv, "--", *command]


@functools.cache
def unavailable_reason() -> str | None:
    """None where a loopback-only namespace as the user's own uid can be made here (probed
    once per process); else one line saying why."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform}): network namespaces are a Linux feature"
    argv = [*bridge_argv(())[:-1], "--check"]
    try:
        probe = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_CHECK_TIMEOUT,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the namespace check could not run: {error}"
    if probe.returncode == 0:
        return None
    lines = probe.stderr.decode("utf-8", "replace").strip().splitlines()
    reason = lines[-1] if lines else f"the namespace check exited {probe.returncode}"
    return reason.removeprefix("openprogram isolation: ").removeprefix(
        "cannot isolate the command: "
    )
