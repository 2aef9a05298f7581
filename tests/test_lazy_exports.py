"""Lazy package exports never share a name with a submodule of the package.

Importing a submodule sets an attribute of that name on its package, so an export named like a
submodule (a function ``builtin_tools`` in a module ``builtin_tools``) would turn into the
module as soon as anything imported the submodule directly, and break callers depending on
the order of imports.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import openprogram
import openprogram.errors


def packages_with_lazy_exports() -> list[str]:
    found = []
    for module in pkgutil.walk_packages(openprogram.__path__, "openprogram."):
        if module.ispkg and getattr(importlib.import_module(module.name), "_EXPORTS", None):
            found.append(module.name)
    return found


def test_no_lazy_export_is_named_like_a_submodule() -> None:
    packages = packages_with_lazy_exports()
    assert "openprogram.agent" in packages
    for name in packages:
        package = importlib.import_module(name)
        submodules = {sub.name for sub in pkgutil.iter_modules(package.__path__)}
        assert not submodules & set(package._EXPORTS), name


def test_an_export_stays_what_it_is_after_its_module_is_imported() -> None:
    import openprogram.agent
    import openprogram.agent.file_tools

    assert callable(openprogram.agent.builtin_tools)
    assert openprogram.agent.builtin_tools is openprogram.agent.file_tools.builtin_tools


# --- each name listed twice: the import mypy reads, and the lazy table ---------------------

PACKAGE = Path(openprogram.__file__).parent


def lazy_table(tree: ast.Module) -> ast.Dict | None:
    """The ``_EXPORTS = {...}`` table of a package's ``__init__``, if it has one."""
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
            assert isinstance(node.value, ast.Dict)
            return node.value
    return None


def table_entries(table: ast.Dict) -> dict[str, str]:
    entries = {}
    for key, value in zip(table.keys, table.values, strict=True):
        assert isinstance(key, ast.Constant)
        assert isinstance(value, ast.Constant)
        entries[str(key.value)] = str(value.value)
    return entries


def type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """``name -> module`` of what the ``if TYPE_CHECKING:`` block imports."""
    imports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname is None, ast.unparse(statement)
                    imports[alias.name] = str(statement.module)
    return imports


def times_written(tree: ast.Module, name: str) -> int:
    """How often ``name`` is written in a module: as an imported name or a string."""
    return sum(
        (isinstance(node, ast.alias) and (node.asname or node.name) == name)
        or (isinstance(node, ast.Constant) and node.value == name)
        for node in ast.walk(tree)
    )


def lazy_packages() -> dict[str, ast.Module]:
    """Every package ``__init__`` that calls ``lazy_exports``, which must hand it the table it
    names ``_EXPORTS`` (the checks below read it there)."""
    trees = {}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        calls = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "lazy_exports"
        ]
        if calls:
            assert lazy_table(tree) is not None, f"{init}: no _EXPORTS table"
            assert [ast.unparse(call.args[2]) for call in calls] == ["_EXPORTS"], init
            trees[str(init.relative_to(PACKAGE.parent))] = tree
    return trees


def export_list_problems(tree: ast.Module) -> list[str]:
    """What is wrong with a lazy package's lists: a name the table and the
    ``TYPE_CHECKING`` imports disagree on, or one written a third time."""
    table = lazy_table(tree)
    assert table is not None
    entries = table_entries(table)
    imports = type_checking_imports(tree)
    problems = [
        f"{name}: the table says {entries.get(name)}, the TYPE_CHECKING import {imports.get(name)}"
        for name in sorted(entries.keys() | imports.keys())
        if entries.get(name) != imports.get(name)
    ]
    problems += [
        f"{name} is written {count} times (the import and the table are all it may take)"
        for name in sorted(entries)
        if (count := times_written(tree, name)) > 2
    ]
    return problems


def test_every_lazy_package_lists_each_name_twice_and_the_two_lists_agree() -> None:
    packages = lazy_packages()
    assert {"openprogram/__init__.py", "openprogram/providers/__init__.py"} <= set(packages)
    found = {
        path: problems
        for path, tree in packages.items()
        if (problems := export_list_problems(tree))
    }
    assert found == {}


def test_all_is_the_table() -> None:
    for name in lazy_packages():
        package = importlib.import_module(name.removesuffix("/__init__.py").replace("/", "."))
        assert set(package.__all__) - {"__version__"} == set(package._EXPORTS), name


def test_the_check_finds_a_name_listed_a_third_time_or_out_of_step() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from p.a import One, Two\n"
        "_EXPORTS = {'One': 'p.a', 'Two': 'p.b', 'Three': 'p.a'}\n"
        "__all__ = ['One', *_EXPORTS]\n"
    )
    assert export_list_problems(tree) == [
        "Three: the table says p.a, the TYPE_CHECKING import None",
        "Two: the table says p.b, the TYPE_CHECKING import p.a",
        "One is written 3 times (the import and the table are all it may take)",
    ]


def test_errors_are_exported_by_openprogram_errors_alone() -> None:
    """No package re-exports an error: ``openprogram.errors`` is its one import path."""
    errors = {
        name
        for name, value in vars(openprogram.errors).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    for module in pkgutil.walk_packages(openprogram.__path__, "openprogram."):
        if module.ispkg:
            package = importlib.import_module(module.name)
            exported = set(getattr(package, "__all__", ())) | set(getattr(package, "_EXPORTS", ()))
            assert not exported & errors, module.name
