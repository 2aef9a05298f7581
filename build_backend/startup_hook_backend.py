"""openprogram's build backend: setuptools', with the start-up hook in every wheel it builds.

The start-up hook is two files at the top of ``site-packages``: ``_openprogram_startup.py``
(a module setuptools ships as it ships any, ``py-modules`` in ``pyproject.toml``) and
``openprogram_startup.pth``, the line that imports it while Python starts. setuptools has no
way to put a file that is not Python at the top of a wheel, and its editable wheels (``pip
install -e .``) skip custom build steps; so this backend hands every request to setuptools
and adds the ``.pth`` to the wheel it built — regular and editable alike — with its line in
the wheel's ``RECORD``, so that ``pip uninstall openprogram`` removes it too.

In an editable install the ``.pth`` imports ``_openprogram_startup`` through setuptools'
own finder (its ``__editable__…`` ``.pth`` comes first in the folder's order), so the hook
is the checkout's, as the package is.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

HOOK_LINE = "openprogram_startup.pth"
"""The file, at the project's root, that goes to the top of every wheel."""


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, object] | None = None,
    metadata_directory: str | None = None,
) -> str:
    name: str = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    add_to_wheel(Path(wheel_directory) / name, HOOK_LINE, Path(HOOK_LINE).read_bytes())
    return name


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, object] | None = None,
    metadata_directory: str | None = None,
) -> str:
    name: str = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_to_wheel(Path(wheel_directory) / name, HOOK_LINE, Path(HOOK_LINE).read_bytes())
    return name


def add_to_wheel(wheel: Path, name: str, content: bytes) -> None:
    """Write ``content`` as ``name`` at the top of ``wheel``, listed in its ``RECORD``."""
    rewritten = wheel.with_name(wheel.name + ".tmp")
    with (
        zipfile.ZipFile(wheel) as source,
        zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        entries = [entry for entry in source.infolist() if entry.filename != name]
        record = next(e.filename for e in entries if e.filename.endswith(".dist-info/RECORD"))
        for entry in entries:
            data = source.read(entry)
            if entry.filename == record:
                data = _with_line(data, name, content)
            target.writestr(entry, data)
        added = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        added.compress_type = zipfile.ZIP_DEFLATED
        added.external_attr = 0o644 << 16  # -rw-r--r--
        target.writestr(added, content)
    os.replace(rewritten, wheel)


def _with_line(record: bytes, name: str, content: bytes) -> bytes:
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
    line = f"{name},sha256={digest.decode('ascii')},{len(content)}\n".encode()
    lines = [
        kept
        for kept in record.splitlines(keepends=True)
        if not kept.startswith(name.encode() + b",")
    ]
    return line + b"".join(lines)
