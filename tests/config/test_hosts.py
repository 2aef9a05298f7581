"""Host lists, one syntax for ``allowed_hosts``, ``http_passthrough_hosts`` and
``model_hosts``: an entry as the configuration keeps it, and as written in code
(``record_replay(allowed_hosts=…)``), names the same hosts."""

from __future__ import annotations

import pytest

from openprogram.config.hosts import check_host_entry, is_allowed, normalized_hosts


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("Gateway.Example.com", "gateway.example.com"),
        ("localhost:4318", "localhost:4318"),
        ("[::1]", "::1"),
        ("[::1]:8080", "::1:8080"),
        ("10.0.0.7", "10.0.0.7"),
    ],
)
def test_an_entry_is_kept_lower_case_without_brackets(written: str, kept: str) -> None:
    assert check_host_entry(written) == kept


@pytest.mark.parametrize("bad", ["http://x", "x/v1", "x:port", "", "a b", "[::1"])
def test_what_is_not_a_host_is_refused_saying_how_to_write_one(bad: str) -> None:
    with pytest.raises(ValueError, match=r"is not a host: write a host name or address"):
        check_host_entry(bad)


@pytest.mark.parametrize(
    ("entry", "host", "port", "allowed"),
    [
        ("[::1]", "::1", 8080, True),
        ("[::1]:8080", "::1", 8080, True),
        ("[::1]:8080", "::1", 8081, False),
        (" Localhost ", "localhost", 9, True),
        ("", "", None, False),
    ],
)
def test_an_entry_as_written_names_the_host_a_connection_is_made_to(
    entry: str, host: str, port: int | None, allowed: bool
) -> None:
    """``[::1]`` written in code names ``::1``, as the configuration's ``::1`` does."""
    assert is_allowed(normalized_hosts([entry]), host, port) is allowed
    if entry.strip():
        assert is_allowed(normalized_hosts([check_host_entry(entry.strip())]), host, port) is (
            allowed
        )
