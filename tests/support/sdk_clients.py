"""The four official SDK clients — ``openai.OpenAI``, ``openai.AsyncOpenAI``,
``anthropic.Anthropic``, ``anthropic.AsyncAnthropic`` — of whichever generation is installed,
and a way to drive any of them with one scenario and write down what the program saw.

A scenario is ``async def scenario(client, seen)``: it makes its SDK calls and appends to
``seen`` what the program gets back (``model_dump()`` of each chunk, event and final object,
:func:`raw_view` of a raw response). The same scenario drives a sync client (its calls return
values) and an async one (they return awaitables): :func:`settle`, :func:`each` and
:func:`entered` take either. :func:`observe` runs a scenario and returns what was seen and
the exception that ended it (:class:`Raised`), so that a live run and a replayed one can be
compared whole, also where they fail part-way.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Literal

__all__ = [
    "API_KEYS",
    "CLIENT_KINDS",
    "ClientKind",
    "Observation",
    "Raised",
    "Scenario",
    "each",
    "entered",
    "major_version",
    "observe",
    "raw_view",
    "settle",
]

Vendor = Literal["openai", "anthropic"]
Scenario = Callable[[Any, list[Any]], Awaitable[None]]

API_KEYS: dict[str, str] = {
    "openai": "sk-proj-loopback-0123456789abcdefKEY1",
    "anthropic": "sk-ant-api03-loopback-0123456789abcdefKEY2",
}
"""The keys the clients are made with: long and unique, so a test can look for them."""

UNSTORED_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}
    | {"set-cookie"}
)
"""Response headers a recording never holds (wire encoding, hop-by-hop, cookies)."""


SDK_PACKAGES = ("openai.", "anthropic.")


def major_version(package: str) -> int:
    """The installed major version of ``package``."""
    return int(version(package).split(".")[0])


@dataclass(frozen=True)
class ClientKind:
    """One SDK client class."""

    vendor: Vendor
    asynchronous: bool

    @property
    def name(self) -> str:
        base = "OpenAI" if self.vendor == "openai" else "Anthropic"
        return f"Async{base}" if self.asynchronous else base

    def make(self, server_base_url: str, **options: Any) -> Any:
        """A client of this class for the API at ``server_base_url`` (the server's root: the
        OpenAI client is given its ``/v1``), made with the vendor's key from
        :data:`API_KEYS` unless ``options`` say otherwise (``api_key=None``: the SDK reads
        its key variable)."""
        module = __import__(self.vendor)
        base_url = server_base_url + ("/v1" if self.vendor == "openai" else "")
        cls = getattr(module, self.name)
        return cls(**{"api_key": API_KEYS[self.vendor], "base_url": base_url, **options})


CLIENT_KINDS = (
    ClientKind("openai", asynchronous=False),
    ClientKind("openai", asynchronous=True),
    ClientKind("anthropic", asynchronous=False),
    ClientKind("anthropic", asynchronous=True),
)


async def settle(value: Any) -> Any:
    """``value``, awaited when an async client returned an awaitable."""
    return await value if inspect.isawaitable(value) else value


async def each(stream: Any) -> AsyncIterator[Any]:
    """The items of a sync or async stream, one by one (so that a scenario keeps what came
    before a failure part-way)."""
    if hasattr(stream, "__aiter__"):
        async for item in stream:
            yield item
    else:
        for item in stream:
            yield item


@asynccontextmanager
async def entered(manager: Any) -> AsyncIterator[Any]:
    """A sync or async context manager (an SDK stream manager), entered."""
    if hasattr(manager, "__aenter__"):
        async with manager as value:
            yield value
    else:
        with manager as value:
            yield value


def raw_view(raw: Any, parsed: Any) -> dict[str, Any]:
    """What a program sees of a ``with_raw_response`` call: status, the headers a recording
    can hold (all but wire-encoding, hop-by-hop and cookie headers), the parsed object."""
    headers = {k: v for k, v in raw.headers.items() if k.lower() not in UNSTORED_HEADERS}
    return {"status": raw.status_code, "headers": headers, "parsed": parsed.model_dump()}


@dataclass
class Raised:
    """The exception that ended a scenario, as a program sees it."""

    type: str
    """``module.QualName``"""
    message: str
    status: int | None
    body: Any
    cause: str | None
    """For an SDK exception, the type of the exception it wraps (``httpx2.ReadTimeout``),
    if any. (An httpx exception's own cause is the connection library's exception, which a
    replayed exchange never reaches: it is not part of what the program sees.)"""

    @classmethod
    def of(cls, error: BaseException) -> Raised:
        cause = error.__cause__ if _type_name(error).startswith(SDK_PACKAGES) else None
        return cls(
            type=_type_name(error),
            message=str(error),
            status=getattr(error, "status_code", None),
            body=getattr(error, "body", None),
            cause=None if cause is None else _type_name(cause),
        )


def _type_name(error: BaseException) -> str:
    cls = type(error)
    return f"{cls.__module__.partition('.')[0]}.{cls.__qualname__}"


@dataclass
class Observation:
    """What a program saw: the objects it got, in order, and the exception that ended it."""

    seen: list[Any]
    raised: Raised | None


async def observe(
    kind: ClientKind, server_base_url: str, scenario: Scenario, **options: Any
) -> Observation:
    """Run ``scenario`` with a new client of ``kind`` (closed afterwards)."""
    client = kind.make(server_base_url, **options)
    seen: list[Any] = []
    raised: Raised | None = None
    try:
        await scenario(client, seen)
    except Exception as error:
        raised = Raised.of(error)
    finally:
        await settle(client.close())
    return Observation(seen, raised)
