"""Finding the line a dotted key is written on, for messages."""

from __future__ import annotations

from openprogram.config.problems import find_key_line

TEXT = '''# comment: mode = "not this"
default_model = "echo:echo"
notes = """
[record_replay]
mode = "inside a string"
"""

[record_replay]
  mode = "off"   # indented
ignore_fields = [
  "a = b",
]

[providers."openai-completions"]
timeout = 3

[providers.'x.y']
base_url = "http://h"

[[providers.z.list]]
v = 1

[other]
a.b . c = 1
inline = { k = 1 }
'''


def test_top_level_keys_and_table_keys() -> None:
    assert find_key_line(TEXT, ("default_model",)) == 2
    assert find_key_line(TEXT, ("record_replay",)) == 8
    assert find_key_line(TEXT, ("record_replay", "mode")) == 9
    assert find_key_line(TEXT, ("record_replay", "ignore_fields", 1)) == 10


def test_quoted_keys_in_headers() -> None:
    assert find_key_line(TEXT, ("providers", "openai-completions", "timeout")) == 15
    assert find_key_line(TEXT, ("providers", "x.y", "base_url")) == 18
    assert find_key_line(TEXT, ("providers", "z", "list")) == 20


def test_dotted_keys_define_their_parents() -> None:
    assert find_key_line(TEXT, ("other", "a", "b", "c")) == 24
    assert find_key_line(TEXT, ("other", "a")) == 24


def test_inline_tables_resolve_to_their_key() -> None:
    assert find_key_line(TEXT, ("other", "inline", "k")) == 25


def test_missing_keys_fall_back_to_the_nearest_table_or_none() -> None:
    assert find_key_line(TEXT, ("providers", "openai-completions", "api_key_env")) == 14
    assert find_key_line(TEXT, ("nowhere",)) is None
    assert find_key_line("", ("record_replay", "mode")) is None
