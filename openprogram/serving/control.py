"""The control API of ``openprogram serve``: the sessions of tests, opened, listed and ended.

All of it is JSON, and all of it but health asks for the server's token
(:mod:`~openprogram.serving.trust` checks that before a handler runs):

``GET /__openprogram/health``
    ``{"ok": true, "version"}`` to anyone (whether the server is up names nothing); with the
    token, also the server's own ``mode`` and ``recording`` and how many ``sessions`` are open.
``POST /__openprogram/sessions`` ``{"name": …, "mode": "replay"|"record"|"once"}``
    opens a session and answers its id and base URLs (201).
``GET /__openprogram/sessions``
    the open sessions and the accounts of the ended ones.
``DELETE /__openprogram/sessions/<id>`` (``?keep=false`` throws away what it recorded)
    ends a session and answers its account.

A body is read within bounds: at most :data:`MAX_CONTROL_BODY` bytes (413 above), nested at
most :data:`~openprogram.json_nesting.MAX_NESTING_DEPTH` levels (400, one line: the depth of
the text is counted before it is parsed)."""

from __future__ import annotations

import logging
import re
from typing import Any

import orjson
from aiohttp import web

from openprogram import __version__
from openprogram.json_nesting import MAX_NESTING_DEPTH, TOO_DEEP, json_text_may_exceed_nesting_limit
from openprogram.serving.routes import CONTROL_PREFIX, VENDORS
from openprogram.serving.sessions import SessionRefused, SessionTable
from openprogram.serving.trust import HEALTH_PATH
from openprogram.wording import plural

__all__ = ["MAX_CONTROL_BODY", "TRUSTED", "ControlApi", "control_error"]

logger = logging.getLogger("openprogram.serve")

MAX_CONTROL_BODY = 1024 * 1024
"""The largest control request body read (1 MiB: a session's name and mode need a few
hundred bytes)."""
TRUSTED = web.RequestKey("openprogram_trusted", bool)
"""The request's key saying whether it carried the server's token."""
_NO_RETRY = {"x-should-retry": "false"}
_SHAPE = 'send a JSON object: {"name": "…", "mode": "replay"}'


class BadBody(ValueError):
    """A control request's body that cannot be taken: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class ControlApi:
    """The control API's handlers, over one server's session table."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get(HEALTH_PATH, self.health)
        app.router.add_post(f"{CONTROL_PREFIX}/sessions", self.open_session)
        app.router.add_get(f"{CONTROL_PREFIX}/sessions", self.list_sessions)
        app.router.add_delete(f"{CONTROL_PREFIX}/sessions/{{id}}", self.close_session)

    async def health(self, request: web.Request) -> web.Response:
        answer: dict[str, Any] = {"ok": True, "version": __version__}
        if request.get(TRUSTED):
            own = self.table.own
            answer["mode"] = None if own is None else own.mode
            answer["recording"] = None if own is None or own.path is None else str(own.path)
            answer["sessions"] = len(self.table.open_sessions())
        return web.json_response(answer)

    async def open_session(self, request: web.Request) -> web.Response:
        try:
            given = await read_json_body(request)
        except BadBody as bad:
            return control_error(bad.status, "openprogram_bad_session", str(bad))
        if not isinstance(given, dict) or not isinstance(given.get("name"), str):
            return control_error(400, "openprogram_bad_session", _SHAPE)
        mode = given.get("mode")
        if mode is not None and not isinstance(mode, str):
            return control_error(400, "openprogram_bad_session", "mode must be a string")
        try:
            session = self.table.open(given["name"], mode)
        except SessionRefused as refused:
            return control_error(refused.status, refused.kind, str(refused))
        assert session.session_id is not None
        prefix = f"{CONTROL_PREFIX}/s/{session.session_id}"
        origin = f"http://{request.host}"
        logger.info("session %s opened: %s %s", session.session_id, session.mode, session.name)
        return web.json_response(
            {
                "id": session.session_id,
                "name": session.name,
                "mode": session.mode,
                "opened_mode": session.opened_mode,
                "path": None if session.path is None else str(session.path),
                "prefix": prefix,
                "base_urls": {
                    vendor.name: f"{origin}{prefix}/{vendor.name}{vendor.base_path}"
                    for vendor in VENDORS
                },
            },
            status=201,
        )

    async def list_sessions(self, request: web.Request) -> web.Response:
        open_ = [{"id": s.session_id, **s.account().to_json()} for s in self.table.open_sessions()]
        ended = [account.to_json() for account in self.table.ended]
        return web.json_response({"open": open_, "ended": ended})

    async def close_session(self, request: web.Request) -> web.Response:
        keep = request.query.get("keep", "true").lower() not in ("false", "0", "no")
        try:
            account = self.table.close(request.match_info["id"], keep=keep)
        except SessionRefused as refused:
            return control_error(refused.status, refused.kind, str(refused))
        for problem in account.problems:
            logger.warning("session %s: %s", account.name, problem)
        logger.info("session %s ended: %s %s", account.name, account.mode,
                    plural(account.calls, "call"))  # fmt: skip
        return web.json_response(account.to_json())


async def read_json_body(request: web.Request) -> Any:
    """The JSON value of ``request``'s body, read within bounds; :class:`BadBody` (413 for a
    body over :data:`MAX_CONTROL_BODY`, else 400) saying what is wrong with it."""
    if (request.content_length or 0) > MAX_CONTROL_BODY:
        raise BadBody(413, _too_large())
    data = bytearray()
    while chunk := await request.content.read(64 * 1024):
        data += chunk
        if len(data) > MAX_CONTROL_BODY:
            raise BadBody(413, _too_large())
    body = bytes(data)
    if json_text_may_exceed_nesting_limit(body) and _text_depth(body) > MAX_NESTING_DEPTH:
        raise BadBody(400, f"the body is {TOO_DEEP}: {_SHAPE}")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise BadBody(400, f"the body is not JSON ({_first_line(error)}): {_SHAPE}") from None


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def _text_depth(data: bytes) -> int:
    """How deeply the JSON text ``data`` nests, read without parsing it (its strings left
    out): the bound is checked before a parser recurses."""
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b"", data)):
        depth += 1 if bracket[0] in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def _too_large() -> str:
    return f"the body is over the control API's limit of {MAX_CONTROL_BODY} bytes: {_SHAPE}"


def _first_line(error: Exception) -> str:
    return str(error).split("\n", 1)[0]


def control_error(status: int, kind: str, message: str) -> web.Response:
    """An answer of the control API's own: ``{"error": {"type", "message"}}``."""
    return web.json_response(
        {"error": {"type": kind, "message": message}},
        status=status,
        headers={"x-openprogram-error": kind, **_NO_RETRY},
    )
