"""How openprogram reads: the measures of issue 38 ("one module per vendor API, a lighter
core"), run by hand.

    python benchmarks/files_crossed.py                       # every measure of this checkout
    python benchmarks/files_crossed.py --root /tmp/before38  # another checkout's openprogram/
    python benchmarks/files_crossed.py -v                    # and what each figure counts
    python benchmarks/files_crossed.py --json                # the figures as one JSON object

``--root`` is a checkout (the folder holding ``openprogram/``); by default the one this
script is in. The static measures read ``ROOT/openprogram`` as text and syntax trees; the
dynamic ones run in fresh subprocesses of this Python with ``ROOT`` first on ``PYTHONPATH``
(each checks that it imported ``ROOT``'s openprogram), with no ``OPENPROGRAM_…`` variable
but an ``OPENPROGRAM_HOME`` of their own, so no configured mode is active.

1. **Vendor wire names.** For each vendor API, the files of ``openprogram/`` whose syntax tree
   holds a string constant (an f-string's literal parts and bytes included; docstrings —
   any string standing alone as a statement — not) equal to or containing one of that
   vendor's wire names (:data:`WIRE_NAMES`). Per vendor the number of files; the figure is
   the largest.
2. **Files crossed by one call.** A newcomer following one call through the code opens every
   file it crosses, so this counts them. Two calls are traced, each on a warm session (one
   call of the same shape replayed first, so first-use work is not counted): one
   non-streamed Chat Completions request of the official ``openai`` SDK, replayed at the HTTP
   boundary inside ``openprogram.record_replay(..., mode="replay")``; and one
   ``complete_simple`` on the offline ``echo`` model, replayed at the provider registry
   inside the same kind of block. ``sys.setprofile`` sees every Python function call; a
   function counts once however often it is called (comprehensions and generator
   expressions are not counted as functions of their own), a file once however many of its
   functions are called. The SDK talks to a hand-made transport (no socket) only while
   recording; under replay no transport is reached.
3. **Modules loaded by ``import openprogram.providers.registry``**: the ``sys.modules`` names
   starting with ``openprogram`` afterwards, in a fresh interpreter.
4. **Import cycles in ``recording/``.** The import graph of the modules under
   ``openprogram/recording``, from every import statement of their syntax trees (those under
   ``if TYPE_CHECKING:`` and inside functions too). ``from P import x`` leads to the module
   ``P.x`` if there is one, else to the module P's ``__init__`` takes ``x`` from (its lazy
   ``_EXPORTS`` table or its own imports), else to P; imports of modules outside
   ``recording/`` are left out. The figure is the number of strongly connected components of
   more than one module (Tarjan), and the size of the largest; the same count over the whole
   package is printed beside it.
5. **Client adapters**: ``wc -l`` of the aiohttp, http.client and urllib3 adapters in
   ``openprogram/http_boundary/clients``, the largest, and their total with every other module
   of that folder but ``__init__``, ``interface`` and ``httpx_clients`` (code they share).
6. **Product lines**: ``wc -l`` of every ``openprogram/**/*.py``.
7. **Names listed three times**: for each ``openprogram/**/__init__.py``, the names found in
   all three of its ``if TYPE_CHECKING:`` imports, its lazy ``_EXPORTS`` table's keys (or the
   table handed to ``lazy_exports``) and a literal ``__all__``; their sum.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import io
import json
import os
import subprocess
import sys
import tempfile
import tokenize
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

CHECKOUT = Path(__file__).resolve().parent.parent

WIRE_NAMES: dict[str, tuple[str, ...]] = {
    "Anthropic Messages": (
        "content_block_delta",
        "input_json_delta",
        "anthropic-version",
        "api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "x-api-key",
        "message_start",
    ),
    "OpenAI Chat Completions": (
        "reasoning_content",
        "chat.completion",
        "chat/completions",
        "api.openai.com",
        "OPENAI_API_KEY",
        "finish_reason",
    ),
    "OpenAI Responses": ("response.output_text.delta", "response.completed"),
    "Gemini": (
        "candidates",
        "usageMetadata",
        "GEMINI_API_KEY",
        "x-goog-api-key",
        "generativelanguage.googleapis.com",
        "thoughtSignature",
    ),
    "Bedrock Converse": ("contentBlockDelta", "converse-stream", "bedrock-runtime"),
}
"""What only each vendor API's own module should spell, as issue 38 lists them."""

