"""The exception map: ``openprogram.errors``' docstring tree names every ``OpenProgramError``
subclass of the package under its parent, with its other bases; the module defines and
exports each one, and importing it imports nothing else."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

import openprogram
import openprogram.errors
from openprogram.errors import OpenProgramError

CONNECTOR = re.compile(r"[├└]── ")
NODE = re.compile(r"(?P<name>[A-Za-z_]\w*)(?: \((?P<extra>\+\w+(?:, \+\w+)*)\))?")


@dataclass(frozen=True)
class Node:
    parent: str | None
    extra_bases: tuple[str, ...]


def parse_tree(docstring: str) -> dict[str, Node]:
    """The tree drawn in ``docstring``: every class name, its parent and its ``(+Base)``
    extra bases. A node's depth is the column of its ``├──``/``└──`` (four per level)."""
    lines = docstring.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("OpenProgramError"))
    root_column = lines[start].index("OpenProgramError")
    nodes = {"OpenProgramError": Node(None, ())}
    path = ["OpenProgramError"]
    for line in lines[start + 1 :]:
        if not line.strip():
            break  # the tree ends at the first blank line
        connector = CONNECTOR.search(line)
        if connector is None:
            continue  # a description carried over to the next line
        depth = (connector.start() - root_column) // 4 + 1
        match = NODE.match(line, connector.end())
        assert match is not None, line
        name = match["name"]
        extra = tuple(part.lstrip("+") for part in (match["extra"] or "").split(", ") if part)
        assert name not in nodes, f"{name} is drawn twice"
        del path[depth:]
        nodes[name] = Node(path[-1], extra)
        path.append(name)
    return nodes


def package_errors() -> list[type[OpenProgramError]]:
    """Every subclass of ``OpenProgramError`` defined in the package — a class of one of its
    modules — after importing every module of it (the ``__main__`` modules run the CLI, so
    they are left out)."""
    for module in pkgutil.walk_packages(openprogram.__path__, "openprogram."):
        if not module.name.endswith(".__main__"):
            importlib.import_module(module.name)
    found: list[type[OpenProgramError]] = []
    pending = [OpenProgramError]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            module = sys.modules.get(subclass.__module__)
            defined_there = getattr(module, subclass.__qualname__, None) is subclass
            if (
                subclass.__module__.startswith("openprogram.")
                and defined_there
                and subclass not in found
            ):
                found.append(subclass)
    return found


def map_problems(nodes: dict[str, Node], classes: list[type[OpenProgramError]]) -> list[str]:
    """Where the drawn tree and the classes disagree, one line each."""
    problems: list[str] = []
    by_name = {cls.__name__: cls for cls in classes}
    for name, cls in sorted(by_name.items()):
        node = nodes.get(name)
        if node is None:
            problems.append(f"{name} ({cls.__module__}) is missing from the tree")
            continue
        parents = [base for base in cls.__bases__ if issubclass(base, OpenProgramError)]
        others = tuple(base.__name__ for base in cls.__bases__ if base not in parents)
        if [base.__name__ for base in parents] != [node.parent]:
            problems.append(f"{name} is drawn under {node.parent}, but its bases are {parents}")
        if node.extra_bases != others:
            problems.append(f"{name} is drawn with {node.extra_bases}, but also derives {others}")
    for name in sorted(set(nodes) - set(by_name) - {"OpenProgramError"}):
        problems.append(f"{name} is drawn in the tree but no such error exists")
    return problems


def test_the_tree_draws_every_error_under_its_parent_with_its_other_bases() -> None:
    classes = package_errors()
    assert len(classes) > 20
    assert map_problems(parse_tree(openprogram.errors.__doc__ or ""), classes) == []


def test_the_check_notices_an_error_left_out_of_the_tree_or_misplaced() -> None:
    classes = package_errors()
    nodes = parse_tree(openprogram.errors.__doc__ or "")

    class ForgottenError(OpenProgramError, KeyError):
        pass

    ForgottenError.__module__ = "openprogram.somewhere"
    misplaced = {**nodes, "RecordingTruncatedError": Node("OpenProgramError", ())}
    without_extra = {**nodes, "ReplayMismatch": Node("OpenProgramError", ())}
    unknown = {**nodes, "GhostError": Node("OpenProgramError", ())}

    assert ForgottenError not in classes  # defined here, not in a module of the package
    assert map_problems(nodes, [*classes, ForgottenError]) == [
        "ForgottenError (openprogram.somewhere) is missing from the tree"
    ]
    assert [p.split(" is ")[0] for p in map_problems(misplaced, classes)] == [
        "RecordingTruncatedError"
    ]
    assert [p.split(" is ")[0] for p in map_problems(without_extra, classes)] == ["ReplayMismatch"]
    assert map_problems(unknown, classes) == [
        "GhostError is drawn in the tree but no such error exists"
    ]


def test_the_tree_parser_reads_depth_and_extra_bases() -> None:
    nodes = parse_tree(
        """
    OpenProgramError          base
    ├── AError (+ValueError)
    │                         a description on its own line
    │   └── BError            under A
    │       └── CError (+KeyError, +TypeError)
    └── DError                back at the top
"""
    )
    assert nodes == {
        "OpenProgramError": Node(None, ()),
        "AError": Node("OpenProgramError", ("ValueError",)),
        "BError": Node("AError", ()),
        "CError": Node("BError", ("KeyError", "TypeError")),
        "DError": Node("OpenProgramError", ()),
    }


def test_openprogram_errors_exports_every_public_error_as_the_same_class() -> None:
    public = {cls.__name__: cls for cls in package_errors() if not cls.__name__.startswith("_")}
    exported = set(openprogram.errors.__all__)

    assert exported == {*public, "OpenProgramError"}
    for name, cls in public.items():
        assert getattr(openprogram.errors, name) is cls, name
        assert name in dir(openprogram.errors)


@pytest.mark.parametrize("name", ["ReplayMismatch", "ModelReferenceError", "ConfigError"])
def test_an_error_imports_from_openprogram_errors(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from openprogram.errors import {name}", namespace)
    imported = namespace[name]
    assert isinstance(imported, type)
    assert issubclass(imported, OpenProgramError)


def test_importing_openprogram_errors_imports_nothing_else() -> None:
    script = (
        "import json, sys\n"
        "import openprogram.errors\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'pydantic_settings', 'httpx', 'orjson', 'typer', 'rich') "
        "or (m.startswith('openprogram.') and m not in "
        "('openprogram.errors', 'openprogram.lazy_exports')))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
