"""Where a collected test's recording lives, and how the plugin names it and the test to you.

:func:`recording_path_of` is the recording of a pytest item, its
``@pytest.mark.openprogram(name=...)`` counted, in the run's recordings folder
(:func:`recordings_dir_of`); :func:`item_recording_path` is the same for a name already
resolved from the test's settings. The layout itself — folder and file names — is
:mod:`~openprogram.testing.recording_paths`'s; this module only reads the item: its file, its
enclosing classes, its function and its parametrization id.

:func:`display_path` shows a recording relative to rootdir, and :func:`selecting_argument` is
the command-line argument that selects a test from where pytest was started, so the commands
the plugin suggests (record it, re-record it) run as printed. This module imports nothing
heavy: the plugin loads it in every pytest run.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from openprogram.testing.plugin_options import PLUGIN_SETTINGS
from openprogram.testing.recording_paths import module_folder_name, recording_path


def recordings_dir_of(config: pytest.Config) -> Path:
    """The run's recordings folder (absolute)."""
    return config.stash[PLUGIN_SETTINGS].recordings_dir


def recording_path_of(item: pytest.Item) -> Path:
    """Where ``item``'s recording lives, its ``@pytest.mark.openprogram(name=...)`` counted
    (the summary's orphans are the recordings no collected test has this path)."""
    name = None
    for marker in item.iter_markers("openprogram"):
        if "name" in marker.kwargs:
            name = marker.kwargs["name"]
            break
    return item_recording_path(
        item,
        recordings_dir_of(item.config),
        item.config.rootpath,
        name if isinstance(name, str) else None,
    )


def item_recording_path(
    item: pytest.Item, recordings_dir: Path, rootdir: Path, name: str | None
) -> Path:
    """``item``'s recording in ``recordings_dir``: ``<module>/<name>.jsonl`` when the test is
    given a ``name``, else the file its classes, function and parametrization id make."""
    if name is not None:
        folder = module_folder_name(item.path, recordings_dir=recordings_dir, rootdir=rootdir)
        return recordings_dir / folder / f"{name}.jsonl"
    classes: list[str] = []
    node = item.parent
    while isinstance(node, pytest.Class):
        classes.append(node.name)
        node = node.parent
    if isinstance(item, pytest.Function):
        function = item.originalname
        callspec = getattr(item, "callspec", None)
        parameter_id = None if callspec is None else str(callspec.id)
    else:
        function, parameter_id = item.name, None
    return recording_path(
        recordings_dir=recordings_dir,
        test_file=item.path,
        rootdir=rootdir,
        function=function,
        classes=classes[::-1],
        parameter_id=parameter_id,
    )


def selecting_argument(item: pytest.Item, config: pytest.Config) -> str:
    """The command-line argument that selects ``item``, from where pytest was started."""
    file = os.path.relpath(item.path, config.invocation_params.dir)
    _, separator, rest = item.nodeid.partition("::")
    return shlex.quote(f"{file}{separator}{rest}")


def display_path(path: Path, rootdir: Path) -> str:
    """``path`` relative to ``rootdir``, or whole when it is outside it."""
    try:
        return str(path.relative_to(rootdir))
    except ValueError:
        return str(path)
