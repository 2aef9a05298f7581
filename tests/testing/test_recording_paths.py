"""The file layout rule: ``<recordings dir>/<module>/<test>.jsonl``, safe and distinct."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openprogram.testing.recording_paths import (
    MAX_NAME_LENGTH,
    module_folder_name,
    recording_path,
    recording_stem,
    safe_file_name,
)

ROOT = Path("/project")
RECORDINGS = ROOT / "tests" / "recordings"
SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


@pytest.mark.parametrize("name", ["test_answers", "TestX.test_y", "test_sizes-big-3", "a.b_c-d"])
def test_a_safe_name_is_kept_as_it_is(name: str) -> None:
    assert safe_file_name(name) == name


@pytest.mark.parametrize(
    "name", ["test_q-hello world", "test_q-a/b", "test_q-café", ".hidden", "x" * 200, "", "-x"]
)
def test_an_unsafe_or_long_name_is_made_safe_with_a_hash(name: str) -> None:
    safe = safe_file_name(name)
    assert SAFE.fullmatch(safe)
    assert len(safe) <= MAX_NAME_LENGTH
    assert re.search(r"-[0-9a-f]{8}$", safe)


def test_names_that_clean_up_alike_stay_distinct() -> None:
    assert safe_file_name("test_q-a/b") != safe_file_name("test_q-a_b")
    assert safe_file_name("test_q-a b") != safe_file_name("test_q-a/b")
    long_a, long_b = "t" * 150 + "a", "t" * 150 + "b"
    assert safe_file_name(long_a) != safe_file_name(long_b)


def test_the_same_name_always_gives_the_same_file() -> None:
    assert safe_file_name("test_q-hello world") == safe_file_name("test_q-hello world")


def test_the_module_is_its_path_under_the_folder_holding_the_recordings() -> None:
    def folder(relative: str) -> str:
        return module_folder_name(ROOT / relative, recordings_dir=RECORDINGS, rootdir=ROOT)

    assert folder("tests/test_agent.py") == "test_agent"
    assert folder("tests/agent/test_loop.py") == "agent.test_loop"
    # outside that folder: relative to rootdir
    assert folder("other/test_agent.py") == "other.test_agent"


def test_recordings_at_rootdir_keep_the_tests_folder_in_the_module_name() -> None:
    name = module_folder_name(
        ROOT / "tests" / "test_agent.py", recordings_dir=ROOT / "recordings", rootdir=ROOT
    )
    assert name == "tests.test_agent"


def test_a_test_file_outside_rootdir_uses_its_stem() -> None:
    name = module_folder_name(Path("/elsewhere/test_x.py"), recordings_dir=RECORDINGS, rootdir=ROOT)
    assert name == "test_x"


def test_the_test_name_holds_classes_function_and_parameter_id() -> None:
    assert recording_stem("test_answers") == "test_answers"
    assert recording_stem("test_y", classes=["TestX"]) == "TestX.test_y"
    assert recording_stem("test_y", classes=["TestOuter", "TestInner"]) == (
        "TestOuter.TestInner.test_y"
    )
    assert recording_stem("test_sizes", parameter_id="big-3") == "test_sizes-big-3"
    assert recording_stem("test_sizes", parameter_id="a b").startswith("test_sizes-a_b-")


def test_the_documented_example_path() -> None:
    path = recording_path(
        recordings_dir=RECORDINGS,
        test_file=ROOT / "tests" / "test_agent.py",
        rootdir=ROOT,
        function="test_answers",
    )
    assert path == ROOT / "tests" / "recordings" / "test_agent" / "test_answers.jsonl"
