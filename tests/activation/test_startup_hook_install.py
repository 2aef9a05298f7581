"""The start-up hook comes and goes with the package: after ``pip install`` of the wheel, and
of the editable wheel (``pip install -e .``), ``openprogram_startup.pth`` and
``_openprogram_startup`` are at the top of ``site-packages`` and every Python started there
imports the hook; ``pip uninstall openprogram`` removes both.

The wheels are built from a copy of this checkout by the project's own build backend, as pip
builds them (``pip wheel``, and the backend's ``build_editable``, which ``pip install -e``
calls), without the network: the backend's setuptools is this environment's
(``--no-build-isolation``). They are installed into a virtual environment of their own,
without openprogram's dependencies and without this environment's packages, so nothing
leaks in either direction. The environment is made once for the session."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = (
    "pyproject.toml",
    "README.md",
    "MANIFEST.in",
    "_openprogram_startup.py",
    "openprogram_startup.pth",
    "build_backend",
    "openprogram",
)
"""What a build of openprogram reads from the checkout."""

BUILD_EDITABLE = """\
import sys
sys.path.insert(0, "build_backend")
import startup_hook_backend
print(startup_hook_backend.build_editable(sys.argv[1]))
"""

HOOK_STATE = "import sys; print(sys.modules['_openprogram_startup'].__file__)"


@dataclass(frozen=True)
class Installs:
    source: Path
    wheel: Path
    editable: Path
    python: Path
    site_packages: Path

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _run([str(self.python), "-m", "pip", "--disable-pip-version-check", *args])

    def started(self, **environ: str) -> subprocess.CompletedProcess[str]:
        """A Python of the environment: the file its start-up hook was imported from."""
        return _run([str(self.python), "-c", HOOK_STATE], environ=environ)


def _run(
    command: list[str], *, cwd: Path | None = None, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), **(environ or {})}
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="session")
def installs(tmp_path_factory: pytest.TempPathFactory) -> Installs:
    folder = tmp_path_factory.mktemp("hook-install")
    source = folder / "checkout"
    source.mkdir()
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignored)
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = folder / "dist"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(dist), str(source)],
        environ={"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("openprogram-*.whl")
    editable_dist = folder / "editable"
    editable_dist.mkdir()
    made = _run([sys.executable, "-c", BUILD_EDITABLE, str(editable_dist)], cwd=source)
    assert made.returncode == 0, made.stderr
    editable = editable_dist / made.stdout.split()[-1]
    venv = folder / "venv"
    created = _run([sys.executable, "-m", "venv", str(venv)])
    assert created.returncode == 0, created.stderr
    python = venv / "bin" / "python"
    found = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    return Installs(source, wheel, editable, python, Path(found.stdout.strip()))


def _hook_files(site_packages: Path) -> set[str]:
    return {
        path.name
        for path in site_packages.iterdir()
        if path.name in ("openprogram_startup.pth", "_openprogram_startup.py")
    }


def test_the_wheel_installs_the_hook_and_uninstalling_removes_it(installs: Installs) -> None:
    before = installs.started()
    assert "KeyError: '_openprogram_startup'" in before.stderr  # a clean environment

    installed = installs.pip("install", "--no-deps", "--no-index", str(installs.wheel))
    assert installed.returncode == 0, installed.stderr
    try:
        assert _hook_files(installs.site_packages) == {
            "openprogram_startup.pth",
            "_openprogram_startup.py",
        }
        started = installs.started()
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip() == str(installs.site_packages / "_openprogram_startup.py")
        assert started.stderr == ""  # off: nothing said, nothing of openprogram imported

        # The mode on, in an environment where openprogram cannot be imported (its
        # dependencies are not installed here): said in one line, the program runs.
        on = installs.started(OPENPROGRAM_RECORD_REPLAY__MODE="replay")
        assert on.returncode == 0
        assert on.stderr.startswith(
            "openprogram: record/replay may be on, but this Python cannot import openprogram"
        )
    finally:
        removed = installs.pip("uninstall", "--yes", "openprogram")
    assert removed.returncode == 0, removed.stderr
    assert _hook_files(installs.site_packages) == set()
    assert "KeyError: '_openprogram_startup'" in installs.started().stderr


def test_the_editable_install_has_the_hook_too(installs: Installs) -> None:
    installed = installs.pip("install", "--no-deps", "--no-index", str(installs.editable))
    assert installed.returncode == 0, installed.stderr
    try:
        assert _hook_files(installs.site_packages) == {"openprogram_startup.pth"}
        started = installs.started()
        assert started.returncode == 0, started.stderr
        # the checkout's module, through setuptools' editable finder
        assert started.stdout.strip() == str(installs.source / "_openprogram_startup.py")
    finally:
        removed = installs.pip("uninstall", "--yes", "openprogram")
    assert removed.returncode == 0, removed.stderr
    assert _hook_files(installs.site_packages) == set()
    assert "KeyError: '_openprogram_startup'" in installs.started().stderr
