"""Importing the provider registry loads the registry and the provider types, not the
runtime's work: the configured mode, the recording core, the configuration are imported when
the runtime starts (the first lookup), never by ``import openprogram.providers.registry``.

The count is taken in a fresh interpreter: what is tested is the import state of a process.
"""

from __future__ import annotations

import json
import subprocess
import sys

MOST_MODULES = 12
"""What the registry may load of openprogram, itself included."""

EXPECTED = {
    "openprogram",
    "openprogram.errors",
    "openprogram.lazy_exports",
    "openprogram.providers",
    "openprogram.providers.builtins",
    "openprogram.providers.registry",
    "openprogram.providers.runtime",
}
"""What it loads: the packages on the way, the errors it raises, and the runtime's state and the
built-ins' factory table (which import nothing of their own). A failure names what it loads
beyond these."""

LOADED_BY = """
import json, sys
__import__(sys.argv[1])
{extra}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "openprogram")))
"""


def openprogram_modules_loaded_by(module: str, *, then: str = "") -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", LOADED_BY.format(extra=then), module],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout)
    return loaded


NEVER = ("openprogram.activation", "openprogram.config", "openprogram.provider_boundary")
"""Packages the runtime's start reaches, and importing the registry must not."""


def test_importing_the_registry_loads_only_the_registry_and_what_it_names() -> None:
    loaded = openprogram_modules_loaded_by("openprogram.providers.registry")
    extra = sorted(set(loaded) - EXPECTED)
    assert len(loaded) <= MOST_MODULES, f"{len(loaded)} modules; beyond the expected: {extra}"
    reached = [name for name in loaded if name.startswith(NEVER)]
    assert not reached, f"importing the registry loads {reached}"
    assert set(loaded) >= EXPECTED


def test_the_first_lookup_loads_the_configured_mode() -> None:
    """The other half: what the import no longer loads, the runtime's start still does."""
    loaded = openprogram_modules_loaded_by(
        "openprogram.providers.registry",
        then="sys.modules['openprogram.providers.registry'].registered_apis()",
    )
    assert "openprogram.activation.configured" in loaded
    assert "openprogram.recording.redaction" in loaded
