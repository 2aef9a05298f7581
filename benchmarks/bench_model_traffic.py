"""Benchmark of the rule for model traffic, run by hand: what asking it costs per request.

    python benchmarks/bench_model_traffic.py           # about 10 s
    python benchmarks/bench_model_traffic.py --quick   # a smoke run

The configured mode asks ``model_traffic_reason`` of every request a captured client sends,
so its cost is paid per request. Each case is a request as a client sends it — headers as an
SDK or ``requests`` writes them, the model hosts normalised once as a caller does — timed
over many calls, median of several runs, in µs per request:

* an OpenAI SDK request (known by its first header test);
* a request with no telling header to a model API's path (the path rule);
* an Ollama request to its own path (the body rule: a 2 KB JSON body parsed);
* a GET of a tool's JSON API, and a pip index fetch (every rule asked, none holds);
* a tool's 100 KB JSON POST without ``model``, and with a ``model`` but no input field
  (neither parsed: the keys are looked for first).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from openprogram.config.hosts import normalized_hosts
from openprogram.vendors.model_traffic import model_traffic_reason

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_reference import machine_reference

MODEL_HOSTS = normalized_hosts(["llm-gateway.internal", "127.0.0.1:11434"])
OPENAI_HEADERS = {
    "Accept": "application/json",
    "Content-Type": "application/json",
    "User-Agent": "OpenAI/Python 3.63.0",
    "X-Stainless-Lang": "python",
    "X-Stainless-Package-Version": "3.63.0",
    "X-Stainless-OS": "Linux",
    "X-Stainless-Arch": "x64",
    "X-Stainless-Runtime": "CPython",
    "X-Stainless-Runtime-Version": "3.11.7",
    "Authorization": "Bearer sk-test",
    "X-Stainless-Retry-Count": "0",
}
PLAIN_HEADERS = {
    "User-Agent": "python-requests/2.34.2",
    "Accept-Encoding": "gzip, deflate",
    "Accept": "*/*",
    "Connection": "keep-alive",
}
CHAT = json.dumps(
    {"model": "llama3", "messages": [{"role": "user", "content": "x" * 2000}]}
).encode()
TOOL_RECORDS = [{"id": n, "name": f"item {n}", "tags": ["a", "b"]} for n in range(1200)]
TOOL_BODY = json.dumps({"records": TOOL_RECORDS}).encode()
TOOL_BODY_WITH_MODEL = json.dumps({"model": "Camry", "records": TOOL_RECORDS}).encode()

CASES: list[tuple[str, tuple[str, str, dict[str, str], bytes | None]]] = [
    (
        "OpenAI SDK request",
        ("POST", "https://api.openai.com/v1/chat/completions", OPENAI_HEADERS, CHAT),
    ),
    ("model API path", ("POST", "http://10.0.0.7:4000/v1/chat/completions", PLAIN_HEADERS, None)),
    ("Ollama body, 2 KB", ("POST", "http://127.0.0.2:11434/api/chat", PLAIN_HEADERS, CHAT)),
    ("tool GET", ("GET", "https://api.example.com/v1/weather?city=Paris", PLAIN_HEADERS, None)),
    ("pip index GET", ("GET", "https://pypi.org/simple/requests/", PLAIN_HEADERS, None)),
    ("tool POST, 100 KB", ("POST", "https://api.example.com/v1/records", PLAIN_HEADERS, TOOL_BODY)),
    (
        "tool POST with model, 100 KB",
        ("POST", "https://api.example.com/v1/cars", PLAIN_HEADERS, TOOL_BODY_WITH_MODEL),
    ),
]


def per_call_us(arguments: tuple[str, str, dict[str, str], bytes | None], calls: int) -> float:
    method, url, headers, body = arguments
    start = time.perf_counter_ns()
    for _ in range(calls):
        model_traffic_reason(method, url, headers, body, model_hosts=MODEL_HOSTS)
    return (time.perf_counter_ns() - start) / calls / 1_000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    options = parser.parse_args(argv)
    calls, runs = (200, 3) if options.quick else (5_000, 9)
    print(f"machine reference: {machine_reference():.1f} µs")
    print(f"{'request':<32} {'reason':<44} {'µs/request':>10}")
    for name, arguments in CASES:
        reason = model_traffic_reason(*arguments, model_hosts=MODEL_HOSTS)
        heavy = arguments[3] is not None and len(arguments[3]) > 50_000
        samples = [per_call_us(arguments, calls // 20 if heavy else calls) for _ in range(runs)]
        shown = reason or "(not model traffic)"
        print(f"{name:<32} {shown:<44} {statistics.median(samples):>10.2f}")
    print(f"machine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
