"""A vcrpy cassette file read into plain values: YAML (with a loader that builds only the tags
vcrpy itself writes) or JSON.

vcrpy writes cassettes with PyYAML. Besides YAML's own types (``!!binary`` for bytes) its
cassettes hold five Python tags, written by vcrpy 4 to 9 for request bodies and strings, and
built here as plain values:

=============================================  =========================================
tag                                            built as
=============================================  =========================================
``!!python/str``, ``!!python/unicode``          the string
``!!python/tuple``                              a list of its items
``!!python/object/new:_io.BytesIO``             the bytes of its ``state`` (a file-like body)
``!!python/object/apply:builtins.iter``         a list of its ``args[0]`` (an iterator body)
=============================================  =========================================

Any other tag — ``!!python/object/apply:os.system`` above all — is refused with the file and
its line, and nothing is constructed: the loader stands on PyYAML's safe loader, which never
calls a Python callable. PyYAML is the optional extra ``vcr``: without it a YAML cassette is
refused in one line naming it; JSON cassettes need nothing.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Final

from openprogram.errors import CassetteError

__all__ = ["BENIGN_TAGS", "read_cassette_file"]

_PYTHON = "tag:yaml.org,2002:python/"
BENIGN_TAGS: Final = (
    f"{_PYTHON}str",
    f"{_PYTHON}unicode",
    f"{_PYTHON}tuple",
    f"{_PYTHON}object/new:_io.BytesIO",
    f"{_PYTHON}object/apply:builtins.iter",
)
"""The Python tags vcrpy writes into cassettes, the only ones built."""

MISSING_YAML: Final = (
    "reading a YAML cassette needs PyYAML: pip install 'openprogram[vcr]' (or pyyaml)"
)


def read_cassette_file(path: Path) -> tuple[Any, str]:
    """The cassette at ``path`` as plain values, and its serializer (``yaml`` or ``json``):
    JSON when its name ends in ``.json`` or its text starts with ``{``, else YAML. Raises
    :class:`CassetteError` naming the file (and the line) for anything it cannot read."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CassetteError(str(path), f"cannot be read ({error.strerror or error})") from None
    text = data.decode("utf-8", errors="replace")
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            return json.loads(text), "json"
        except json.JSONDecodeError as error:
            raise CassetteError(
                str(path), f"is not JSON ({error.msg})", line=error.lineno
            ) from None
    return _yaml(path, text), "yaml"


def _yaml(path: Path, text: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise CassetteError(str(path), MISSING_YAML) from None

    class CassetteLoader(yaml.SafeLoader):
        """PyYAML's safe loader, building the tags vcrpy writes and nothing else."""

    def string(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        return loader.construct_scalar(node)  # type: ignore[arg-type]

    def sequence(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        return loader.construct_sequence(node, deep=True)  # type: ignore[arg-type]

    def file_like(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        state = loader.construct_mapping(node, deep=True).get("state")  # type: ignore[arg-type]
        content = state[0] if isinstance(state, list | tuple) and state else b""
        return content.encode() if isinstance(content, str) else bytes(content or b"")

    def iterator(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        args = loader.construct_mapping(node, deep=True).get("args")  # type: ignore[arg-type]
        return list(args[0]) if isinstance(args, list | tuple) and args else []

    for tag, build in zip(
        BENIGN_TAGS, (string, string, sequence, file_like, iterator), strict=True
    ):
        CassetteLoader.add_constructor(tag, build)
    try:
        return yaml.load(io.StringIO(text), Loader=CassetteLoader)
    except yaml.constructor.ConstructorError as error:
        mark = error.problem_mark
        tag = _tag_of(error.problem or "")
        raise CassetteError(
            str(path),
            f"holds the YAML tag {tag}, which vcrpy never writes: refused, and nothing was "
            "constructed (re-record this cassette, or remove that value)",
            line=None if mark is None else mark.line + 1,
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or "it does not parse"
        raise CassetteError(
            str(path), f"is not YAML ({problem})", line=None if mark is None else mark.line + 1
        ) from None


def _tag_of(problem: str) -> str:
    """The tag a constructor error names (``!!python/object/apply:os.system``)."""
    start = problem.find("'")
    tag = problem[start + 1 : problem.rfind("'")] if start >= 0 else problem
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org") else tag
