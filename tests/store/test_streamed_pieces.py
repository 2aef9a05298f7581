"""``respread``: a block's pieces made to hold another text — always exactly that text, what
did not change left in its piece, a changed stretch in the piece where it starts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.token_shapes import PLACEHOLDER
from openprogram.store.scan import respread
from tests.support.secret_samples import GITHUB_TOKEN

_pieces = st.lists(st.text(max_size=12), min_size=1, max_size=8)


@settings(max_examples=80)
@given(_pieces, st.text(max_size=60))
def test_the_pieces_always_join_to_the_new_text(pieces: list[str], target: str) -> None:
    new, _ = respread(pieces, target)
    assert len(new) == len(pieces)
    assert "".join(new) == target


@settings(max_examples=60)
@given(
    st.lists(st.sampled_from(["a ", "b. ", f"{GITHUB_TOKEN} ", "c "]), min_size=1, max_size=6),
    st.data(),
)
def test_a_redacted_block_changes_only_the_pieces_a_secret_touched(
    words: list[str], data: st.DataObject
) -> None:
    text = "".join(words)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=4)))
    pieces = [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    redacted = SecretRedactor([]).redact_text(text)
    new, stretches = respread(pieces, redacted)
    assert "".join(new) == redacted
    touched = {index for stretch in stretches for index in range(stretch.first, stretch.last + 1)}
    for index, (old, fresh) in enumerate(zip(pieces, new, strict=True)):
        if index not in touched:
            assert fresh == old
    assert (GITHUB_TOKEN in text) == (PLACEHOLDER in "".join(new))


def test_a_token_cut_in_three_goes_to_the_piece_where_it_starts() -> None:
    pieces = ["key ", GITHUB_TOKEN[:10], GITHUB_TOKEN[10:20], GITHUB_TOKEN[20:] + " end"]
    new, stretches = respread(pieces, f"key {PLACEHOLDER} end")
    assert new == ["key ", PLACEHOLDER, "", " end"]
    assert [(s.first, s.last) for s in stretches] == [(1, 3)]
