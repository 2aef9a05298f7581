"""``openprogram serve`` refuses what exec and the configured record mode refuse: a folder of
recordings (``--dir``) that is a link, its own recording through a link in the store or into
a recording replay would refuse, and a session's recording under its folder that is a link
(dangling or not), lies through a linked folder, or cannot be read — one line each, nothing
written."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import error_line, openprogram
from tests.support.config_files import write_config
from tests.support.proxy_server import running_proxy
from tests.support.recording_rows import write_recording

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def never_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """A serve command that got as far as listening fails the test instead of serving until
    a signal that never comes."""
    from openprogram.serving import running

    def listened(*args: object, **kwargs: object) -> None:
        raise AssertionError("serve started to listen")

    monkeypatch.setattr(running, "serve_until_stopped", listened)


@pytest.mark.usefixtures("never_listens")
def test_a_folder_of_recordings_that_is_a_link_is_refused_before_listening(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    linked = tmp_path / "linked"
    linked.symlink_to(real, target_is_directory=True)

    result = openprogram("serve", "--port", "0", "--dir", str(linked))

    assert result.exit_code == 2
    assert error_line(result) == (
        f"error: the folder of recordings {linked} is a symbolic link (to {real}): the server "
        "names recordings under a folder of its own, never through a link; give the folder "
        "itself"
    )
    assert result.stdout == ""  # it never listened


@pytest.mark.usefixtures("never_listens")
def test_a_folder_of_recordings_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("")

    result = openprogram("serve", "--port", "0", "--dir", str(file))

    assert result.exit_code == 2
    assert "is not a folder" in error_line(result)


@pytest.mark.usefixtures("never_listens")
def test_its_own_recording_is_never_recorded_through_a_link_in_the_store(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "elsewhere.jsonl"
    recordings_dir().mkdir(parents=True)
    (recordings_dir() / "demo.jsonl").symlink_to(outside)

    result = openprogram("serve", "--port", "0", "--record", "demo")

    assert result.exit_code == 2
    assert "it is a symbolic link (to " in error_line(result)
    assert not outside.parent.exists()


@pytest.mark.usefixtures("never_listens")
def test_the_configured_record_mode_into_an_invalid_recording_does_not_start() -> None:
    path = write_recording("demo", calls=1)
    damaged = path.read_bytes() + b"not json\n"
    path.write_bytes(damaged)
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')

    result = openprogram("serve", "--port", "0")

    assert result.exit_code == 1
    assert "calls appended to it could never be read" in error_line(result)
    assert path.read_bytes() == damaged


@pytest.mark.parametrize("mode", ["record", "once", "replay"])
def test_a_session_never_reaches_through_a_dangling_link(tmp_path: Path, mode: str) -> None:
    folder, outside = tmp_path / "recordings", tmp_path / "outside"
    folder.mkdir()
    (folder / "dangling.jsonl").symlink_to(outside / "new.jsonl")
    (folder / "through").symlink_to(outside, target_is_directory=True)
    with running_proxy(folder=folder) as proxy:
        answers = [
            httpx.post(
                f"{proxy.url}/v1/chat/completions",
                json=CHAT,
                headers={"x-openprogram-recording": name, "x-openprogram-mode": mode, **proxy.auth},
            )
            for name in ("dangling", "through/new")
        ]
    assert [answer.status_code for answer in answers] == [400, 400]
    messages = [answer.json()["error"]["message"] for answer in answers]
    assert messages[0].startswith(
        f"recording 'dangling': {folder / 'dangling.jsonl'}: it is a symbolic link (to "
        f"{outside / 'new.jsonl'}), and openprogram writes into the server's folder only"
    )
    assert messages[1].startswith(
        f"recording 'through/new': {folder / 'through'}: it is a symbolic link (to {outside})"
    )
    assert all("\n" not in message for message in messages)
    assert not outside.exists()


def test_a_session_of_a_recording_replay_would_refuse_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    path = write_recording(tmp_path / "damaged.jsonl", calls=1)
    damaged = path.read_bytes() + b"not json\n"
    path.write_bytes(damaged)
    with running_proxy(folder=tmp_path) as proxy:
        answers = [
            httpx.post(
                f"{proxy.url}/v1/chat/completions",
                json=CHAT,
                headers={
                    "x-openprogram-recording": "damaged",
                    "x-openprogram-mode": mode,
                    **proxy.auth,
                },
            )
            for mode in ("replay", "once")
        ]
    for answer in answers:
        assert answer.status_code == 400
        message = answer.json()["error"]["message"]
        assert message.startswith(f"recording 'damaged': {path}, line ")
        assert "not valid JSON" in message
        assert "\n" not in message
    assert path.read_bytes() == damaged
