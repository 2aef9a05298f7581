"""The two name limits: a test's recording file name (pytest plugin) is always a valid
recording name in the store, so it stays below the store's limit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.store import names
from openprogram.testing import recording_paths


def test_the_test_name_limit_is_below_the_store_name_limit() -> None:
    assert recording_paths.MAX_NAME_LENGTH <= names.MAX_NAME_LENGTH
    assert recording_paths.RECORDING_SUFFIX == names.RECORDING_SUFFIX


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_every_test_recording_name_is_a_valid_store_name(text: str) -> None:
    safe = recording_paths.safe_file_name(text)
    assert names.validate_name(safe) == safe


def test_a_name_at_the_limit_is_kept_and_one_past_it_is_cut_to_a_valid_store_name() -> None:
    at_limit = "t" * recording_paths.MAX_NAME_LENGTH
    past_store_limit = "t" * (names.MAX_NAME_LENGTH + 1)
    assert recording_paths.safe_file_name(at_limit) == at_limit
    cut = recording_paths.safe_file_name(past_store_limit)
    assert len(cut) == recording_paths.MAX_NAME_LENGTH
    assert names.validate_name(cut) == cut