ADAPTERS = ("aiohttp_client.py", "http_client.py", "urllib3_client.py")
NOT_ADAPTER_CODE = ("__init__.py", "interface.py", "httpx_clients.py")


# --- static measures: the package's files read as text and syntax trees ---


@dataclass(frozen=True)
class Module:
    name: str
    """Dotted, e.g. ``openprogram.recording.reader``; a package's ``__init__`` is the package."""
    path: Path
    tree: ast.Module
    lines: int
    """What ``wc -l`` says: the newlines in the file."""
    tokens: int
    """Its code's tokens: not its comments, docstrings and layout (formatting moves it not)."""

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


LAYOUT = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def code_tokens(text: bytes, tree: ast.Module) -> int:
    """The tokens of a module's code: every one but comments, layout and the strings that
    stand alone as a statement (docstrings, attribute docstrings). Joining a call onto one
    line or closing a docstring on its last line leaves it as it is; removing code does not."""
    docstrings = {
        (node.value.lineno, node.value.col_offset)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    return sum(
        1
        for token in tokenize.tokenize(io.BytesIO(text).readline)
        if token.type not in LAYOUT
        and not (token.type == tokenize.STRING and token.start in docstrings)
    )


def read_package(package: Path) -> dict[str, Module]:
    """Every module of the package, each file read once (others may be editing the tree)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        try:
            text = path.read_bytes()
        except FileNotFoundError:  # moved away since the listing
            continue
        try:
            tree = ast.parse(text, str(path))
        except SyntaxError as error:
            sys.exit(
                f"files_crossed: {path}, line {error.lineno}: not valid Python ({error.msg});"
                " measure again once it is saved whole"
            )
        modules[name] = Module(name, path, tree, text.count(b"\n"), code_tokens(text, tree))
    return modules


def string_constants(tree: ast.Module) -> set[str]:
    """Every str or bytes constant of ``tree`` but those standing alone as a statement."""
    standing = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in standing:
            if isinstance(node.value, str):
                found.add(node.value)
            elif isinstance(node.value, bytes):
                found.add(node.value.decode("latin-1"))
    return found


def wire_name_files(
    modules: Mapping[str, Module], package: Path
) -> dict[str, dict[str, list[str]]]:
    """Per vendor API, the files spelling one of its wire names, with the names each spells."""
    spelled: dict[str, dict[str, list[str]]] = {vendor: {} for vendor in WIRE_NAMES}
    for module in modules.values():
        constants = string_constants(module.tree)
        file = str(module.path.relative_to(package))
        for vendor, names in WIRE_NAMES.items():
            found = [name for name in names if any(name in text for text in constants)]
            if found:
                spelled[vendor][file] = found
    return spelled


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_base(module: Module, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from … import`` statement names."""
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    if not module.is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def assigned(tree: ast.Module, name: str) -> list[ast.expr]:
    """The values a module assigns to ``name`` at its top level (``=``, ``: T =``, ``+=``)."""
    values = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        else:
            continue
        if node.value is not None and any(
            isinstance(target, ast.Name) and target.id == name for target in targets
        ):
            values.append(node.value)
    return values


def exports_table(tree: ast.Module) -> dict[str, str]:
    """A package's lazy export table (``_EXPORTS``, or the dict handed to ``lazy_exports``)."""
    tables = assigned(tree, "_EXPORTS")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "lazy_exports"
            and len(node.args) == 3
        ):
            tables.append(node.args[2])
    table = {}
    for value in tables:
        if isinstance(value, ast.Dict):
            for key, target in zip(value.keys, value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(target, ast.Constant):
                    table[str(key.value)] = str(target.value)
    return table


def names_taken(module: Module, modules: Mapping[str, Module]) -> dict[str, str]:
    """For a package's ``__init__``, the module each of its names comes from."""
    taken = exports_table(module.tree)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            base = import_base(module, node)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                taken[alias.asname or alias.name] = submodule if submodule in modules else base
    return taken


def imported(module: Module, modules: Mapping[str, Module]) -> set[str]:
    """The modules of the package ``module`` imports, wherever its import statements stand."""
    targets: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                if parts:
                    targets.add(".".join(parts))
        elif isinstance(node, ast.ImportFrom):
            base = import_base(module, node)
            for alias in node.names:
                targets.add(resolved(base, alias.name, modules))
    targets.discard(module.name)
    return {target for target in targets if target in modules}


def resolved(base: str, name: str, modules: Mapping[str, Module]) -> str:
    """The module ``from base import name`` reaches: the submodule, or where a package's
    ``__init__`` takes the name from, or the module ``base`` itself."""
    seen = set()
    while base not in seen:
        seen.add(base)
        if f"{base}.{name}" in modules:
            return f"{base}.{name}"
        package = modules.get(base)
        if package is None or not package.is_package:
            return base
        source = names_taken(package, modules).get(name)
        if source is None or source == base:
            return base
        base = source
    return base


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph``, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components, key=lambda component: (-len(component), component))


