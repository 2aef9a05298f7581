"""A vcrpy cassette file read into plain values, within bounds: YAML (with a loader that
builds only the tags vcrpy itself writes) or JSON.

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

Any other tag — ``!!python/object/apply:os.system`` above all — is refused with the file,
its line and its name, and nothing is constructed: every node's tag is checked before a value
is built, at any depth (inside one of the tags above too), and the first in the document is
named; a tag above holding another shape than vcrpy writes (a sequence under
``!!python/object/new:_io.BytesIO``) is refused naming it. The loader stands on PyYAML's
safe loader, which never calls a Python callable. PyYAML is the optional extra ``vcr``:
without it a YAML cassette is refused in one line naming it; JSON cassettes need nothing.

A cassette may come from anywhere (a pull request, another project's suite), so reading one
is bounded before any value is built:

* only a regular file is read: a FIFO, a device (``/dev/zero``) or a folder — or a link to
  one — is refused without blocking on it or reading from it;
* the file is at most :func:`cassette_limit` bytes (four bodies of the largest size);
* YAML aliases may repeat a value, but the document is measured as if each alias were
  written out in full: one that would pass the same limit that way ("billion laughs"), or
  that holds itself, is refused before a value is built;
* nesting stops at :data:`~openprogram.json_nesting.MAX_NESTING_DEPTH` levels, aliases
  written out too, checked as the document is read: nothing recursive meets a deeper one."""

from __future__ import annotations

import functools
import io
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import orjson

from openprogram.body_limit import MAX_BODY_SIZE
from openprogram.errors import CassetteError
from openprogram.importing.body_decoding import megabytes
from openprogram.json_nesting import (
    MAX_NESTING_DEPTH,
    TOO_DEEP,
    exceeds_nesting_limit,
    json_text_may_exceed_nesting_limit,
)
from openprogram.recording.reader import file_kind

if TYPE_CHECKING:
    import yaml

__all__ = [
    "BENIGN_TAGS",
    "CASSETTE_BODIES",
    "RAISE_THE_LIMIT",
    "cassette_limit",
    "not_a_cassette_file",
    "read_cassette_file",
]

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
CASSETTE_BODIES: Final = 4
"""How many bodies of the largest size a cassette may hold: its file, its YAML with aliases
written out, and its bodies decoded together are at most that many times the largest body."""
RAISE_THE_LIMIT: Final = "openprogram recordings import --max-body-size MB raises the limit"
_READ_STEP: Final = 1 << 20


def cassette_limit(max_body_size: int) -> int:
    """The most a cassette may hold, in bytes, when no body may pass ``max_body_size``: its
    file, its YAML with every alias written out, and its bodies decoded, together."""
    return CASSETTE_BODIES * max_body_size


def not_a_cassette_file(mode: int) -> str:
    """Why a file of ``mode`` (neither a regular file nor a folder) is not read."""
    return f"is not a regular file (a {file_kind(mode)}): name a cassette file, or a folder of them"


def read_cassette_file(path: Path, *, max_body_size: int = MAX_BODY_SIZE) -> tuple[Any, str]:
    """The cassette at ``path`` as plain values, and its serializer (``yaml`` or ``json``):
    JSON when its name ends in ``.json`` or its text starts with ``{``, else YAML. Raises
    :class:`CassetteError` naming the file (and the line) for anything it cannot read, or
    that passes a bound (``max_body_size`` sets the size bounds)."""
    limit = cassette_limit(max_body_size)
    text = _read_regular_file(path, limit).decode("utf-8", errors="replace")
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        return _json(path, text), "json"
    return _yaml(path, text, limit), "yaml"


