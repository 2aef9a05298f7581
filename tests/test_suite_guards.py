"""The suite's own guards (``tests/conftest.py``) hold: a test that tries to reach another
machine, by a connection or by a datagram, fails before anything is sent; and the browser
the HTML tests launch writes into a home of its own, not the home folder."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.conftest import NetworkAccessError
from tests.support.chromium import chromium

ANOTHER_MACHINE = ("192.0.2.1", 9)  # TEST-NET-1: routed nowhere, and never reached here


def test_a_connection_to_another_machine_fails_the_test() -> None:
    with socket.socket() as sock:
        with pytest.raises(NetworkAccessError):
            sock.connect(ANOTHER_MACHINE)
        with pytest.raises(NetworkAccessError):
            sock.connect_ex(ANOTHER_MACHINE)


def test_a_datagram_to_another_machine_fails_the_test() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(NetworkAccessError):
            sock.sendto(b"x", ANOTHER_MACHINE)
        with pytest.raises(NetworkAccessError):
            sock.sendto(b"x", 0, ANOTHER_MACHINE)
        with pytest.raises(NetworkAccessError):
            sock.sendmsg([b"x"], [], 0, ANOTHER_MACHINE)


def test_this_machine_is_reachable() -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
    ):
        listener.bind(("127.0.0.1", 0))
        listener.settimeout(60)  # only a failed test waits
        sock.sendto(b"here", listener.getsockname())
        assert listener.recv(16) == b"here"


def test_a_browser_writes_into_a_home_of_its_own(tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])  # the autouse fixture's fake home, as a test sees HOME
    with chromium(tmp_path) as browser:
        page = browser.new_page()
        page.set_content("<p>opened</p>")
        assert page.inner_text("p") == "opened"
    assert not (home / ".config" / "chromium").exists()
    assert not (home / ".cache").exists()
    # where Chromium wrote instead (so the assertions above can fail)
    assert (tmp_path / "chromium-home" / ".config" / "chromium").is_dir()
