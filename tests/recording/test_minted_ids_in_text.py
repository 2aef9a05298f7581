"""An id a server made up is renamed wherever a later request repeats it, inside text too:
smolagents writes the tool calls of a reply into the next request's text (``Calling
tools:\\n[{'id': 'call_…', …}]``), so two recordings of one session hashed differently and
``diff`` found ``body.messages[1].content[0].text`` changed. Only the whole id is renamed —
a token of the text equal to it, never a prefix of it or a longer token holding it — and
only one an earlier call's response made up; it then counts by where it came from, as an id
under a key does. The digests a writer stores agree, and ``list`` trusts them only when their
writer knew every id made up before."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.minted_ids import CallIds, MintedIds
from openprogram.recording.reader import read_recording
from openprogram.recording.writer import RecordingWriter
from openprogram.store.comparison import first_difference
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import summarize_recording
from tests.support.cli_runner import run

Row = dict[str, Any]
URL = "https://api.openai.com/v1/chat/completions"


def tool_call(tool_id: str) -> Row:
    return {
        "id": tool_id,
        "type": "function",
        "function": {"name": "web_search", "arguments": "{}"},
    }


def reply(run: str, n: int, *tool_ids: str) -> Row:
    message: Row = {"role": "assistant", "content": None if tool_ids else "done"}
    if tool_ids:
        message["tool_calls"] = [tool_call(tool_id) for tool_id in tool_ids]
    return {
        "id": f"chatcmpl-{run}{n}x",
        "object": "chat.completion",
        "choices": [{"message": message}],
    }


def text(content: str) -> list[Row]:
    return [{"type": "text", "text": content}]


def calling_tools(tool_id: str) -> str:
    """What smolagents writes into the next request for a tool call."""
    return "Calling tools:\n" + str([tool_call(tool_id)])


def write_call(writer: RecordingWriter, messages: list[Row], answer: Row) -> None:
    call = writer.open_call(
        {
            "boundary": "http",
            "method": "POST",
            "url": URL,
            "headers": {"content-type": "application/json"},
            "body": {"model": "gpt-4o-mini", "messages": messages},
        }
    )
    call.write_event(
        {"type": "http_response", "status": 200, "headers": {"content-type": "application/json"}}
    )
    call.write_event({"type": "http_body", "body": answer})
    call.end_call("complete")


def smolagents_session(folder: Path, run: str, *, said: str | None = None) -> Path:
    """A question, a tool call the server makes up (``call_<run>…``), and the next request
    repeating it inside text, as smolagents does; ``said``: what the next request's text says
    in place of the id."""
    path = folder / f"{run}.jsonl"
    writer = RecordingWriter(path)
    minted = f"call_{run}Qm4kR2sVx8TzLp0aWn5bYc"
    question = [{"role": "user", "content": text("Weather in Paris?")}]
    write_call(writer, question, reply(run, 0, minted))
    shown = minted if said is None else said
    follow_up = [
        *question,
        {"role": "assistant", "content": text(calling_tools(shown))},
        {"role": "user", "content": text(f"Call id: {shown}\nObservation:\nsunny")},
    ]
    write_call(writer, follow_up, reply(run, 1))
    writer.close()
    return path


def test_two_recordings_repeating_a_minted_id_in_text_hash_alike(tmp_path: Path) -> None:
    a, b = smolagents_session(tmp_path, "a"), smolagents_session(tmp_path, "b")
    text_a = read_recording(a).calls[1].request["body"]["messages"][1]["content"][0]["text"]
    assert "'id': 'call_aQm4k" in text_a
    assert transcript_hash(read_recording(a)) == transcript_hash(read_recording(b))
    assert first_difference(read_recording(a), read_recording(b)) is None
    result = run("diff", str(a), str(b))
    assert result.exit_code == 0, result.output
    for path in (a, b):  # the digests the writer stored say the same
        assert summarize_recording(path).transcript_hash == transcript_hash(read_recording(path))


def test_a_prefix_of_the_id_or_a_longer_token_is_text_like_any_other(tmp_path: Path) -> None:
    a = smolagents_session(tmp_path, "a", said="call_aQm4kR2sVx8TzLp0aWn5bY")  # one short
    b = smolagents_session(tmp_path, "b", said="call_bQm4kR2sVx8TzLp0aWn5bY")
    assert transcript_hash(read_recording(a)) != transcript_hash(read_recording(b))
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert found.field_path == "body.messages[1].content[0].text"
    assert found.recorded == calling_tools("call_aQm4kR2sVx8TzLp0aWn5bY")  # as recorded
    longer = smolagents_session(tmp_path, "c", said="xcall_cQm4kR2sVx8TzLp0aWn5bYc")
    text_c = read_recording(longer).calls[1].request
    ids = CallIds(minted_by_first_call("call_cQm4kR2sVx8TzLp0aWn5bYc"), 1)
    assert ids.request(text_c) == text_c  # nothing renamed
    assert ids.refs == {}


def minted_by_first_call(*values: str) -> MintedIds:
    session = MintedIds()
    for value in values:
        session.note(value, 0)
    return session


def test_only_whole_tokens_an_earlier_call_made_up_are_renamed() -> None:
    made = "call_Qm4kR2sVx8TzLp0aWn5bYc"
    ids = CallIds(minted_by_first_call(made), 1)
    value = {
        "a": f"[{{'id': '{made}'}}] and {made}.",
        "b": f"{made}x, x{made}, {made[:-1]}, {made}-2",
        "c": [f"\n{made}\t"],
    }
    assert ids.request(value, "body") == {
        "a": "[{'id': '#q0'}] and #q0.",
        "b": value["b"],
        "c": ["\n#q0\t"],
    }
    assert ids.paths == ["body.a"]
    assert ids.value_of("#q0") == made
    later = CallIds(minted_by_first_call(made), 0)  # made up by this call itself, or after
    assert later.request(value) == value


def test_an_id_repeated_in_text_links_to_the_call_that_made_it_up(tmp_path: Path) -> None:
    def session(name: str, source: int) -> Path:
        path = tmp_path / f"{name}.jsonl"
        writer = RecordingWriter(path)
        made = [f"call_{name}{n}Qm4kR2sVx8TzLp0aWn" for n in (0, 1)]
        for n in (0, 1):
            write_call(writer, [{"role": "user", "content": f"q{n}"}], reply(name, n, made[n]))
        said = [{"role": "user", "content": f"Call id: {made[source]}\nObservation: ok"}]
        write_call(writer, said, reply(name, 2))
        writer.close()
        return path

    to_first, to_second, again = session("a", 0), session("b", 1), session("c", 0)
    assert transcript_hash(read_recording(to_first)) == transcript_hash(read_recording(again))
    assert transcript_hash(read_recording(to_first)) != transcript_hash(read_recording(to_second))
    found = first_difference(read_recording(to_first), read_recording(to_second))
    assert found is not None
    assert (found.call_index, found.field_path) == (2, "body.messages[0].content")
    assert (found.recorded, found.incoming) == (
        "call_a0Qm4kR2sVx8TzLp0aWn",
        "call_b1Qm4kR2sVx8TzLp0aWn",
    )
    assert found.detail == "the id links to call 0's response in A and to call 1's response in B"


def test_list_does_not_trust_a_digest_whose_writer_knew_fewer_ids(tmp_path: Path) -> None:
    # Two processes: the second writer did not see the id the first one's call made up, so
    # its digest holds the id as text; list reads the file with the strict reader instead.
    path = tmp_path / "two.jsonl"
    made = "call_Qm4kR2sVx8TzLp0aWn5bYc"
    first = RecordingWriter(path)
    question = [{"role": "user", "content": "Weather?"}]
    write_call(first, question, reply("p", 0, made))
    first.close()
    second = RecordingWriter(path)
    follow_up = [*question, {"role": "user", "content": f"Call id: {made}\nObservation: ok"}]
    write_call(second, follow_up, reply("p", 1))
    second.close()
    assert '"minted_before"' not in path.read_text().splitlines()[-1]
    parsed = transcript_hash(read_recording(path))
    assert summarize_recording(path).transcript_hash == parsed
    one_writer = smolagents_like(tmp_path, made)
    assert '"minted_before":2' in one_writer.read_text().splitlines()[-1]
    assert summarize_recording(one_writer).transcript_hash == parsed


def smolagents_like(folder: Path, made: str) -> Path:
    """The session of the test above, written by one writer."""
    path = folder / "one.jsonl"
    writer = RecordingWriter(path)
    question = [{"role": "user", "content": "Weather?"}]
    write_call(writer, question, reply("p", 0, made))
    follow_up = [*question, {"role": "user", "content": f"Call id: {made}\nObservation: ok"}]
    write_call(writer, follow_up, reply("p", 1))
    writer.close()
    return path


MADE = ["call_Qm4kR2sVx8TzLp0aW", "toolu_01ABCdefGHIjkl"]
PIECES = st.sampled_from([*MADE, "x", "-", "_", " ", "\n", "'", ":", "é", "call_Qm4k"])
TEXTS = st.lists(PIECES, max_size=8).map("".join)
VALUES = st.recursive(
    TEXTS | st.integers(-(2**63), 2**63 - 1),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXTS, children, max_size=3),
    max_leaves=8,
)
NAME = re.compile(r"#q\d+")
TOKENS = re.compile(r"[A-Za-z0-9_\-]+")


def strings(value: Any) -> list[str]:
    """The strings of ``value`` that are not keys."""
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return [value] if isinstance(value, str) else []


def named_back(value: Any, ids: CallIds) -> Any:
    if isinstance(value, dict):
        return {key: named_back(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [named_back(item, ids) for item in value]
    if isinstance(value, str):
        return NAME.sub(lambda name: str(ids.value_of(name[0])), value)
    return value


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_renaming_inside_text_touches_only_whole_ids_and_loses_nothing(value: Any) -> None:
    session = minted_by_first_call(*MADE)
    ids = CallIds(session, 1)
    renamed = ids.request(value)
    assert named_back(renamed, ids) == value
    for name in NAME.findall(orjson.dumps(renamed).decode()):
        assert ids.value_of(name) in MADE
    left = [token for text in strings(renamed) for token in TOKENS.findall(text) if token in MADE]
    assert left == []  # no whole id left in a text (keys are not text: they stay)
    glued = [
        text for text in strings(renamed) if re.search(r"[A-Za-z0-9_\-]#q|#q\d+[A-Za-z_\-]", text)
    ]
    assert glued == []  # and no part of a longer token renamed
    again = CallIds(session, 1)  # the tokens the session kept of each text give the same
    assert again.request(value) == renamed
