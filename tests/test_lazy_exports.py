"""Lazy package exports never share a name with a submodule of the package.

Importing a submodule sets an attribute of that name on its package, so an export named like a
submodule (a function ``builtin_tools`` in a module ``builtin_tools``) would turn into the
module as soon as anything imported the submodule directly, and break callers depending on
the order of imports.
"""

from __future__ import annotations

import importlib
import pkgutil

import openprogram


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
