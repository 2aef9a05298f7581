"""Helper threads leave every signal to the main thread: a SIGTERM the kernel handed to the
relay's, the proxy's or the connection watch's thread would not wake exec's wait for its
command, and would never be passed on."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from openprogram.isolation import Relay
from openprogram.quiet_threads import start_quiet
from tests.support.proxy_server import running_proxy

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="reads the threads' signal masks in /proc"
)


def blocked_signals(thread: threading.Thread) -> set[int]:
    """The signals ``thread`` blocks, read from the kernel's view of it."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    mask = int(
        next(line for line in status.splitlines() if line.startswith("SigBlk:")).split()[1], 16
    )
    return {number for number in range(1, 65) if mask & (1 << (number - 1))}


@contextmanager
def named_thread(name: str) -> Iterator[threading.Thread]:
    yield next(thread for thread in threading.enumerate() if thread.name == name)


def test_a_quiet_thread_blocks_every_signal_and_its_starter_blocks_none_more() -> None:
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    start_quiet(thread)
    try:
        assert {signal.SIGTERM, signal.SIGINT, signal.SIGHUP} <= blocked_signals(thread)
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    finally:
        release.set()
        thread.join()


def test_the_relays_thread_leaves_signals_to_the_main_thread() -> None:
    with Relay(()), named_thread("openprogram-relay") as thread:
        assert {signal.SIGTERM, signal.SIGINT} <= blocked_signals(thread)


def test_the_recording_proxys_thread_leaves_signals_to_the_main_thread() -> None:
    with running_proxy(), named_thread("openprogram-serve") as thread:
        assert {signal.SIGTERM, signal.SIGINT} <= blocked_signals(thread)