def _read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes."""
    try:
        # O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise CassetteError(str(path), f"cannot be read ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CassetteError(str(path), not_a_cassette_file(info.st_mode))
        chunks: list[bytes] = []
        size = 0
        while size <= limit and info.st_size <= limit:  # it may grow while it is read
            chunk = os.read(fd, min(_READ_STEP, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise CassetteError(str(path), f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)
    raise CassetteError(
        str(path),
        f"is larger than {megabytes(limit)}, the largest cassette read ({CASSETTE_BODIES} × "
        f"the largest body): nothing was read ({RAISE_THE_LIMIT})",
    )


def _json(path: Path, text: str) -> Any:
    try:
        value = orjson.loads(text)  # recurses at most 1,024 levels, then refuses
    except orjson.JSONDecodeError as error:
        problem = TOO_DEEP if "depth" in error.msg else f"is not JSON ({error.msg})"
        raise CassetteError(str(path), problem, line=error.lineno) from None
    if json_text_may_exceed_nesting_limit(text) and exceeds_nesting_limit(value):
        raise CassetteError(str(path), TOO_DEEP)
    return value


class _Refused(Exception):
    """A YAML document refused before a value is built: why, and where."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        self.problem = problem
        self.line: int | None = None if mark is None else mark.line + 1
        super().__init__(problem)


def _yaml(path: Path, text: str, limit: int) -> Any:
    try:
        import yaml
    except ImportError:
        raise CassetteError(str(path), MISSING_YAML) from None

    try:
        return _load(text, limit)
    except _Refused as refused:
        raise CassetteError(str(path), refused.problem, line=refused.line) from None
    except yaml.constructor.ConstructorError as error:  # what the checks before let through
        mark = error.problem_mark
        raise CassetteError(
            str(path),
            f"holds a YAML value that cannot be built ({error.problem}): refused "
            "(re-record this cassette, or remove that value)",
            line=None if mark is None else mark.line + 1,
        ) from None
    except yaml.reader.ReaderError as error:  # a character YAML does not allow (NUL)
        line = text.count("\n", 0, error.position) + 1
        problem = str(error).splitlines()[0]
        raise CassetteError(str(path), f"is not YAML ({problem})", line=line) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or "it does not parse"
        raise CassetteError(
            str(path), f"is not YAML ({problem})", line=None if mark is None else mark.line + 1
        ) from None


def _load(text: str, limit: int) -> Any:
    """The YAML document ``text`` built, once it is known to be within bounds."""
    loader = _loader_class()(io.StringIO(text))
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_written_out(node, limit, frozenset(loader.yaml_constructors))
        return loader.construct_document(node)
    finally:
        loader.dispose()


