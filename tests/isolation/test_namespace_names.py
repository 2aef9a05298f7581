"""The bridge's DNS answers inside the namespace: bridged names only — in process, with
queries built here."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from openprogram.isolation.names import (
    MAX_REPORTS,
    NameResponder,
    nameservers,
    queried_name,
    synthetic_address,
)


def _query(name: str, kind: int = 1, ident: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.split("."))
    return (
        struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
        + labels
        + b"\0"
        + struct.pack("!HH", kind, 1)
    )


def _answer(reply: bytes | None) -> tuple[int, int, int, bytes]:
    assert reply is not None
    ident, flags, _, answers, _, _ = struct.unpack_from("!HHHHHH", reply)
    return ident, flags & 0x000F, answers, reply[-4:]


def test_a_bridged_name_is_answered_with_its_address_inside() -> None:
    responder = NameResponder({"DB.internal.": synthetic_address(0)})
    ident, code, answers, address = _answer(responder.reply(_query("db.internal"), "x:53"))
    assert (ident, code, answers) == (0x1234, 0, 1)
    assert socket.inet_ntoa(address) == "198.18.0.1"
    assert responder.stopped() == ()


def test_a_bridged_name_has_no_ipv6_record_so_clients_use_ipv4() -> None:
    responder = NameResponder({"db.internal": synthetic_address(0)})
    _, code, answers, _ = _answer(responder.reply(_query("db.internal", kind=28), "x:53"))
    assert (code, answers) == (0, 0)


def test_any_other_name_does_not_exist_and_the_lookup_is_reported() -> None:
    responder = NameResponder({"db.internal": synthetic_address(0)})
    _, code, answers, _ = _answer(responder.reply(_query("api.openai.com"), "127.0.0.53:53"))
    assert (code, answers) == (3, 0)  # NXDOMAIN
    assert responder.stopped() == ("a DNS lookup of api.openai.com (UDP to 127.0.0.53:53)",)


def test_answers_malformed_queries_and_reports_are_bounded() -> None:
    responder = NameResponder({})
    assert responder.reply(b"\x00" * 5, "x:53") is None
    assert responder.reply(_query("a.test")[:14], "x:53") is not None  # FORMERR
    answer = bytearray(_query("a.test"))
    answer[2] |= 0x80
    assert responder.reply(bytes(answer), "x:53") is None
    for index in range(MAX_REPORTS + 10):
        responder.reply(_query(f"n{index}.test"), "x:53")
    assert len(responder.stopped()) == MAX_REPORTS


def test_the_queried_name_is_read_from_a_query_only() -> None:
    assert queried_name(_query("api.openai.com")) == "api.openai.com"
    assert queried_name(_query("a\x07b.test")) == "a\\x07b.test"
    assert queried_name(b"\x12\x34\x81\x80" + bytes(8)) is None


def test_nameservers_are_read_from_resolv_conf(tmp_path: Path) -> None:
    conf = tmp_path / "resolv.conf"
    conf.write_text("# comment\nnameserver 127.0.0.53\nnameserver fe80::1%eth0\nsearch x\n")
    assert nameservers(str(conf)) == [(socket.AF_INET, "127.0.0.53"), (socket.AF_INET6, "fe80::1")]
    assert nameservers(str(tmp_path / "missing")) == [(socket.AF_INET, "127.0.0.1")]


def test_each_name_gets_an_address_of_its_own() -> None:
    assert [synthetic_address(index) for index in (0, 1, 255)] == [
        "198.18.0.1",
        "198.18.0.2",
        "198.18.1.0",
    ]
