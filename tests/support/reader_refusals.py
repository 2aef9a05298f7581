"""The strict reader refusing a file: the error, and what a refusal must say."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording


def read_error(path: Path, *, validate_events: bool = True) -> RecordingFileError:
    """The error the reader raises for ``path``."""
    with pytest.raises(RecordingFileError) as info:
        read_recording(path, validate_events=validate_events)
    return info.value


def assert_refused(
    path: Path,
    *,
    line: int | None,
    call_index: int | None,
    says: str | list[str],
    validate_events: bool = True,
) -> RecordingFileError:
    """The reader refuses ``path`` at ``line`` (and ``call_index``), naming the problem in
    one line that starts with the path."""
    error = read_error(path, validate_events=validate_events)
    message = str(error)
    assert error.path == str(path)
    assert error.line == line, message
    assert error.call_index == call_index, message
    assert message.startswith(str(path)), message
    if line is not None:
        assert f"line {line}:" in message
    for phrase in [says] if isinstance(says, str) else says:
        assert phrase in error.problem, message
    assert "\n" not in message
    return error
