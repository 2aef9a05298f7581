"""Benchmark of openprogram's start-up hook, run by hand: what every Python process pays.

    python benchmarks/bench_startup.py            # about 3 min
    python benchmarks/bench_startup.py --quick    # a smoke run

Every Python process of an environment where openprogram is installed runs its start-up hook
(``openprogram_startup.pth``). Two questions, each answered with alternated runs of
``python -c pass`` (wall time of the whole process, median of the runs):

1. **The mode off** — the budget: at most 1 ms or 5 % added, whichever is larger. A fresh
   virtual environment with the openprogram wheel installed (built offline by the project's
   backend; its dependencies are not needed to decide ``off``), run with the hook and
   without it (its ``.pth`` moved aside between runs: the same environment otherwise), in
   the two cases a user meets: no configuration file at all, and a configuration that
   ``recordings off`` wrote (the hook reads the start-up marker beside it). Then the same
   with an editable install, where the hook is imported through setuptools' editable finder
   (whose own cost, paid with or without the hook, is in both columns).
2. **The mode on** — record or replay configured, in this environment (openprogram with its
   dependencies): the activation at start, against ``openprogram exec``'s per-process
   activation today (its ``sitecustomize`` and plan, in the environment exec gives the
   command); and, for comparison, a process whose mode is off but that must read the
   configuration in full (a variable the marker was not written for): what every process
   would pay without the marker. exec's processes read the recording as they start (under
   replay); the configured mode reads it at the first model call, so a process that makes
   none never does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_reference import machine_reference

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = (
    "pyproject.toml",
    "README.md",
    "MANIFEST.in",
    "_openprogram_startup.py",
    "openprogram_startup.pth",
    "build_backend",
    "openprogram",
)


def timed(command: list[str], env: dict[str, str]) -> float:
    """Wall milliseconds of one run of ``command``."""
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def alternated(
    runs: int, first: Callable[[], float], second: Callable[[], float]
) -> tuple[float, float]:
    """Medians of ``first`` and ``second``, run alternately (which goes first alternates
    too), after one warm-up of each."""
    first(), second()
    a: list[float] = []
    b: list[float] = []
    for index in range(runs):
        if index % 2:
            b.append(second())
            a.append(first())
        else:
            a.append(first())
            b.append(second())
    return statistics.median(a), statistics.median(b)


def line(name: str, without: float, with_: float, budget: bool = False) -> None:
    added = with_ - without
    percent = 100 * added / without
    verdict = ""
    if budget:
        verdict = "  within budget" if added <= max(1.0, 0.05 * without) else "  OVER BUDGET"
    print(f"{name:<52} {without:8.2f} {with_:8.2f} {added:+8.2f} ms {percent:+6.1f} %{verdict}")


BUILD_EDITABLE = """\
import sys
sys.path.insert(0, "build_backend")
import startup_hook_backend
print(startup_hook_backend.build_editable(sys.argv[1]))
"""


def installed_environment(folder: Path, *, editable: bool) -> tuple[Path, Path]:
    """A fresh venv with openprogram's wheel, or its editable wheel (no dependencies); its
    python and the hook's ``.pth``."""
    source = folder / "checkout"
    source.mkdir()
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignored)
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = folder / "dist"
    dist.mkdir()
    if editable:
        subprocess.run(
            [sys.executable, "-c", BUILD_EDITABLE, str(dist)],
            cwd=source,
            check=True,
            capture_output=True,
        )
    else:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "--no-index", "-w", str(dist), str(source)],
            check=True,
        )  # fmt: skip
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    (wheel,) = dist.glob("*.whl")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return python, Path(purelib) / "openprogram_startup.pth"


