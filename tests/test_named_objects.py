"""A ``module:attr`` name (``verify --tools``, ``scan --redactor``) loads the object it names,
from the current folder too, and each malformed or missing name is told apart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openprogram.errors import VerifySetupError
from openprogram.harness.verification import load_tools
from openprogram.named_objects import NotAModuleAttributeName, load_named_object


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current folder holding ``house.py``, not yet importable."""
    (tmp_path / "house.py").write_text(
        "class Rules:\n    def redact(text):\n        return text\n\nTOOLS = 3\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "house", raising=False)
    return tmp_path


def test_a_dotted_attribute_of_a_module_in_the_current_folder_is_loaded(project: Path) -> None:
    import importlib

    loaded = load_named_object("house:Rules.redact")
    assert loaded is importlib.import_module("house").Rules.redact


@pytest.mark.parametrize("name", ["house", "house:", ":redact", ""])
def test_a_name_without_module_and_attribute_is_refused(project: Path, name: str) -> None:
    with pytest.raises(NotAModuleAttributeName):
        load_named_object(name)


def test_a_missing_module_or_attribute_raises_what_python_raises(project: Path) -> None:
    with pytest.raises(ImportError):
        load_named_object("no_such_module_here:x")
    with pytest.raises(AttributeError):
        load_named_object("house:Rules.nothing")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("house", "--tools takes module:attr, like my_agent.tools:TOOLS ('house')"),
        ("house:nothing", "--tools house:nothing: cannot load it (module 'house' has no "),
        ("house:TOOLS", "--tools house:TOOLS must name an AgentTool, a list of them, or a "),
    ],
)
def test_verify_tools_words_each_failure(project: Path, spec: str, message: str) -> None:
    with pytest.raises(VerifySetupError) as info:
        load_tools(spec)
    assert str(info.value).startswith(message)
