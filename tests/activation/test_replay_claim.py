"""One process replays a recording: the claim on it is taken once, and whoever loses the race
reads the winner's pid — never an empty claim (a thread of the winning process once read the
file between its creation and its pid, and refused its own process as 'process 0')."""

from __future__ import annotations

import threading
from pathlib import Path

from openprogram.activation.exec_environment import CLAIM_FILE, claim_replay, claimant


def race(folder: Path, pids: list[int]) -> list[int]:
    """``claim_replay`` for each pid, all started at once; what each call returned."""
    start = threading.Barrier(len(pids))
    answers: list[int] = [0] * len(pids)

    def take(index: int) -> None:
        start.wait()
        answers[index] = claim_replay(folder, pids[index])

    threads = [threading.Thread(target=take, args=(index,)) for index in range(len(pids))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_threads_of_one_process_all_hold_its_claim(tmp_path: Path) -> None:
    for round_ in range(50):
        folder = tmp_path / str(round_)
        folder.mkdir()
        assert race(folder, [4242] * 8) == [4242] * 8
        assert claimant(folder) == 4242


def test_of_several_processes_one_wins_and_every_other_reads_its_pid(tmp_path: Path) -> None:
    for round_ in range(50):
        folder = tmp_path / str(round_)
        folder.mkdir()
        answers = race(folder, list(range(100, 108)))
        winner = claimant(folder)
        assert winner in range(100, 108)
        assert answers == [winner] * 8
        assert sorted(path.name for path in folder.iterdir()) == [CLAIM_FILE]  # no drafts left


def test_no_claim_is_none(tmp_path: Path) -> None:
    assert claimant(tmp_path) is None
    (tmp_path / CLAIM_FILE).write_text("")
    assert claimant(tmp_path) is None