def import_cycles(modules: Mapping[str, Module], prefix: str) -> list[list[str]]:
    """The import cycles among the modules named ``prefix`` or under it: the strongly
    connected components of more than one module."""
    inside = {name: module for name, module in modules.items() if is_under(name, prefix)}
    graph = {
        name: {target for target in imported(module, modules) if target in inside}
        for name, module in inside.items()
    }
    return [component for component in strongly_connected(graph) if len(component) > 1]


def is_under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def type_checking_names(tree: ast.Module) -> set[str]:
    """The names a module imports under ``if TYPE_CHECKING:``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for statement in node.body:
                for inner in ast.walk(statement):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        names.update(
                            alias.asname or alias.name.split(".")[0] for alias in inner.names
                        )
    return names


def listed_in_all(tree: ast.Module) -> set[str]:
    """The names a literal ``__all__`` lists (one derived from a table lists none)."""
    names: set[str] = set()
    for value in assigned(tree, "__all__"):
        if isinstance(value, ast.List | ast.Tuple):
            names.update(
                element.value
                for element in value.elts
                if isinstance(element, ast.Constant) and isinstance(element.value, str)
            )
    return names


def listed_three_times(modules: Mapping[str, Module]) -> dict[str, list[str]]:
    """Per package, the names its ``__init__`` lists in all three places."""
    triples = {}
    for name, module in modules.items():
        if module.is_package:
            tree = module.tree
            three = type_checking_names(tree) & set(exports_table(tree)) & listed_in_all(tree)
            if three:
                triples[name] = sorted(three)
    return triples


# --- dynamic measures: fresh interpreters importing the checkout's openprogram ---


def child_environment(root: Path, home: Path) -> dict[str, str]:
    """This environment with ``root`` first on the path and no configured mode."""
    environment = {
        key: value for key, value in os.environ.items() if "OPENPROGRAM" not in key.upper()
    }
    paths = [str(root), *filter(None, environment.get("PYTHONPATH", "").split(os.pathsep))]
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    environment["OPENPROGRAM_HOME"] = str(home)
    return environment


def run_child(arguments: list[str], root: Path) -> dict[str, Any]:
    """Run this Python on ``arguments`` importing ``root``'s openprogram; its JSON answer."""
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [sys.executable, *arguments],
            env=child_environment(root, Path(home)),
            cwd=home,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        sys.exit(f"files_crossed: a measuring subprocess failed:\n{done.stderr.strip()}")
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    package = Path(answer["package"]).resolve()
    if package != (root / "openprogram").resolve():
        sys.exit(
            f"files_crossed: the subprocess imported openprogram from {package}, not from"
            f" {root / 'openprogram'}; is {root} a checkout holding openprogram/?"
        )
    return answer


REGISTRY_IMPORT = """\
import json, sys
import openprogram.providers.registry
loaded = sorted(name for name in sys.modules if name.startswith("openprogram"))
print(json.dumps({"package": sys.modules["openprogram"].__path__[0], "modules": loaded}))
"""


def loaded_by_registry(root: Path) -> list[str]:
    modules: list[str] = run_child(["-c", REGISTRY_IMPORT], root)["modules"]
    return modules


def calls_crossed(root: Path) -> dict[str, dict[str, list[str]]]:
    answer = run_child([str(Path(__file__).resolve()), "--trace-calls"], root)
    return {"sdk_request": answer["sdk_request"], "registry_call": answer["registry_call"]}