def clean_environment(home: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith(("OPENPROGRAM_", "_OPENPROGRAM_"))
    }
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("PYTHONPATH", None)
    # Python caches the bytecode of what it imports, as a user's environment does: without
    # it, the hook of an editable install (in the checkout, not compiled by pip) is compiled
    # again by every process.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def mode_off(runs: int, folder: Path, *, editable: bool = False) -> None:
    folder.mkdir()
    python, hook = installed_environment(folder, editable=editable)
    aside = hook.with_name(hook.name + ".aside")
    command = [str(python), "-c", "pass"]

    def with_hook(env: dict[str, str]) -> Callable[[], float]:
        def run() -> float:
            if aside.exists():
                aside.rename(hook)
            return timed(command, env)

        return run

    def without_hook(env: dict[str, str]) -> Callable[[], float]:
        def run() -> float:
            if hook.exists():
                hook.rename(aside)
            return timed(command, env)

        return run

    install = "an editable install (setuptools' finder either way)" if editable else "the wheel"
    print(f"1. the mode off, {install}: python -c pass, the same venv without and with the hook")
    print(f"{'case':<52} {'without':>8} {'with':>8} {'added':>11} {'':>8}")
    no_config = clean_environment(folder / "home-none")
    line("no configuration file", *alternated(runs, without_hook(no_config), with_hook(no_config)),
         budget=True)  # fmt: skip

    home = folder / "home-off"
    switched = clean_environment(home)
    switched["OPENPROGRAM_HOME"] = str(home)
    subprocess.run(  # `recordings off` writes the configuration and its marker
        [sys.executable, "-m", "openprogram", "recordings", "off"],
        env={**os.environ, "OPENPROGRAM_HOME": str(home)},
        check=True,
        capture_output=True,
    )
    marker = home / ".config.toml.startup"
    line(
        "config written by `recordings off` (marker read)",
        *alternated(runs, without_hook(switched), with_hook(switched)),
        budget=True,
    )
    print(f"  (marker: {marker.read_text().strip()})")
    if hook.exists() is False and aside.exists():
        aside.rename(hook)


def mode_on(runs: int, folder: Path) -> None:
    from openprogram.activation.configured import exec_plan
    from openprogram.activation.exec_environment import child_environment, open_exchange

    home = folder / "home-on"
    env = clean_environment(home)
    env["OPENPROGRAM_HOME"] = str(home)
    env["OPENAI_API_KEY"] = "sk-bench"
    python = sys.executable
    command = [python, "-c", "pass"]

    def openprogram(*args: str) -> None:
        subprocess.run(
            [python, "-m", "openprogram", *args], env=env, check=True, capture_output=True
        )

    recording = home / "recordings" / "bench.jsonl"
    openprogram("recordings", "record", "bench")
    write_one_call(recording, env)
    off_env = {**env, "OPENPROGRAM_RECORD_REPLAY__MODE": "off"}

    print()
    print("2. the mode on: python -c pass in this environment (openprogram and its dependencies)")
    print(f"{'case':<52} {'off':>8} {'on':>8} {'added':>11} {'':>8}")
    off_home = folder / "home-full"
    full_env = {**clean_environment(off_home), "OPENPROGRAM_HOME": str(off_home)}
    subprocess.run(
        [python, "-m", "openprogram", "recordings", "off"],
        env=full_env,
        check=True,
        capture_output=True,
    )
    counter = iter(range(1_000_000))

    def full_reading() -> float:  # a variable the marker was never written for
        return timed(command, {**full_env, "OPENPROGRAM_BENCH_RUN": str(next(counter))})

    line(
        "off, read in full (a variable the marker lacks)",
        *alternated(runs, lambda: timed(command, full_env), full_reading),
    )
    for mode in ("record", "replay"):
        if mode == "replay":
            openprogram("recordings", "replay", "bench")
        line(
            f"configured {mode} (this hook)",
            *alternated(runs, lambda: timed(command, off_env), lambda: timed(command, env)),
        )
        os.environ["OPENPROGRAM_HOME"] = str(home)
        try:
            plan = exec_plan()  # exec of the configured mode
        finally:
            del os.environ["OPENPROGRAM_HOME"]
        assert plan is not None
        assert plan.mode == mode
        exchange = open_exchange()
        try:
            # exec's child: its plan handed down, its sitecustomize first on PYTHONPATH
            under_exec = child_environment(off_env, plan, exchange)

            def exec_child(environ: dict[str, str] = under_exec) -> float:
                return timed(command, environ)

            line(
                f"exec's {mode} activation in each process (today)",
                *alternated(runs, lambda: timed(command, off_env), exec_child),
            )
        finally:
            exchange.remove()


def write_one_call(recording: Path, env: dict[str, str]) -> None:
    """One recorded model call in ``recording``, made by a process in the configured record
    mode against a loopback server of this script's."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    body = (
        b'{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        subprocess.run(
            [sys.executable, "-c",
             "import sys, openai; openai.OpenAI(base_url=sys.argv[1]).chat.completions.create("
             "model='m', messages=[{'role': 'user', 'content': 'hi'}])",
             f"http://127.0.0.1:{server.server_address[1]}/v1"],
            env=env,
            check=True,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert recording.read_text().count('"type":"request"') == 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    options = parser.parse_args(argv)
    runs = 5 if options.quick else 41
    print(f"machine reference: {machine_reference():.1f} µs")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        mode_off(runs, Path(folder) / "wheel")
        print()
        mode_off(runs, Path(folder) / "editable", editable=True)
        mode_on(max(3, runs // 2), Path(folder))
    print(f"machine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
