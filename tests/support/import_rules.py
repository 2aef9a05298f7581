"""What a module imports, read from its source: for the layering tests, which say what a
package may never import (inside functions and ``TYPE_CHECKING`` blocks too)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def imported_modules(source: Path, *, imported_names: bool = False) -> list[str]:
    """Every module an ``import`` or ``from … import`` in ``source`` names; with
    ``imported_names``, ``from package import name`` counts as ``package.name`` too (the name
    may be a module)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.append(node.module)
            if imported_names:
                names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def inside(module: str, packages: Iterable[str]) -> bool:
    """``module`` is one of ``packages`` or inside one of them."""
    return any(module == name or module.startswith(name + ".") for name in packages)


def run_time_imports(source: Path) -> list[str]:
    """Every module ``source`` imports when it runs: as :func:`imported_modules`, without the
    imports under ``if TYPE_CHECKING:``, which only a type checker reads."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            node.body = []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.append(node.module)
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