@functools.cache
def _loader_class() -> type[yaml.SafeLoader]:
    """PyYAML's safe loader, building the tags vcrpy writes and nothing else, refusing a
    document nested deeper than the limit as it reads it (its composer recurses once per
    level), and a value YAML's own types cannot build with its line."""
    import yaml

    class CassetteLoader(yaml.SafeLoader):
        depth = 0

        def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
            self._descend()
            try:
                return super().compose_sequence_node(anchor)
            finally:
                self.depth -= 1

        def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
            self._descend()
            try:
                return super().compose_mapping_node(anchor)
            finally:
                self.depth -= 1

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except (ValueError, OverflowError) as error:  # 2001-13-45, a 5,000-digit number
                why = str(error).partition(";")[0]  # not Python's advice on its own limits
                raise _Refused(
                    f"holds a value that cannot be built ({why})", node.start_mark
                ) from None

        def _descend(self) -> None:
            if self.depth >= MAX_NESTING_DEPTH:
                raise _Refused(TOO_DEEP, self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            self.depth += 1

    def string(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        return loader.construct_scalar(_shaped(node, yaml.ScalarNode))

    def sequence(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        return loader.construct_sequence(_shaped(node, yaml.SequenceNode), deep=True)

    def file_like(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        state = loader.construct_mapping(_shaped(node, yaml.MappingNode), deep=True).get("state")
        content = state[0] if isinstance(state, list | tuple) and state else b""
        return content.encode() if isinstance(content, str) else bytes(content or b"")

    def iterator(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        args = loader.construct_mapping(_shaped(node, yaml.MappingNode), deep=True).get("args")
        return list(args[0]) if isinstance(args, list | tuple) and args else []

    for tag, build in zip(
        BENIGN_TAGS, (string, string, sequence, file_like, iterator), strict=True
    ):
        CassetteLoader.add_constructor(tag, build)
    return CassetteLoader


_Node = TypeVar("_Node", bound="yaml.Node")

_NODE_KINDS: Final = {"ScalarNode": "scalar", "SequenceNode": "sequence", "MappingNode": "mapping"}


def _shaped(node: yaml.Node, kind: type[_Node]) -> _Node:
    """``node``, the value of one of :data:`BENIGN_TAGS`, if it is of the ``kind`` vcrpy
    writes under its tag; else refused naming the tag (a hostile tag inside a vcrpy one is
    refused by name before anything is built: :func:`_check_written_out`)."""
    if not isinstance(node, kind):
        raise _Refused(
            f"holds the YAML tag {_short_tag(node.tag)} with a {_NODE_KINDS[type(node).__name__]}"
            f" where vcrpy writes a {_NODE_KINDS[kind.__name__]}: refused, and nothing was "
            "constructed (re-record this cassette, or remove that value)",
            node.start_mark,
        )
    return node


def _check_written_out(root: yaml.Node, limit: int, known_tags: frozenset[str | None]) -> None:
    """Refuse the document under ``root`` if it holds a tag not among ``known_tags`` (YAML's
    own and :data:`BENIGN_TAGS`: the first in the document, at any depth, whatever tag holds
    it), or if, with every alias written out in full, it would be larger than ``limit`` (a
    scalar counts its characters and one, a collection one more than its items), nest deeper
    than the limit, or hold itself. Walks each node once, in document order, without
    recursion: what an alias names is measured once, and counted at every use."""
    import yaml

    measured: dict[int, tuple[int, int]] = {}  # id(node): (size written out, nesting)
    open_nodes: set[int] = set()  # the collections whose items are being measured
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, items_measured = stack.pop()
        key = id(node)
        if not items_measured and node.tag not in known_tags:
            raise _Refused(
                f"holds the YAML tag {_short_tag(node.tag)}, which vcrpy never writes: "
                "refused, and nothing was constructed (re-record this cassette, or remove "
                "that value)",
                node.start_mark,
            )
        if isinstance(node, yaml.ScalarNode):
            measured[key] = (len(node.value) + 1, 0)
            continue
        items: list[yaml.Node] = (
            [part for pair in node.value for part in pair]  # a mapping's keys and values
            if isinstance(node, yaml.MappingNode)
            else node.value
        )
        if items_measured:
            open_nodes.discard(key)
            size = 1 + sum(measured[id(item)][0] for item in items)
            depth = 1 + max((measured[id(item)][1] for item in items), default=0)
            if size > limit:
                raise _Refused(
                    f"its YAML aliases, written out, make it larger than {megabytes(limit)}, "
                    f"the largest cassette read ({CASSETTE_BODIES} × the largest body): "
                    f"refused, and nothing was constructed ({RAISE_THE_LIMIT})"
                )
            if depth > MAX_NESTING_DEPTH:
                raise _Refused(f"{TOO_DEEP} once its YAML aliases are written out", node.start_mark)
            measured[key] = (size, depth)
        elif key in open_nodes:
            raise _Refused(
                "holds a YAML alias inside the value it names (a value holding itself): "
                "refused, and nothing was constructed",
                node.start_mark,
            )
        elif key not in measured:
            open_nodes.add(key)
            stack.append((node, True))
            # Reversed: the items come off the stack in document order.
            stack.extend((item, False) for item in reversed(items) if id(item) not in measured)


def _short_tag(tag: str) -> str:
    """A tag as a cassette spells it (``!!python/object/apply:os.system``)."""
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org") else tag
