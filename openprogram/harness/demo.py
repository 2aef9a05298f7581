"""``openprogram demo``: the whole record → replay → verify cycle, self-contained and offline.

:class:`Demo` runs a tool-using session on the built-in ``echo`` model (no key, no network) in a
folder of its own, one step at a time: :meth:`~Demo.record` records the session into a recording in
that folder, :meth:`~Demo.replay` replays it offline, :meth:`~Demo.drift` changes the file the tool
reads and returns the report replay gives, and :meth:`~Demo.verify` puts the file back and re-runs
the session under replay, computing its transcript hash. Every provider lookup is answered in an
isolated registry scope (``provider_scope(resolve=...)``), so the user's configured mode is never
applied and their recordings store is never written to."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from openprogram.agent.file_tools import builtin_tools
from openprogram.agent.loop import run_agent
from openprogram.errors import ReplayMismatch
from openprogram.harness.verification import verify_recording
from openprogram.provider_boundary.recorder import RecordingProvider
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers.builtins.echo import ECHO_MODEL, EchoProvider
from openprogram.providers.registry import provider_scope
from openprogram.recording.writer import forget_writer

if TYPE_CHECKING:
    from openprogram.agent.loop import AgentEvent, AgentRun
    from openprogram.harness.verification import VerifyResult
    from openprogram.providers.registry import ApiProvider

NOTES_FILE = "notes.txt"
NOTES_TEXT = "hello from a file"
CHANGED_TEXT = "hello, changed"
PROMPT = "/tool read_file " + json.dumps({"path": NOTES_FILE})
"""The echo model calls ``read_file`` on this prompt, then answers with the tool's result."""
RECORDING_NAME = "demo.jsonl"


class Demo:
    """The demo's steps, in ``folder`` (an empty folder the caller owns and removes).

    ``on_event`` sees every session's events, for live display."""

    def __init__(
        self, folder: Path, *, on_event: Callable[[AgentEvent], None] | None = None
    ) -> None:
        self.folder = folder
        self.recording = folder / RECORDING_NAME
        self.notes = folder / NOTES_FILE
        self.on_event = on_event

    def record(self) -> AgentRun:
        """Run the session live on ``echo``, recording every call."""

        self.notes.write_text(NOTES_TEXT)
        try:
            return self._session(RecordingProvider(EchoProvider(), self.recording))
        finally:
            forget_writer(self.recording)

    def replay(self) -> AgentRun:
        """Run the session again, every call answered from the recording; raises
        ``ReplayMismatch`` or ``UnconsumedCallsError`` if it does not replay exactly."""

        provider = ReplayProvider(self.recording)
        run = self._session(provider)
        provider.assert_consumed()
        return run

    def drift(self) -> str | None:
        """Change the file the tool reads and replay: the report replay gives (None if,
        against expectations, it replayed)."""
        self.notes.write_text(CHANGED_TEXT)
        try:
            self._session(ReplayProvider(self.recording))
        except ReplayMismatch as mismatch:
            return str(mismatch)
        finally:
            self.notes.write_text(NOTES_TEXT)
        return None

    def verify(self) -> VerifyResult:
        """Re-run the recorded session under replay, as ``recordings verify`` does."""

        return verify_recording(self.recording, root=self.folder)

    def _session(self, provider: ApiProvider) -> AgentRun:

        tools = builtin_tools(self.folder)
        with provider_scope(resolve=lambda api: provider if api == ECHO_MODEL.api else None):
            return asyncio.run(run_agent(ECHO_MODEL, PROMPT, tools=tools, on_event=self.on_event))