def trace_calls() -> None:
    """In the subprocess: trace both calls, print the functions crossed by file as JSON."""
    import openprogram

    package = Path(openprogram.__file__).resolve().parent
    with tempfile.TemporaryDirectory() as folder:
        sdk = sdk_request(Path(folder), package)
        registry = registry_replay(Path(folder), package)
    print(
        json.dumps(
            {
                "package": str(package),
                "sdk_request": {file: sorted(names) for file, names in sdk.items()},
                "registry_call": {file: sorted(names) for file, names in registry.items()},
            }
        )
    )


def client_library() -> Any:
    """The HTTP client library the installed ``openai`` sends through."""
    import openai

    if int(openai.__version__.split(".")[0]) >= 3:
        import httpx2

        return httpx2
    import httpx

    return httpx


def prepared_client() -> Any:
    """A client of that library whose transport answers every request with one chat
    completion, read from the network as far as the boundary can tell (no socket)."""
    lib = client_library()

    class ServedBytes(lib.SyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, body: bytes) -> None:
            self.body = body

        def __iter__(self) -> Iterator[bytes]:
            yield self.body

    class PreparedNetwork(lib.BaseTransport):  # type: ignore[misc, name-defined]
        def handle_request(self, request: Any) -> Any:
            body = {
                "id": "chatcmpl-trace",
                "object": "chat.completion",
                "created": 1_764_460_800,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "hello"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            }
            headers = {"content-type": "application/json", "x-request-id": "req_trace"}
            served = ServedBytes(json.dumps(body).encode())
            return lib.Response(200, headers=headers, stream=served)

    return lib.Client(transport=PreparedNetwork())


def traced(call: Callable[[], object], package: Path) -> dict[str, set[str]]:
    """The functions of openprogram ``call`` runs, by file (relative to the package)."""
    crossed: dict[str, set[str]] = defaultdict(set)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        path = Path(code.co_filename)
        if path.is_relative_to(package) and not code.co_name.startswith("<"):
            crossed[str(path.relative_to(package))].add(code.co_qualname)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return crossed


def sdk_request(folder: Path, package: Path) -> dict[str, set[str]]:
    import openai

    import openprogram

    path = folder / "sdk.jsonl"
    sdk = openai.OpenAI(
        api_key="sk-trace",
        base_url="https://api.openai.com/v1",
        max_retries=0,
        http_client=prepared_client(),
    )

    def ask(question: str) -> object:
        messages: Any = [{"role": "user", "content": question}]
        return sdk.chat.completions.create(model="gpt-4o-mini", messages=messages)

    with openprogram.record_replay(path, mode="record"):
        ask("warm-up")
        ask("hello")
    with openprogram.record_replay(path, mode="replay"):
        ask("warm-up")
        return traced(lambda: ask("hello"), package)


def registry_replay(folder: Path, package: Path) -> dict[str, set[str]]:
    import openprogram
    from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

    path = folder / "echo.jsonl"

    def ask(question: str) -> object:
        context = Context(messages=[UserMessage(content=question)])
        return asyncio.run(complete_simple(ECHO_MODEL, context))

    with openprogram.record_replay(path, mode="record"):
        ask("warm-up")
        ask("hello")
    with openprogram.record_replay(path, mode="replay"):
        ask("warm-up")
        # asyncio.run's own frames are not openprogram's; only the call's are counted.
        return traced(lambda: ask("hello"), package)


# --- the report ---


def revision(root: Path) -> str:
    """The checkout's commit, and whether ``openprogram/`` differs from it."""
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not head:
        return "not a git checkout"
    changed = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--", "openprogram"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"commit {head}" + (" with uncommitted changes in openprogram/" if changed else "")


def measure(root: Path) -> dict[str, Any]:
    package = root / "openprogram"
    modules = read_package(package)
    clients = "openprogram.http_boundary.clients."
    adapters = {
        module.path.name: module.lines
        for name, module in modules.items()
        if name.startswith(clients) and "." not in name.removeprefix(clients)
        if module.path.name not in NOT_ADAPTER_CODE
    }
    spelled = wire_name_files(modules, package)
    return {
        "root": str(root),
        "revision": revision(root),
        "wire_names": {vendor: sorted(files) for vendor, files in spelled.items()},
        "wire_names_spelled": spelled,
        "crossed": calls_crossed(root),
        "registry_modules": loaded_by_registry(root),
        "recording_cycles": import_cycles(modules, "openprogram.recording"),
        "package_cycles": import_cycles(modules, "openprogram"),
        "adapter_lines": adapters,
        "product_lines": sum(module.lines for module in modules.values()),
        "product_tokens": sum(module.tokens for module in modules.values()),
        "listed_three_times": listed_three_times(modules),
    }


