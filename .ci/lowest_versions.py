"""The lowest versions pyproject.toml admits, for the CI step that installs them.

    python .ci/lowest_versions.py constraints          # NAME==FLOOR for each runtime dependency
    python .ci/lowest_versions.py tools NAME [NAME...]  # the dev extra's lines for those tools
    python .ci/lowest_versions.py check                 # each runtime dependency is at its floor

Every runtime dependency must declare a floor (``>=``): the floor is a promise that the
package works with that version, and this step is what keeps it. When the step fails,
raise the floor that broke (never cap the top). Only the standard library is used, so the
script runs in an environment that has nothing installed yet.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


def project() -> dict[str, object]:
    with PYPROJECT.open("rb") as file:
        return tomllib.load(file)["project"]  # type: ignore[no-any-return]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def floors() -> dict[str, str]:
    """Each runtime dependency's name and its ``>=`` version."""
    found: dict[str, str] = {}
    for line in project()["dependencies"]:  # type: ignore[attr-defined]
        match = REQUIREMENT.match(line)
        floor = re.search(r">=\s*([0-9][^,;\s]*)", match.group(3)) if match else None
        if match is None or floor is None:
            sys.exit(f"pyproject.toml: dependency {line!r} has no floor; declare one (NAME>=X)")
        found[match.group(1)] = floor.group(1)
    return found


def tools(names: list[str]) -> list[str]:
    """The dev extra's requirement lines for ``names``, as declared."""
    dev = {
        canonical(REQUIREMENT.match(line).group(1)): line  # type: ignore[union-attr]
        for line in project()["optional-dependencies"]["dev"]  # type: ignore[index]
    }
    missing = [name for name in names if canonical(name) not in dev]
    if missing:
        sys.exit(f"pyproject.toml: the dev extra does not declare {', '.join(missing)}")
    return [dev[canonical(name)] for name in names]


def check() -> None:
    """Fail unless every runtime dependency is installed at its floor."""
    wrong = []
    for name, floor in floors().items():
        installed = metadata.version(name)
        if _release(installed) != _release(floor):
            wrong.append(f"{name} {installed} (the floor is {floor})")
    if wrong:
        sys.exit("not at the declared floors: " + "; ".join(wrong))
    print("lowest versions: " + ", ".join(f"{n} {v}" for n, v in floors().items()))


def _release(version: str) -> tuple[int, ...]:
    """``14`` and ``14.0.0`` are one release."""
    numbers = [int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3]]
    while numbers and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def main(argv: list[str]) -> None:
    if argv[:1] == ["constraints"]:
        print("\n".join(f"{name}=={floor}" for name, floor in floors().items()))
    elif argv[:1] == ["tools"] and argv[1:]:
        print("\n".join(tools(argv[1:])))
    elif argv == ["check"]:
        check()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
