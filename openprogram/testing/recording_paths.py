"""Where a test's recording lives: ``<recordings dir>/<module>/<test>.jsonl``.

* ``<recordings dir>`` is the ini option ``openprogram_recordings_dir``, relative to pytest's
  rootdir; by default ``tests/recordings``.
* ``<module>`` is the test file's path relative to the folder that holds the recordings
  folder (by default ``tests/``), without ``.py``, its folders joined by ``.``:
  ``tests/test_agent.py`` gives ``test_agent``, ``tests/agent/test_loop.py`` gives
  ``agent.test_loop``. A test file outside that folder is taken relative to rootdir instead
  (``recordings`` at rootdir makes ``tests/test_agent.py`` give ``tests.test_agent``).
* ``<test>`` is the enclosing classes and the function joined by ``.``, then ``-`` and the
  parametrization id if there is one: ``test_answers``, ``TestLoop.test_stops``,
  ``test_sizes-big-3`` (for ``test_sizes[big-3]``).

Each of the two names is made a safe file name: a character other than a letter, a digit,
``.``, ``_`` or ``-`` (and a leading ``.`` or ``-``) becomes ``_``; a name that had to change,
or was longer than :data:`MAX_NAME_LENGTH` and was cut, ends in ``-`` and the first 8 hex
digits of the SHA-256 of the original, so two different tests never share a file.

For a collected test, :func:`recording_path_of` is its recording, its
``@pytest.mark.openprogram(name=...)`` counted, in the run's recordings folder
(:func:`recordings_dir_of`); :func:`item_recording_path` is the same for a name already
resolved from the test's settings: they read the item (its file, its enclosing classes, its
function, its parametrization id) and lay it out as above.

:func:`display_path` shows a recording relative to rootdir, and :func:`selecting_argument` is
the command-line argument that selects a test from where pytest was started, so the commands
the plugin suggests (record it, re-record it) run as printed. This module imports nothing
heavy: the plugin loads it in every pytest run."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest

from openprogram.store.names import MAX_TEST_PART_LENGTH, RECORDING_SUFFIX, safe_file_name
from openprogram.testing.plugin_options import PLUGIN_SETTINGS

MAX_NAME_LENGTH = MAX_TEST_PART_LENGTH
"""Longest ``<module>`` or ``<test>`` name kept whole (120): why it is below the store's 128
is told beside both, in :mod:`openprogram.store.names`."""

TEMPORARY_FOLDER_PREFIX = ".openprogram-recording-"
"""The name start of the private folder, next to a test's recording, that a new recording is
written into until the test passes (never a recording of its own)."""


def module_folder_name(test_file: Path, *, recordings_dir: Path, rootdir: Path) -> str:
    """The ``<module>`` folder for tests in ``test_file`` (all paths absolute)."""
    relative: Path | None = None
    for base in (recordings_dir.parent, rootdir):
        try:
            relative = test_file.relative_to(base)
            break
        except ValueError:
            continue
    if relative is None:
        relative = Path(test_file.name)
    parts = [*relative.parent.parts, relative.name.removesuffix(".py")]
    return safe_file_name(".".join(parts))


def recording_stem(
    function: str, *, classes: Sequence[str] = (), parameter_id: str | None = None
) -> str:
    """The ``<test>`` file name (without ``.jsonl``) of one test."""
    name = ".".join([*classes, function])
    if parameter_id is not None:
        name = f"{name}-{parameter_id}"
    return safe_file_name(name)


def recording_path(
    *,
    recordings_dir: Path,
    test_file: Path,
    rootdir: Path,
    function: str,
    classes: Sequence[str] = (),
    parameter_id: str | None = None,
) -> Path:
    """``<recordings_dir>/<module>/<test>.jsonl`` for one test (see the module docstring)."""
    folder = module_folder_name(test_file, recordings_dir=recordings_dir, rootdir=rootdir)
    stem = recording_stem(function, classes=classes, parameter_id=parameter_id)
    return recordings_dir / folder / f"{stem}{RECORDING_SUFFIX}"


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
