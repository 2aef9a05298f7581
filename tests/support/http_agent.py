"""A tiny agent that asks its model over HTTP with httpx: what the tests of the ways in
(``record_replay()``, the pytest fixture, ``openprogram exec``) record and replay at the
HTTP boundary, against the loopback server of ``sse_server.py``.

:func:`ask` posts ``{"question": …}`` to ``<base_url>/ask`` and returns the reply's
``answer``; :func:`answering` is the server's script for one reply. :data:`AGENT_PROGRAM`
is the same agent as a program (``python agent.py BASE_URL QUESTION...``) that prints each
answer, and asks the built-in echo model through openprogram's providers too when
``--echo TEXT`` is given, so one run crosses both boundaries.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.sse_server import Script


def answering(answer: str) -> Script:
    """The server's reply to one question: ``{"answer": answer}`` as JSON."""
    return Script(
        [b'{"answer": "%s"}' % answer.encode()], headers={"Content-Type": "application/json"}
    )


def ask(base_url: str, question: str) -> str:
    with httpx.Client() as client:
        reply = client.post(f"{base_url}/ask", json={"question": question}, timeout=10)
        reply.raise_for_status()
        answer: str = reply.json()["answer"]
        return answer


AGENT_PROGRAM = """\
import asyncio
import sys

import httpx


def ask(base_url, question):
    with httpx.Client() as client:
        reply = client.post(base_url + "/ask", json={"question": question}, timeout=10)
        reply.raise_for_status()
        return reply.json()["answer"]


def echo(text):
    from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

    context = Context(messages=[UserMessage(content=text)])
    return asyncio.run(complete_simple(ECHO_MODEL, context)).text


arguments = sys.argv[1:]
if arguments[:1] == ["--echo"]:
    print(echo(arguments[1]))
    arguments = arguments[2:]
base_url, questions = arguments[0], arguments[1:]
for question in questions:
    print(ask(base_url, question))
"""


def write_agent(folder: Path, source: str = AGENT_PROGRAM, name: str = "agent.py") -> Path:
    path = folder / name
    path.write_text(source)
    return path
