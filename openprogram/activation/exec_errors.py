"""The errors of ``openprogram exec``: a command it cannot run under record/replay, and a
second process of the command that tries to replay the recording another one replays."""

from __future__ import annotations

from openprogram.errors import OpenProgramError
from openprogram.recording.mismatch import ReplayMismatch

__all__ = ["ExecSetupError", "ReplayInAnotherProcessError"]


class ExecSetupError(OpenProgramError):
    """``openprogram exec`` cannot run the command with record/replay active, or the command
    ran without it (a usage problem: exit 2). ``cause`` says why."""

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(cause)


class ReplayInAnotherProcessError(ReplayMismatch):
    """A process of an ``openprogram exec`` command asked for a call of the recording that
    another of its processes (``owner_pid``) replays: one recording is served by one process,
    in order, so a second one is refused instead of being served calls out of turn."""

    def __init__(self, call_index: int, owner_pid: int, pid: int) -> None:
        self.owner_pid = owner_pid
        self.pid = pid
        super().__init__(
            call_index,
            "process",
            owner_pid,
            pid,
            detail=(
                f"process {pid} asked for a call, but process {owner_pid} of this command "
                "replays the recording: one recording is replayed by one process; make the "
                "model calls from one process, or record each process into its own recording"
            ),
        )
