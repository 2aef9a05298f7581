"""Every package a module imports is one pyproject.toml declares for it: the runtime
dependencies for the whole package, an extra for the modules that belong to it, the dev
extra for the tests and benchmarks. A package that is only present because something else
installed it (click under an older typer) would break the first fresh install that lacks it;
this test names the module and the package instead, read from the sources."""

from __future__ import annotations

import functools
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.support.import_rules import run_time_imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "openprogram"

EXTRA_OF_MODULES = {
    "openprogram/serving/": "serve",  # the recording proxy's server
    "openprogram/importing/": "vcr",  # YAML cassettes and brotli bodies
    "openprogram/drift/credentials.py": "bedrock",  # drift signs a Bedrock request
    "openprogram/testing/": "pytest",  # the pytest plugin, loaded by pytest itself
}
"""The modules of each extra: only these may import what the extra declares."""

LOCAL_MODULES = {
    "machine_reference",  # benchmarks/machine_reference.py, beside the benchmarks
    "my_tools",  # a module a verify test writes into its working folder
}


@functools.cache
def declared() -> dict[str, set[str]]:
    """Each group's distributions, by canonical name: "runtime" and every extra, an extra
    that names openprogram's own extras (``openprogram[serve,vcr]``) holding theirs too."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        project = tomllib.load(file)["project"]
    groups = {"runtime": project["dependencies"], **project["optional-dependencies"]}

    def names(group: str) -> set[str]:
        found = set()
        for line in groups[group]:
            own = re.fullmatch(r"\s*openprogram\[([^\]]+)\]\s*", line)
            if own is None:
                found.add(requirement_name(line))
            else:
                for extra in own.group(1).split(","):
                    found |= names(extra.strip())
        return found

    return {group: names(group) for group in groups}


def requirement_name(line: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
    assert match is not None, line
    return canonical(match.group(1))


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


DISTRIBUTIONS = {
    top: {canonical(name) for name in names}
    for top, names in metadata.packages_distributions().items()
}


def distributions_of(module: str) -> set[str]:
    """The installed distributions that provide top-level ``module`` (several for a namespace
    package such as ``google``)."""
    return DISTRIBUTIONS.get(module, set())


def third_party(source: Path) -> set[str]:
    """The top-level modules ``source`` imports at run time that are neither the standard
    library nor this repository's own."""
    tops = {name.split(".")[0] for name in run_time_imports(source)}
    own = {"openprogram", "_openprogram_startup", "tests", "benchmarks", *LOCAL_MODULES}
    return {top for top in tops if top not in sys.stdlib_module_names and top not in own}


def undeclared(source: Path, allowed: set[str]) -> list[str]:
    problems = []
    for top in sorted(third_party(source)):
        found = distributions_of(top)
        if not found:
            problems.append(f"{top} (installed by no distribution here)")
        elif not found & allowed:
            problems.append(f"{top} (from {', '.join(sorted(found))})")
    return problems


def extra_of(source: Path) -> str | None:
    relative = source.relative_to(ROOT).as_posix()
    for prefix, extra in EXTRA_OF_MODULES.items():
        if relative == prefix or (prefix.endswith("/") and relative.startswith(prefix)):
            return extra
    return None


PACKAGE_MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize(
    "source", PACKAGE_MODULES, ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_each_module_imports_only_what_is_declared_for_it(source: Path) -> None:
    groups = declared()
    extra = extra_of(source)
    allowed = groups["runtime"] | (groups[extra] if extra else set())
    where = "the runtime dependencies" + (f" or the {extra!r} extra" if extra else "")
    assert undeclared(source, allowed) == [], f"{source} imports what {where} do not declare"


@pytest.mark.parametrize(
    "source",
    sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]),
    ids=lambda path: path.relative_to(ROOT).as_posix(),
)
def test_tests_and_benchmarks_import_only_what_the_dev_extra_declares(source: Path) -> None:
    groups = declared()
    allowed = groups["runtime"] | groups["dev"]
    assert undeclared(source, allowed) == [], f"{source} imports what the dev extra lacks"


def test_every_extra_the_modules_name_is_declared_and_installed_for_development() -> None:
    groups = declared()
    assert set(EXTRA_OF_MODULES.values()) <= set(groups)
    dev = groups["dev"]
    for extra in set(EXTRA_OF_MODULES.values()):
        assert groups[extra] <= dev, f"the dev extra lacks what {extra!r} declares"


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import json, typer\n"
        "def refuse() -> None:\n"
        "    import click\n"  # typer 0.29 installs no click: a fresh install crashed here
        "if TYPE_CHECKING:\n"
        "    import pydantic_core\n",  # read by the type checker only
        encoding="utf-8",
    )
    allowed = declared()["runtime"]
    problems = undeclared(module, allowed)
    assert [problem.split()[0] for problem in problems] == ["click"]
    assert "pydantic_core" not in third_party(module)
