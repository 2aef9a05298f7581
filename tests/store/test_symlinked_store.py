"""A symlinked store folder is a legitimate setup: it is resolved once, and listing, deleting
and pruning act inside the folder it resolved to, never following a link found inside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from openprogram.errors import RecordingRefusedError
from openprogram.store import store as store_module
from openprogram.store.names import recording_files, resolve_store
from openprogram.store.store import check_deletable, delete_recording, prune_recordings
from openprogram.store.summary_cache import summarize_store
from tests.support.cli_runner import run
from tests.support.recording_rows import write_recording


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """The real store folder, holding a, b and c."""
    folder = tmp_path / "disk" / "recordings"
    folder.mkdir(parents=True)
    for name in ("a", "b", "c"):
        write_recording(folder / f"{name}.jsonl")
    return folder


@pytest.fixture
def link(tmp_path: Path, target: Path) -> Path:
    """``<folder>/recordings``, a symlink to ``target``."""
    path = tmp_path / "linked" / "recordings"
    path.parent.mkdir(exist_ok=True)
    path.symlink_to(target)
    return path


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """Another folder holding recordings of the same names, which must never be touched."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    for name in ("a", "b", "c"):
        write_recording(folder / f"{name}.jsonl")
    return folder


def names(folder: Path) -> list[str]:
    return sorted(path.stem for path in folder.glob("*.jsonl"))


def test_the_store_is_resolved_and_paths_are_inside_its_target(link: Path, target: Path) -> None:
    assert resolve_store(link) == target.resolve()
    assert [path.parent for path, _ in recording_files(link)] == [target.resolve()] * 3
    assert {summary.path.parent for summary in summarize_store(link)} == {target.resolve()}


def test_delete_and_prune_through_the_link_act_in_its_target(link: Path, target: Path) -> None:
    assert delete_recording(link, "a", active=None) == target.resolve() / "a.jsonl"
    result = prune_recordings(link, keep=0, active=link / "c.jsonl")
    assert result.removed == [target.resolve() / "b.jsonl"]
    assert names(target) == ["c"]


def test_a_link_repointed_during_prune_cannot_send_it_elsewhere(
    link: Path, target: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = store_module.summarize_store

    def list_then_repoint(folder: Path) -> object:
        listed = listing(folder)
        link.unlink()
        link.symlink_to(elsewhere)  # someone repoints the store while prune runs
        return listed

    monkeypatch.setattr(store_module, "summarize_store", list_then_repoint)

    result = prune_recordings(link, keep=1)

    assert len(result.removed) == 2
    assert len(names(target)) == 1
    assert names(elsewhere) == ["a", "b", "c"]


def test_a_link_repointed_during_delete_cannot_send_it_elsewhere(
    link: Path, target: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checking = store_module.check_deletable

    def check_then_repoint(store: Path, arg: str, *, active: object) -> Path:
        path = checking(store, arg, active=None)
        link.unlink()
        link.symlink_to(elsewhere)
        return path

    monkeypatch.setattr(store_module, "check_deletable", check_then_repoint)

    delete_recording(link, "b", active=None)

    assert names(target) == ["a", "c"]
    assert names(elsewhere) == ["a", "b", "c"]


def test_links_inside_the_store_are_never_followed(
    link: Path, target: Path, elsewhere: Path
) -> None:
    (target / "outside.jsonl").symlink_to(elsewhere / "a.jsonl")

    with pytest.raises(RecordingRefusedError, match="symbolic link"):
        check_deletable(link, "outside", active=None)
    result = prune_recordings(link, keep=0)

    assert target.resolve() / "outside.jsonl" not in result.removed
    assert (target / "outside.jsonl").is_symlink()
    assert names(elsewhere) == ["a", "b", "c"]


def test_the_commands_agree_through_a_symlinked_store(
    tmp_path: Path, target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "openprogram-home"
    home.mkdir()
    (home / "recordings").symlink_to(target)
    monkeypatch.setenv("OPENPROGRAM_HOME", str(home))
    (home / "config.toml").write_text('[record_replay]\nmode = "replay"\nfile = "c"\n')

    listed = json.loads(run("list", "--json").stdout)
    assert {item["path"] for item in listed} == {
        str(target.resolve() / f"{name}.jsonl") for name in ("a", "b", "c")
    }
    assert [item["name"] for item in listed if item["active"]] == ["c"]

    deleted = run("delete", "a", "--yes")
    assert deleted.stdout == f"Deleted {target.resolve() / 'a.jsonl'}\n"
    refused = run("delete", "c", "--yes")
    assert refused.exit_code == 1

    pruned = run("prune", "--keep", "0", "--yes")
    assert pruned.exit_code == 0, pruned.output
    assert f"Deleted {target.resolve() / 'b.jsonl'}" in pruned.stdout
    assert names(target) == ["c"]
    assert (home / "recordings").is_symlink()
    assert os.path.realpath(home / "recordings") == str(target.resolve())
