"""``read_file`` and ``list_directory``: confined to their root, deterministic, clear errors."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from openprogram.agent import AgentTool, builtin_tools, run_agent
from openprogram.agent.file_tools import LIST_DIRECTORY_MAX_ENTRIES, READ_FILE_LIMIT_BYTES
from openprogram.errors import ToolInputError
from openprogram.providers import ECHO_MODEL, ToolResultMessage


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "notes.txt").write_text("first line\nsecond line\n")
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.txt").write_text("deep")
    (tmp_path / "secret.txt").write_text("outside the root")
    return folder


def tools_in(root: Path) -> dict[str, AgentTool]:
    return {agent_tool.name: agent_tool for agent_tool in builtin_tools(root)}


def read(root: Path, path: str, **arguments: object) -> str:
    return asyncio.run(tools_in(root)["read_file"].invoke({"path": path, **arguments}))


def listing(root: Path, path: str | None = None) -> str:
    arguments = {} if path is None else {"path": path}
    return asyncio.run(tools_in(root)["list_directory"].invoke(arguments))


def test_there_are_two_tools_with_object_schemas() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == ["list_directory", "read_file"]
    assert tools[1].parameters["required"] == ["path"]
    for agent_tool in tools:
        assert agent_tool.definition.parameters["type"] == "object"


def test_read_file_returns_the_text(root: Path) -> None:
    assert read(root, "notes.txt") == "first line\nsecond line\n"
    assert read(root, "sub/deep.txt") == "deep"
    assert read(root, "sub/../notes.txt") == "first line\nsecond line\n"  # stays inside
    assert read(root, "./sub/deep.txt") == "deep"


def test_read_file_replaces_bytes_that_are_not_utf8(root: Path) -> None:
    (root / "mixed.bin").write_bytes("café ".encode() + b"\xff\xfe end")
    assert read(root, "mixed.bin") == "café \ufffd\ufffd end"


@pytest.mark.parametrize(
    "path", ["../secret.txt", "sub/../../secret.txt", "..", "../root/../secret.txt"]
)
def test_paths_climbing_out_of_the_root_are_refused(root: Path, path: str) -> None:
    with pytest.raises(ToolInputError, match="outside the working directory"):
        read(root, path)


def test_absolute_paths_are_refused_even_inside_the_root(root: Path) -> None:
    with pytest.raises(ToolInputError, match="is absolute"):
        read(root, str(root / "notes.txt"))
    with pytest.raises(ToolInputError, match="is absolute"):
        listing(root, "/")


def test_symbolic_links_resolving_outside_are_refused(root: Path) -> None:
    (root / "escape.txt").symlink_to(root.parent / "secret.txt")
    (root / "escape-dir").symlink_to(root.parent)
    with pytest.raises(ToolInputError, match="outside"):
        read(root, "escape.txt")
    with pytest.raises(ToolInputError, match="outside"):
        read(root, "escape-dir/secret.txt")
    with pytest.raises(ToolInputError, match="outside"):
        listing(root, "escape-dir")


def test_symbolic_links_inside_the_root_are_followed(root: Path) -> None:
    (root / "alias.txt").symlink_to("sub/deep.txt")
    assert read(root, "alias.txt") == "deep"


def test_a_symbolic_link_loop_is_a_clear_error(root: Path) -> None:
    (root / "loop").symlink_to("loop")
    with pytest.raises(ToolInputError, match="loop"):
        read(root, "loop")


def test_missing_files_and_folders_are_clear_errors(root: Path) -> None:
    with pytest.raises(ToolInputError, match=r"no such file: 'nope\.txt'"):
        read(root, "nope.txt")
    with pytest.raises(ToolInputError, match="is a folder; use list_directory"):
        read(root, "sub")
    with pytest.raises(ToolInputError, match="no such folder: 'nope'"):
        listing(root, "nope")
    with pytest.raises(ToolInputError, match="is a file; use read_file"):
        listing(root, "notes.txt")


@pytest.mark.parametrize("path", ["", 3, None])
def test_a_path_must_be_a_non_empty_string(root: Path, path: object) -> None:
    with pytest.raises(ToolInputError, match="non-empty string"):
        asyncio.run(tools_in(root)["read_file"].invoke({"path": path}))


def test_errors_never_name_the_root_so_results_replay_anywhere(root: Path) -> None:
    (root / "loop").symlink_to("loop")
    for path in ("../secret.txt", "nope.txt", "sub", "loop"):
        with pytest.raises(ToolInputError) as raised:
            read(root, path)
        assert str(root.parent) not in str(raised.value)


def test_a_big_file_is_cut_with_a_note_and_never_half_a_character(root: Path) -> None:
    (root / "big.txt").write_text("é" * 100)  # 200 bytes
    text = read(root, "big.txt", max_bytes=51)
    assert text == "é" * 25 + "\n[cut: showing the first 51 of 200 bytes]"
    assert read(root, "big.txt", max_bytes=200) == "é" * 100


def test_max_bytes_is_capped_and_checked(root: Path) -> None:
    (root / "huge.txt").write_bytes(b"x" * (READ_FILE_LIMIT_BYTES + 10))
    text = read(root, "huge.txt", max_bytes=10 * READ_FILE_LIMIT_BYTES)
    assert text.endswith(
        f"[cut: showing the first {READ_FILE_LIMIT_BYTES} of {READ_FILE_LIMIT_BYTES + 10} bytes]"
    )
    for bad in (0, -1, "10", True):
        with pytest.raises(ToolInputError, match="max_bytes"):
            read(root, "notes.txt", max_bytes=bad)


def test_the_default_read_limit_applies(root: Path) -> None:
    (root / "long.txt").write_bytes(b"y" * 100_001)
    assert read(root, "long.txt").endswith("[cut: showing the first 100000 of 100001 bytes]")


def test_list_directory_is_sorted_with_folders_marked(root: Path) -> None:
    for name in ("b.txt", "a.txt", "Z.txt", ".hidden", "a"):
        (root / name).write_text("") if name != "a" else (root / name).mkdir()
    assert listing(root) == "\n".join(
        [".hidden", "Z.txt", "a/", "a.txt", "b.txt", "notes.txt", "sub/"]
    )
    assert listing(root, "sub") == "deep.txt"
    assert listing(root, ".") == listing(root)


def test_an_empty_folder_says_so(root: Path) -> None:
    (root / "empty").mkdir()
    assert listing(root, "empty") == "(empty folder)"


def test_a_very_long_listing_is_cut(root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for index in range(LIST_DIRECTORY_MAX_ENTRIES + 5):
        (many / f"f{index:05d}").write_text("")
    lines = listing(root, "many").splitlines()
    assert len(lines) == LIST_DIRECTORY_MAX_ENTRIES + 1
    assert lines[-1] == (
        f"[cut: showing {LIST_DIRECTORY_MAX_ENTRIES} of {LIST_DIRECTORY_MAX_ENTRIES + 5} entries]"
    )


def test_the_default_root_is_the_working_directory_when_built(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    tools = {t.name: t for t in builtin_tools()}
    monkeypatch.chdir(root / "sub")  # changing directory later does not move the root
    assert asyncio.run(tools["read_file"].invoke({"path": "notes.txt"})).startswith("first")


async def test_in_a_session_a_refusal_is_an_error_result_the_model_reads(root: Path) -> None:
    run = await run_agent(
        ECHO_MODEL, '/tool read_file {"path": "../secret.txt"}', tools=builtin_tools(root)
    )

    result = run.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.is_error
    assert result.text == "ToolInputError: path '../secret.txt' is outside the working directory"
    assert run.final.text == f"echo:{result.text}"
    assert run.ok


def test_root_may_be_relative(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root.parent)
    assert read(Path(os.path.relpath(root)), "notes.txt").startswith("first")
