"""Layering: the recordings store reads recordings; it never runs a session.

Every ``import`` in every module of :mod:`openprogram.store`, including those inside
functions, is read from the source: none may reach the agent loop, the harness (which re-runs
sessions above the store), the CLI, the pytest plugin, or the provider machinery that serves
a session (registry, streaming, runtime, record/replay providers, vendor providers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import openprogram.store
from tests.support.import_rules import imported_modules, inside

FORBIDDEN = (
    "openprogram.agent",
    "openprogram.harness",
    "openprogram.cli",
    "openprogram.testing",
    "openprogram.activation",
    "openprogram.providers.registry",
    "openprogram.providers.builtins",
    "openprogram.provider_boundary.recorder",
    "openprogram.provider_boundary.replay",
    "openprogram.providers.runtime",
    "openprogram.providers.streaming",
)

MODULES = sorted(Path(openprogram.store.__file__).parent.rglob("*.py"))


def forbidden_imports(source: Path) -> list[str]:
    return [
        name for name in imported_modules(source, imported_names=True) if inside(name, FORBIDDEN)
    ]


def test_the_rule_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "def run():\n"
        "    from openprogram.agent.loop import run_agent\n"
        "    from openprogram import harness\n"
        "    import openprogram.provider_boundary.replay\n"
    )
    assert forbidden_imports(source) == [
        "openprogram.agent.loop",
        "openprogram.agent.loop.run_agent",
        "openprogram.harness",
        "openprogram.provider_boundary.replay",
    ]


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.stem)
def test_no_store_module_imports_what_runs_a_session(module: Path) -> None:
    assert forbidden_imports(module) == []


def test_every_store_module_is_checked() -> None:
    assert {path.stem for path in MODULES} >= {"__init__", "names", "show", "store", "status"}
