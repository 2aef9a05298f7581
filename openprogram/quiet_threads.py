"""Threads that leave every signal to the main thread.

The kernel hands a process-directed signal (a SIGTERM from a supervisor, a SIGINT sent to
one pid) to any thread that does not block it. Python runs its handlers only in the main
thread, and only once that thread is running Python again: a signal the kernel gave to a
helper thread — the relay's, the recording proxy's, the connection watch's — does not
interrupt the main thread's wait for a command, so exec would neither pass the signal on
nor stop waiting. A thread started by :func:`start_quiet` blocks every signal (and the
threads it starts inherit that), so each one reaches the main thread."""

from __future__ import annotations

import signal
import threading

__all__ = ["start_quiet"]


def start_quiet(thread: threading.Thread) -> None:
    """Start ``thread`` with every signal blocked in it (where signal masks exist)."""
    if not hasattr(signal, "pthread_sigmask"):
        thread.start()
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
