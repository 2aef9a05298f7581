"""Long agent sessions, before and after, side by side in one run (run by hand).

    python benchmarks/bench_long_sessions.py           # 100, 200 and 1,000 calls
    python benchmarks/bench_long_sessions.py --quick   # 25, 50 and 100 calls: a fast look

"Before" is the code at commit 20c0c8b (where this work started), exported with
``git archive`` into a temporary folder; every measurement runs in a fresh subprocess with
that folder, or this checkout, first on ``PYTHONPATH``, so both sides run the same code
below on their own openprogram. The session is a scripted model calling ``read_file`` in the
built-in agent loop (one 900-byte file read per call, then an answer). Per session size:

* the recording's size (and the ratio for twice the calls: 2.0 is linear, 4.0 quadratic);
* the loop run live against the scripted model with no recording, then replayed (load
  included): replay / live;
* ``verify``: its time and peak memory (the subprocess's max RSS, less that of a subprocess
  that only imports the same modules), against the recording's size before;
* load at the floor: a 100,000-event recording (100 calls of 1,000 text deltas) loaded and
  every call served by ``ReplayProvider``, against ``orjson.loads`` of every line plus one
  ``AssistantMessageEvent`` built per event row (``event_from_json``: the objects replay
  serves);
* ``list``: a store of copies of one ~1 MB recording written by that side's recorder, cold
  (no summary cache; files in the page cache) against reading their bytes, and the warm table
  against ``list --json``, both through the CLI in-process.

Each figure is the median of a few runs; the machine is shared, so read the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BEFORE = "20c0c8b"
HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent


# --- what runs inside a subprocess, on either side ---------------------------------------


def scripted_provider(calls: int) -> Any:
    from openprogram.providers.events import (
        DoneEvent,
        StartEvent,
        TextDeltaEvent,
        TextEndEvent,
        TextStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
        ToolCallStartEvent,
    )
    from openprogram.providers.types import AssistantMessage, TextContent, ToolCall

    class Scripted:
        requires_credentials = False
        api_key_env = None

        def __init__(self) -> None:
            self.made = 0

        def stream_simple(self, model: Any, context: Any, options: Any = None) -> Any:
            return self._reply(model)

        stream = stream_simple

        async def _reply(self, model: Any) -> Any:
            turn, self.made = self.made, self.made + 1
            yield StartEvent(api=model.api, provider=model.provider, model=model.id)
            if turn < calls - 1:
                path = f"notes/file{turn % 20}.txt"
                tool = ToolCall(id=f"call_{turn}", name="read_file", arguments={"path": path})
                yield ToolCallStartEvent(content_index=0, id=tool.id, name=tool.name)
                yield ToolCallDeltaEvent(content_index=0, delta=json.dumps({"path": path}))
                yield ToolCallEndEvent(content_index=0, tool_call=tool)
                content: list[Any] = [tool]
                reason = "toolUse"
            else:
                block = TextContent(text="I have read the notes.")
                yield TextStartEvent(content_index=0)
                yield TextDeltaEvent(content_index=0, delta=block.text)
                yield TextEndEvent(content_index=0, content=block.text)
                content, reason = [block], "stop"
            message = AssistantMessage(
                content=content,
                api=model.api,
                provider=model.provider,
                model=model.id,
                stop_reason=reason,
            )
            yield DoneEvent(reason=reason, message=message)

    return Scripted()


def notes(folder: Path) -> Path:
    (folder / "notes").mkdir(parents=True, exist_ok=True)
    for n in range(20):
        line = f"note {n}: the quick brown fox jumps over the lazy dog\n"
        (folder / "notes" / f"file{n}.txt").write_text(line * 16)
    return folder


def run_session(provider: Any, calls: int, root: Path) -> None:
    from openprogram.agent.file_tools import builtin_tools
    from openprogram.agent.loop import run_agent
    from openprogram.providers.registry import provider_scope
    from openprogram.providers.types import Model

    model = Model(id="bench", api="bench", provider="bench")
    with provider_scope(resolve=lambda api: provider):
        asyncio.run(
            run_agent(
                model,
                "Read the notes.",
                system_prompt="You read files.",
                tools=builtin_tools(root),
                max_iterations=calls + 1,
            )
        )


def measure_session(calls: int, folder: Path, repeats: int) -> dict[str, Any]:
    from openprogram.provider_boundary.recorder import RecordingProvider
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.recording.writer import close_recording_writers

    root = notes(folder / "root")
    path = folder / f"session-{calls}.jsonl"
    live, replayed = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        run_session(scripted_provider(calls), calls, root)
        live.append(time.perf_counter() - start)
    run_session(RecordingProvider(scripted_provider(calls), path), calls, root)
    close_recording_writers()
    for _ in range(repeats):
        start = time.perf_counter()
        provider = ReplayProvider(path)
        run_session(provider, calls, root)
        replayed.append(time.perf_counter() - start)
        provider.assert_consumed()
    return {
        "size": path.stat().st_size,
        "live": statistics.median(live),
        "replay": statistics.median(replayed),
        "path": str(path),
        "root": str(root),
    }


def measure_verify(path: Path, root: Path, imports_only: bool) -> dict[str, Any]:
    from openprogram.harness.verification import verify_recording

    start = time.perf_counter()
    if not imports_only:
        os.chdir(root)
        result = verify_recording(path, root=root)
        if not result.ok:
            raise SystemExit(f"verify failed: {result.divergence}")
    return {
        "time": time.perf_counter() - start,
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def measure_load(folder: Path, repeats: int) -> dict[str, Any]:
    import orjson

    from openprogram.provider_boundary.recorder import RecordingProvider
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.providers.events import (
        AssistantMessage,
        DoneEvent,
        StartEvent,
        TextContent,
        TextDeltaEvent,
        TextEndEvent,
        TextStartEvent,
        event_from_json,
    )
    from openprogram.providers.types import Context, Model, UserMessage
    from openprogram.recording.writer import close_recording_writers

    model = Model(id="bench", api="bench", provider="bench")
    deltas = 996
    text = "fox " * deltas

    class Deltas:
        requires_credentials = False
        api_key_env = None

        def stream_simple(self, model: Any, context: Any, options: Any = None) -> Any:
            return self._reply()

        stream = stream_simple

        async def _reply(self) -> Any:
            yield StartEvent(api="bench", provider="bench", model="bench")
            yield TextStartEvent(content_index=0)
            for _ in range(deltas):
                yield TextDeltaEvent(content_index=0, delta="fox ")
            yield TextEndEvent(content_index=0, content=text)
            message = AssistantMessage(
                content=[TextContent(text=text)],
                api="bench",
                provider="bench",
                model="bench",
                stop_reason="stop",
            )
            yield DoneEvent(reason="stop", message=message)

    contexts = [Context(messages=[UserMessage(content=f"q{n}", timestamp=1)]) for n in range(100)]
    path = folder / "events.jsonl"

    async def record() -> None:
        recorder = RecordingProvider(Deltas(), path)
        for context in contexts:
            async for _ in recorder.stream_simple(model, context):
                pass

    asyncio.run(record())
    close_recording_writers()

    def floor() -> int:
        built = 0
        for line in path.read_bytes().splitlines():
            row = orjson.loads(line)
            if row["type"] == "event":
                event_from_json(row["event"])
                built += 1
        return built

    def load_and_serve() -> int:
        provider = ReplayProvider(path)

        async def serve() -> int:
            served = 0
            for context in contexts:
                async for _ in provider.stream_simple(model, context):
                    served += 1
            return served

        return asyncio.run(serve())

    floors, loads = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        events = floor()
        floors.append(time.perf_counter() - start)
        start = time.perf_counter()
        served = load_and_serve()
        loads.append(time.perf_counter() - start)
    assert events == served == 100_000, (events, served)
    return {"floor": statistics.median(floors), "load": statistics.median(loads)}


def measure_list(folder: Path, files: int, repeats: int) -> dict[str, Any]:
    from typer.testing import CliRunner

    from openprogram.cli.app import app
    from openprogram.store.summary_cache import CACHE_FILE_NAME, summarize_store

    os.environ["OPENPROGRAM_HOME"] = str(folder / "home")
    os.environ["COLUMNS"] = "120"
    store = folder / "home" / "recordings"
    store.mkdir(parents=True)
    one = _recording_of_about_a_megabyte(folder)
    paths = []
    for n in range(files):
        copy = store / f"rec-{n:04d}.jsonl"
        shutil.copyfile(one, copy)
        paths.append(copy)
    cache = store / CACHE_FILE_NAME
    reads, colds, tables, jsons = [], [], [], []
    runner = CliRunner()
    summarize_store(store)
    runner.invoke(app, ["recordings", "list"])  # imports done, cache written: both warm
    runner.invoke(app, ["recordings", "list", "--json"])
    for _ in range(repeats):
        start = time.perf_counter()
        for path in paths:
            path.read_bytes()
        reads.append(time.perf_counter() - start)
        cache.unlink(missing_ok=True)
        start = time.perf_counter()
        listed = summarize_store(store)
        colds.append(time.perf_counter() - start)
        assert len(listed) == files
        assert all(item.valid for item in listed)
        start = time.perf_counter()
        table = runner.invoke(app, ["recordings", "list"])
        tables.append(time.perf_counter() - start)
        start = time.perf_counter()
        as_json = runner.invoke(app, ["recordings", "list", "--json"])
        jsons.append(time.perf_counter() - start)
        assert table.exit_code == 0, table.output
        assert as_json.exit_code == 0, as_json.output
    return {
        "file_size": one.stat().st_size,
        "read": statistics.median(reads),
        "cold": statistics.median(colds),
        "table": statistics.median(tables),
        "json": statistics.median(jsons),
    }


def _recording_of_about_a_megabyte(folder: Path) -> Path:
    """Ten calls of 800 text deltas each, recorded by this side's recorder."""
    from openprogram.provider_boundary.recorder import RecordingProvider
    from openprogram.providers.events import (
        AssistantMessage,
        DoneEvent,
        StartEvent,
        TextContent,
        TextDeltaEvent,
        TextEndEvent,
        TextStartEvent,
    )
    from openprogram.providers.types import Context, Model, UserMessage
    from openprogram.recording.writer import close_recording_writers

    model = Model(id="bench", api="bench", provider="bench")

    class Deltas:
        requires_credentials = False
        api_key_env = None

        def stream_simple(self, model: Any, context: Any, options: Any = None) -> Any:
            return self._reply()

        async def _reply(self) -> Any:
            yield StartEvent(api="bench", provider="bench", model="bench")
            yield TextStartEvent(content_index=0)
            for _ in range(800):
                yield TextDeltaEvent(content_index=0, delta="the quick brown fox ")
            yield TextEndEvent(content_index=0, content="done")
            message = AssistantMessage(
                content=[TextContent(text="done")],
                api="bench",
                provider="bench",
                model="bench",
                stop_reason="stop",
            )
            yield DoneEvent(reason="stop", message=message)

    path = folder / "one.jsonl"

    async def record() -> None:
        recorder = RecordingProvider(Deltas(), path)
        for n in range(10):
            context = Context(messages=[UserMessage(content=f"q{n}", timestamp=1)])
            async for _ in recorder.stream_simple(model, context):
                pass

    asyncio.run(record())
    close_recording_writers()
    return path


