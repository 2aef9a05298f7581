"""The recording core's modules import one another without a cycle, type-only imports included.

The graph is read from the source, not from what Python happens to load: every ``import`` and
``from … import`` of every module under ``openprogram/recording/`` counts — at the top, under
``if TYPE_CHECKING:`` and inside functions alike — so that a cycle cannot hide behind an
import that runs late or never. A name imported from a module counts as that module, or as the
submodule it names (``from openprogram.recording import format``); the package a module
belongs to, which Python imports first, counts only when a name is imported from it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import openprogram.recording

PACKAGE = "openprogram.recording"
FOLDER = Path(openprogram.recording.__file__).parent


def module_sources() -> dict[str, Path]:
    """Every module of the package by its dotted name (the package itself for __init__)."""
    found = {PACKAGE: FOLDER / "__init__.py"}
    for path in sorted(FOLDER.glob("*.py")):
        if path.stem != "__init__":
            found[f"{PACKAGE}.{path.stem}"] = path
    return found


def imported_modules(path: Path, name: str, sources: dict[str, Path]) -> set[str]:
    """The modules among ``sources`` that the module ``name`` (its source at ``path``)
    imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, ``level - 1`` packages up
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [base])])
            for alias in node.names:  # a submodule by its name, else the module named
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in sources else base)
    return {module for module in found if module in sources and module != name}


def import_graph(sources: dict[str, Path]) -> dict[str, set[str]]:
    """Each module of ``sources`` and the modules among them it imports."""
    return {name: imported_modules(path, name, sources) for name, path in sources.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in import order, the first repeated last), or
    None when it has none."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once explored
    for start in sorted(graph):
        if start in state:
            continue
        path, pending = [start], [iter(sorted(graph[start]))]
        state[start] = "open"
        while pending:
            following = next(pending[-1], None)
            if following is None:
                state[path.pop()] = "done"
                pending.pop()
            elif state.get(following) == "open":
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = "open"
                path.append(following)
                pending.append(iter(sorted(graph[following])))
    return None


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from openprogram.recording.format import Recording\n"
        "if TYPE_CHECKING:\n"
        "    from openprogram.recording.reader import read_recording\n"
        "def later():\n"
        "    import openprogram.recording.writer\n"
        "    from openprogram.recording import report\n"
        "    from . import multipart_bodies\n"
        "    from openprogram.errors import ReplayMismatch\n",
        encoding="utf-8",
    )
    sources = {**module_sources(), f"{PACKAGE}.sample": source}
    assert import_graph(sources)[f"{PACKAGE}.sample"] == {
        f"{PACKAGE}.format",
        f"{PACKAGE}.reader",
        f"{PACKAGE}.writer",
        f"{PACKAGE}.report",
        f"{PACKAGE}.multipart_bodies",
    }


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_recording_core_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(module_sources()))
    assert cycle is None, (
        "the recording core's modules import one another in a circle: "
        + " -> ".join(name.removeprefix(f"{PACKAGE}.") for name in cycle)
        + "; move the type the lower module needs down to the module that owns it"
    )
