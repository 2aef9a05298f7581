"""Each package's docstring lists its modules, and only its modules; docs/architecture.md names
every package.

A package docstring that lists modules does so as an indented table, one module per line
(``    reader   the strict reader …``). The table drifts silently when a module is merged,
renamed or added, so it is checked against the files.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import openprogram

PACKAGE_ROOT = Path(openprogram.__file__).parent
TABLE_LINE = re.compile(r"^ {4}([a-z_][a-z0-9_]*)(?: {2,}|$)")


def _packages() -> list[Path]:
    return sorted(path.parent for path in PACKAGE_ROOT.rglob("__init__.py"))


def _listed_modules(package: Path) -> set[str] | None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    listed = {match[1] for line in docstring.splitlines() if (match := TABLE_LINE.match(line))}
    return listed or None


def _modules(package: Path) -> set[str]:
    found = {
        path.stem for path in package.glob("*.py") if path.stem not in ("__init__", "__main__")
    }
    found |= {path.parent.name for path in package.glob("*/__init__.py")}
    return found


def test_the_packages_that_must_list_their_modules_do() -> None:
    unlisted = [
        str(package.relative_to(PACKAGE_ROOT.parent))
        for package in _packages()
        if len(_modules(package)) > 1 and _listed_modules(package) is None
    ]
    assert unlisted == []


@pytest.mark.parametrize(
    "package", _packages(), ids=lambda path: str(path.relative_to(PACKAGE_ROOT.parent))
)
def test_a_package_docstring_lists_exactly_its_modules(package: Path) -> None:
    listed = _listed_modules(package)
    if listed is None:
        pytest.skip("lists no modules")
    assert listed == _modules(package)


def test_the_architecture_page_names_every_package() -> None:
    page = (PACKAGE_ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = [
        str(package.relative_to(PACKAGE_ROOT))
        for package in _packages()
        if package != PACKAGE_ROOT and f"{package.relative_to(PACKAGE_ROOT)}/" not in page
    ]
    assert unnamed == []