def figures(measured: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of each measure, as ``--json`` prints them."""
    wire = {vendor: len(files) for vendor, files in measured["wire_names"].items()}
    crossed = {
        call: {"files": len(files), "functions": sum(len(names) for names in files.values())}
        for call, files in measured["crossed"].items()
    }
    recording = measured["recording_cycles"]
    adapters = measured["adapter_lines"]
    return {
        "root": measured["root"],
        "revision": measured["revision"],
        "wire_name_files": wire,
        "wire_name_files_max": max(wire.values()),
        **crossed,
        "registry_import_modules": len(measured["registry_modules"]),
        "recording_cycles": len(recording),
        "recording_largest_cycle": len(recording[0]) if recording else 0,
        "package_largest_cycle": len(measured["package_cycles"][0])
        if measured["package_cycles"]
        else 0,
        "largest_adapter": max(adapters.get(name, 0) for name in ADAPTERS),
        "adapters_and_shared": sum(adapters.values()),
        "product_lines": measured["product_lines"],
        "product_tokens": measured["product_tokens"],
        "names_listed_three_times": sum(len(n) for n in measured["listed_three_times"].values()),
    }


def indented(lines: Iterable[str]) -> None:
    for line in lines:
        print(f"    {line}")


def report(measured: Mapping[str, Any], *, verbose: bool) -> None:
    numbers = figures(measured)
    print(f"openprogram of {measured['root']} ({measured['revision']})")
    wire = ", ".join(f"{vendor} {count}" for vendor, count in numbers["wire_name_files"].items())
    print(f"files spelling a vendor's wire names: max {numbers['wire_name_files_max']} ({wire})")
    if verbose:
        for vendor, files in measured["wire_names_spelled"].items():
            print(f"  {vendor}:")
            indented(f"{file:50} {', '.join(names)}" for file, names in sorted(files.items()))
    titles = {
        "sdk_request": "files crossed by one replayed openai SDK request",
        "registry_call": "files crossed by one complete_simple on echo, replayed",
    }
    for call, title in titles.items():
        crossed = measured["crossed"][call]
        print(f"{title}: {numbers[call]['files']} ({numbers[call]['functions']} functions)")
        if verbose:
            indented(
                f"{file:45} {len(names):3}  {', '.join(names)}"
                for file, names in sorted(crossed.items())
            )
    loaded = measured["registry_modules"]
    print(f"modules loaded by import openprogram.providers.registry: {len(loaded)}")
    if verbose:
        indented(measured["registry_modules"])
    print(
        f"import cycles in recording/, TYPE_CHECKING included: {numbers['recording_cycles']}"
        f" (largest {numbers['recording_largest_cycle']} modules; in the whole package, the"
        f" largest is {numbers['package_largest_cycle']} modules)"
    )
    if verbose:
        indented(" ".join(component) for component in measured["recording_cycles"])
    print(
        f"largest client adapter: {numbers['largest_adapter']} lines;"
        f" adapters + shared code: {numbers['adapters_and_shared']} lines"
    )
    if verbose:
        indented(f"{name:25} {lines}" for name, lines in measured["adapter_lines"].items())
    print(f"product lines: {numbers['product_lines']}")
    print(f"product code tokens (no comments, docstrings or layout): {numbers['product_tokens']}")
    triples = measured["listed_three_times"]
    print(
        f"names listed three times in a package __init__: {numbers['names_listed_three_times']}"
        f" (in {len(triples)} packages)"
    )
    if verbose:
        indented(f"{package:35} {len(names)}" for package, names in triples.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=CHECKOUT,
        help="the checkout to measure, the folder holding openprogram/ (default: this one)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list what each counts")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--trace-calls", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.trace_calls:
        trace_calls()
        return
    root = arguments.root.resolve()
    if not (root / "openprogram" / "__init__.py").is_file():
        parser.error(f"--root {arguments.root}: no openprogram/__init__.py there; give a checkout")
    measured = measure(root)
    if arguments.json:
        print(json.dumps(figures(measured)))
    else:
        report(measured, verbose=arguments.verbose)


if __name__ == "__main__":
    main()
