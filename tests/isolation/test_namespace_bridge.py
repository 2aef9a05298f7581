"""The bridge runs a command in a loopback-only namespace: live loopback servers outside
count every hit, and the commands inside reach them 0 times and are reported stopped.

Safety if the isolation were broken: every target here is on loopback, except the DNS
query, which the script inside sends only after it has checked that it is in a network
namespace other than the test's own (and says so, sending nothing, when it is not)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram.isolation import Relay, unavailable_reason
from openprogram.isolation.launch import bridge_argv
from tests.isolation.live import HitServer, UdpCounter

pytestmark = pytest.mark.needs_namespaces

CURL = "/usr/bin/curl"
TIMEOUT = 60


def _refused(port: int, host: str = "127.0.0.1") -> str:
    return f"{host}:{port} (TCP, refused in the isolated namespace)"


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
    )


def _python(source: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", source]


def _in_another_namespace_first(source: str) -> str:
    """``source`` run only once the script has seen it is not in the test's network
    namespace (so a non-loopback address can never leave this machine)."""
    outside = os.stat("/proc/self/ns/net").st_ino
    return (
        "import os, sys\n"
        f"if os.stat('/proc/self/ns/net').st_ino == {outside}:\n"
        "    print('NOT ISOLATED: nothing sent')\n"
        "    sys.exit(99)\n" + source
    )


def test_the_namespace_can_be_made_here() -> None:
    assert unavailable_reason() is None


def test_curl_inside_reaches_a_live_server_zero_times_and_is_reported(
    hit_server: HitServer,
) -> None:
    if not Path(CURL).exists():
        pytest.skip(f"{CURL} is not installed here")
    with Relay() as relay:
        done = _run(relay.wrap([CURL, "-sS", "--noproxy", "*", "--max-time", "10", hit_server.url]))
        stopped = relay.stopped()
    assert done.returncode == 7, done.stderr  # curl: could not connect
    assert hit_server.hits == 0
    assert stopped == (_refused(hit_server.port),)


def test_a_python_socket_and_a_udp_datagram_are_stopped_and_reported(
    hit_server: HitServer, udp_counter: UdpCounter
) -> None:
    source = (
        "import socket\n"
        "tcp = socket.socket()\n"
        f"print('tcp', tcp.connect_ex(('127.0.0.1', {hit_server.port})))\n"
        "udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"udp.sendto(b'datagram', ('127.0.0.1', {udp_counter.port}))\n"
    )
    with Relay() as relay:
        done = _run(relay.wrap(_python(source)))
        stopped = relay.stopped()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tcp 111\n"  # ECONNREFUSED, at once
    assert (hit_server.hits, udp_counter.hits) == (0, 0)
    assert set(stopped) == {
        _refused(hit_server.port),
        f"127.0.0.1:{udp_counter.port} (UDP, unreachable in the isolated namespace)",
    }


def test_a_connection_to_any_address_is_refused_at_once_and_reported() -> None:
    source = _in_another_namespace_first(
        "import socket\n"
        "v4, v6 = socket.socket(), socket.socket(socket.AF_INET6)\n"
        "print(v4.connect_ex(('203.0.113.7', 443)), v6.connect_ex(('2001:db8::7', 443)))\n"
    )
    with Relay() as relay:
        done = _run(relay.wrap(_python(source)))
        stopped = relay.stopped()
    assert done.stdout == "111 111\n", done.stderr  # refused, not "network unreachable"
    assert set(stopped) == {_refused(443, "203.0.113.7"), _refused(443, "[2001:db8::7]")}


def test_a_dns_lookup_is_reported_by_the_name_looked_up() -> None:
    query = (
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
        b"\x03api\x06openai\x03com\x00\x00\x01\x00\x01"
    )
    source = _in_another_namespace_first(
        "import socket\n"
        "udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"udp.sendto({query!r}, ('192.0.2.53', 53))\n"
    )
    with Relay() as relay:
        done = _run(relay.wrap(_python(source)))
        stopped = relay.stopped()
    assert done.returncode == 0, done.stdout + done.stderr
    assert stopped == ("a DNS lookup of api.openai.com (UDP to 192.0.2.53:53)",)


def test_a_retry_against_the_programs_own_server_that_comes_up_later_is_not_reported() -> None:
    source = (
        "import socket\n"
        "probe = socket.socket()\n"
        "probe.bind(('127.0.0.1', 0))\n"
        "port = probe.getsockname()[1]\n"
        "probe.close()\n"
        "first = socket.socket().connect_ex(('127.0.0.1', port))\n"
        "server = socket.create_server(('127.0.0.1', port))\n"
        "second = socket.socket().connect_ex(('127.0.0.1', port))\n"
        "print(first, second)\n"
    )
    with Relay() as relay:
        done = _run(relay.wrap(_python(source)))
        stopped = relay.stopped()
    assert done.stdout == "111 0\n", done.stderr
    assert stopped == ()


def test_the_command_runs_as_the_users_own_uid_and_gid() -> None:
    done = _run(bridge_argv(["sh", "-c", "id -u; id -g; cat /proc/self/uid_map"]))
    uid, gid, mapping = done.stdout.splitlines()
    assert (int(uid), int(gid)) == (os.getuid(), os.getgid())
    assert mapping.split() == [str(os.getuid()), str(os.getuid()), "1"]  # not mapped to root


def test_a_user_who_is_not_root_runs_the_command_as_themselves_with_no_capability() -> None:
    nobody = 65534
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to start the bridge as another user")
    as_nobody = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups"]
    pythons = [sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"]
    usable = [
        python
        for python in pythons
        if _run(
            [*as_nobody, python, "-I", "-S", "-c", "import sys; assert sys.version_info >= (3, 11)"]
        ).returncode
        == 0
    ]
    if not usable:
        pytest.skip(f"no Python 3.11+ here that uid {nobody} may run ({', '.join(pythons)})")
    argv = bridge_argv(
        ["sh", "-c", "id -u; id -g; cat /proc/self/uid_map; grep CapEff /proc/self/status"]
    )
    done = _run([*as_nobody, usable[0], *argv[1:]])
    uid, gid, mapping, capabilities = done.stdout.splitlines()
    assert (int(uid), int(gid)) == (nobody, nobody), done.stderr
    assert mapping.split() == [str(nobody), str(nobody), "1"]
    assert capabilities.split() == ["CapEff:", "0000000000000000"]


def test_the_command_is_in_a_network_namespace_of_its_own_with_loopback_only() -> None:
    done = _run(bridge_argv(["sh", "-c", "readlink /proc/self/ns/net; cat /proc/self/net/dev"]))
    namespace, _, _, *devices = done.stdout.splitlines()
    assert namespace != os.readlink("/proc/self/ns/net")
    assert [device.split(":")[0].strip() for device in devices] == ["lo"]


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["sh", "-c", "exit 7"], 7),
        (["true"], 0),
        (["sh", "-c", "kill -TERM $$"], 128 + signal.SIGTERM),
        (["sh", "-c", "kill -KILL $$"], 128 + signal.SIGKILL),
        (["openprogram-no-such-command"], 127),
    ],
    ids=["exit-7", "true", "killed-by-TERM", "killed-by-KILL", "not-found"],
)
def test_the_commands_exit_status_passes_through(command: list[str], status: int) -> None:
    assert _run(bridge_argv(command)).returncode == status


def test_sigterm_sent_to_the_bridge_reaches_the_command() -> None:
    source = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(5))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen(
        bridge_argv(_python(source)), stdout=subprocess.PIPE, text=True
    ) as bridge:
        assert bridge.stdout is not None
        assert bridge.stdout.readline() == "ready\n"
        bridge.send_signal(signal.SIGTERM)
        assert bridge.wait(timeout=TIMEOUT) == 5  # the command's own handler ran


def test_without_a_relay_the_bridge_still_isolates_and_says_what_it_stopped_on_stderr(
    hit_server: HitServer, tmp_path: Path
) -> None:
    source = f"import socket\nsocket.socket().connect_ex(('127.0.0.1', {hit_server.port}))\n"
    done = _run(bridge_argv(_python(source)))
    assert hit_server.hits == 0
    assert done.stderr == f"openprogram isolation: stopped {_refused(hit_server.port)}\n"
    report = tmp_path / "stopped.txt"
    _run(bridge_argv(_python(source), report=str(report)))
    assert report.read_text() == f"{_refused(hit_server.port)}\n"


def test_where_the_namespace_cannot_be_made_the_command_never_runs(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("the unshare command is not installed here")
    marker = tmp_path / "ran"
    # In a user namespace without a mapping, unshare(CLONE_NEWUSER) is refused (EPERM).
    done = _run(["unshare", "--user", *bridge_argv(["touch", str(marker)])])
    assert done.returncode == 2
    assert done.stderr.startswith(
        "openprogram isolation: cannot isolate the command: "
        "this process is in a user namespace that maps no uid or gid: "
    )
    assert done.stderr.count("\n") == 1
    assert not marker.exists()


@pytest.mark.parametrize(
    "arguments",
    [["--bridge", "nonsense", "--", "true"], ["--bridge", "::1:80", "--", "true"], ["--relay"]],
    ids=["not-host-port", "unbracketed-v6", "no-command"],
)
def test_bad_arguments_exit_2_with_one_line(arguments: list[str]) -> None:
    argv = bridge_argv(["true"])
    done = _run([*argv[: argv.index("--")], *arguments])
    assert done.returncode == 2
    assert done.stderr.startswith("openprogram isolation: ")
