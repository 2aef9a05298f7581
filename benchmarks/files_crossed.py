"""How many of openprogram's files and functions one replayed call passes through, run by hand.

    python benchmarks/files_crossed.py          # both measures, a line each
    python benchmarks/files_crossed.py -v       # and every file with the functions called in it

A newcomer following one call through the code opens every file it crosses, so this counts
them (a measure of how the house reads, not of speed). Two calls are traced, each on a warm
session (one call of the same shape replayed first, so first-use work is not counted):

1. one non-streamed Chat Completions request of the official ``openai`` SDK, replayed at the
   HTTP boundary inside ``openprogram.record_replay(..., mode="replay")``;
2. one ``complete_simple`` on the offline ``echo`` model, replayed at the provider registry
   inside the same kind of block.

``sys.setprofile`` sees every Python function call; a function counts once however often it
is called (comprehensions and generator expressions are not counted as functions of their
own), a file once however many of its functions are called. The SDK talks to a
hand-made transport (no socket) only while recording; under replay no transport is reached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import openai

import openprogram
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

PACKAGE = Path(openprogram.__file__).resolve().parent


def client_library() -> Any:
    """The HTTP client library the installed ``openai`` sends through."""
    if int(openai.__version__.split(".")[0]) >= 3:
        import httpx2

        return httpx2
    import httpx

    return httpx


LIB = client_library()


class ServedBytes(LIB.SyncByteStream):  # type: ignore[misc, name-defined]
    """A body read from the network as far as the client can tell: it arrives as a stream."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        yield self.body


class PreparedNetwork(LIB.BaseTransport):  # type: ignore[misc, name-defined]
    """A network transport as far as the boundary can tell, answering every request with one
    chat completion."""

    def handle_request(self, request: Any) -> Any:
        body = {
            "id": "chatcmpl-trace",
            "object": "chat.completion",
            "created": 1_764_460_800,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hello"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
        }
        headers = {"content-type": "application/json", "x-request-id": "req_trace"}
        return LIB.Response(200, headers=headers, stream=ServedBytes(json.dumps(body).encode()))


def traced(call: Callable[[], object]) -> dict[str, set[str]]:
    """The functions of openprogram ``call`` runs, by file (relative to the package)."""
    crossed: dict[str, set[str]] = defaultdict(set)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        path = Path(code.co_filename)
        if path.is_relative_to(PACKAGE) and not code.co_name.startswith("<"):
            crossed[str(path.relative_to(PACKAGE))].add(code.co_qualname)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return crossed


def sdk_request(folder: Path) -> dict[str, set[str]]:
    path = folder / "sdk.jsonl"
    sdk = openai.OpenAI(
        api_key="sk-trace",
        base_url="https://api.openai.com/v1",
        max_retries=0,
        http_client=LIB.Client(transport=PreparedNetwork()),
    )

    def ask(question: str) -> object:
        messages = [{"role": "user", "content": question}]
        return sdk.chat.completions.create(model="gpt-4o-mini", messages=messages)

    with openprogram.record_replay(path, mode="record"):
        ask("warm-up")
        ask("hello")
    with openprogram.record_replay(path, mode="replay"):
        ask("warm-up")
        return traced(lambda: ask("hello"))


def registry_replay(folder: Path) -> dict[str, set[str]]:
    path = folder / "echo.jsonl"

    def ask(question: str) -> object:
        context = Context(messages=[UserMessage(content=question)])
        return asyncio.run(complete_simple(ECHO_MODEL, context))

    with openprogram.record_replay(path, mode="record"):
        ask("warm-up")
        ask("hello")
    with openprogram.record_replay(path, mode="replay"):
        ask("warm-up")
        # asyncio.run's own frames are not openprogram's; only the call's are counted.
        return traced(lambda: ask("hello"))


def report(title: str, crossed: dict[str, set[str]], *, verbose: bool) -> dict[str, int]:
    functions = sum(len(names) for names in crossed.values())
    print(f"{title}: {len(crossed)} files, {functions} functions")
    if verbose:
        for file, names in sorted(crossed.items()):
            print(f"    {file:45} {len(names):3}  {', '.join(sorted(names))}")
    return {"files": len(crossed), "functions": functions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list the files crossed")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        sdk = sdk_request(Path(folder))
        registry = registry_replay(Path(folder))
    verbose = arguments.verbose and not arguments.json
    counts = {
        "sdk_request": report("one replayed openai SDK request", sdk, verbose=verbose),
        "registry_call": report("one complete_simple on echo, replayed", registry, verbose=verbose),
    }
    if arguments.json:
        print(json.dumps(counts))


if __name__ == "__main__":
    main()