def child(arguments: list[str]) -> None:
    """The subprocess side: one measurement, printed as JSON."""
    kind, folder, *rest = arguments
    work = Path(folder)
    if kind == "session":
        result = measure_session(int(rest[0]), work, int(rest[1]))
    elif kind == "verify":
        result = measure_verify(Path(rest[0]), Path(rest[1]), rest[2] == "imports")
    elif kind == "load":
        result = measure_load(work, int(rest[0]))
    else:
        result = measure_list(work, int(rest[0]), int(rest[1]))
    print(json.dumps(result))


# --- the parent: both sides, side by side ------------------------------------------------


def on_side(tree: Path, *arguments: str) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    environment.pop("OPENPROGRAM_HOME", None)
    done = subprocess.run(
        [sys.executable, str(HERE), "--child", *arguments],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {arguments}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def export_before(folder: Path) -> Path:
    tree = folder / "before"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", BEFORE, "openprogram"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    sizes = (25, 50, 100) if args.quick else (100, 200, 1_000)
    repeats = 1 if args.quick else 3
    files = 100 if args.quick else 1_000
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; before = {BEFORE}")
    with tempfile.TemporaryDirectory(prefix="bench-long-") as temporary:
        folder = Path(temporary)
        sides = {"before": export_before(folder), "after": ROOT}
        results: dict[str, dict[str, Any]] = {side: {} for side in sides}
        # Side by side: each measurement on one side, then at once on the other.
        for calls in sizes:
            for side, tree in sides.items():
                work = folder / f"{side}-{calls}"
                work.mkdir()
                slow = side == "before" and calls >= 1_000
                times = "1" if slow else str(repeats)
                session = on_side(tree, "session", str(work), str(calls), times)
                recorded = session["path"], session["root"]
                base = on_side(tree, "verify", str(work), *recorded, "imports")
                verified = on_side(tree, "verify", str(work), *recorded, "run")
                session["verify"] = verified["time"]
                session["verify_memory"] = verified["rss"] - base["rss"]
                results[side][str(calls)] = session
        for side, tree in sides.items():
            (folder / f"{side}-load").mkdir()
            results[side]["load"] = on_side(
                tree, "load", str(folder / f"{side}-load"), str(repeats)
            )
        for side, tree in sides.items():
            (folder / f"{side}-list").mkdir()
            list_repeats = "1" if side == "before" else str(repeats)
            results[side]["list"] = on_side(
                tree, "list", str(folder / f"{side}-list"), str(files), list_repeats
            )
    report(results, sizes, files)


def report(results: dict[str, dict[str, Any]], sizes: tuple[int, ...], files: int) -> None:
    mb = 1024 * 1024
    for side in ("before", "after"):
        print(f"\n{side}:")
        print(
            "  calls      size   x2 calls   live ms  replay ms  replay/live  verify s"
            "  verify MB  /size"
        )
        previous: dict[str, Any] | None = None
        for calls in sizes:
            row = results[side][str(calls)]
            growth = ""
            if previous is not None and calls == 2 * previous["calls"]:
                growth = f"x{row['size'] / previous['size']:.2f}"
            size_before = results["before"][str(calls)]["size"]
            print(
                f"  {calls:5d} {row['size'] / mb:8.2f}MB {growth:>9} {row['live'] * 1e3:9.0f}"
                f" {row['replay'] * 1e3:10.0f} {row['replay'] / row['live']:11.2f}x"
                f" {row['verify']:9.2f} {row['verify_memory'] / mb:10.1f}"
                f" {row['verify_memory'] / size_before:6.2f}x"
            )
            previous = {"calls": calls, "size": row["size"], "memory": row["verify_memory"]}
        memory = [results[side][str(calls)]["verify_memory"] for calls in sizes]
        if len(sizes) >= 2 and sizes[1] == 2 * sizes[0]:
            print(f"  verify memory for x2 calls: x{memory[1] / max(memory[0], 1):.2f}")
        load = results[side]["load"]
        print(
            f"  load+serve 100,000 events: {load['load'] * 1e3:.0f} ms, floor "
            f"{load['floor'] * 1e3:.0f} ms: {load['load'] / load['floor']:.2f}x the floor"
        )
        listed = results[side]["list"]
        print(
            f"  list of {files} x {listed['file_size'] / mb:.2f} MB: cold summaries "
            f"{listed['cold'] * 1e3:.0f} ms vs reading the bytes {listed['read'] * 1e3:.0f} ms "
            f"({listed['cold'] / listed['read']:.2f}x); warm table {listed['table'] * 1e3:.0f} ms "
            f"vs --json {listed['json'] * 1e3:.0f} ms ({listed['table'] / listed['json']:.2f}x)"
        )


if __name__ == "__main__":
    main()
