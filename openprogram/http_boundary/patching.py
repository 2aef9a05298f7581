"""The capture's hook into httpx and httpx2: their clients' ``_transport_for_url``.

Every request an httpx or httpx2 ``Client`` / ``AsyncClient`` sends (each hop of a redirect
too) asks its ``_transport_for_url`` for the transport to send it through. The patched
method asks the original, then, while an HTTP boundary is active, hands the answer to
:func:`~openprogram.http_boundary.transport.capture_transport`; while none is, it returns it as it
is, after one attribute read.

:func:`install_http_capture` patches the libraries lazily. One already imported is patched
at once; for one imported later, a finder placed first on ``sys.meta_path`` patches it right
after its module has run. openprogram never imports httpx or httpx2 itself to patch it:
importing httpx early would break a program that later calls ``httpx2.alias_httpx()``
(which refuses once httpx is imported). After that call ``httpx`` *is* ``httpx2``: each
class object is patched once (a mark in its ``__dict__`` says it is), so every request is
captured once, whichever name imported it.

The same finder has the ``websockets`` package's client modules checked when they are
imported (:mod:`~openprogram.http_boundary.websocket_refusal`): a WebSocket is refused under replay.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from openprogram.http_boundary.boundary import ACTIVATIONS

__all__ = ["CAPTURED_LIBRARIES", "install_http_capture", "patch_library"]

CAPTURED_LIBRARIES = ("httpx", "httpx2")
"""The modules whose client classes are patched."""
WEBSOCKET_MODULES = ("websockets.sync.client", "websockets.asyncio.client")
"""The modules of the ``websockets`` package whose connections are checked (see
:mod:`~openprogram.http_boundary.websocket_refusal`)."""
_PATCHED_MODULES = (*CAPTURED_LIBRARIES, *WEBSOCKET_MODULES)

_PATCH_MARK = "_openprogram_http_capture"
_CLIENT_CLASSES = ("Client", "AsyncClient")
_lock = threading.RLock()


def install_http_capture() -> None:
    """Patch httpx and httpx2 now if they are imported, and as soon as they are if not
    (idempotent). The finder is put back if something removed it from ``sys.meta_path``
    meanwhile (a harness restoring the import system, as pytest's in-process runs do)."""
    with _lock:
        if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
            sys.meta_path.insert(0, _PatchOnImport())
        for name in _PATCHED_MODULES:
            module = sys.modules.get(name)
            if module is not None:
                _patch(module)


def _patch(module: ModuleType) -> None:
    if module.__name__ in WEBSOCKET_MODULES:
        from openprogram.http_boundary import websocket_refusal

        if module.__name__ == "websockets.sync.client":
            websocket_refusal.patch_sync_websockets(module)
        else:
            websocket_refusal.patch_async_websockets(module)
    else:
        patch_library(module)


def patch_library(module: ModuleType) -> None:
    """Patch the client classes of ``module`` (httpx or httpx2), each class object once."""
    with _lock:
        pending = [
            cls
            for cls in (getattr(module, name, None) for name in _CLIENT_CLASSES)
            if isinstance(cls, type)
            and _PATCH_MARK not in cls.__dict__
            and "_transport_for_url" in cls.__dict__
        ]
        if not pending:
            return
        from openprogram.http_boundary.library import HttpLibrary

        library = HttpLibrary(module)
        for cls in pending:
            cls._transport_for_url = _capturing(cls.__dict__["_transport_for_url"], library)  # type: ignore[attr-defined]
            setattr(cls, _PATCH_MARK, True)


def _capturing(original: Callable[[Any, Any], Any], library: Any) -> Callable[[Any, Any], Any]:
    from openprogram.http_boundary.transport import capture_transport

    @functools.wraps(original)
    def _transport_for_url(self: Any, url: Any) -> Any:
        transport = original(self, url)
        boundary = ACTIVATIONS.current
        if boundary is None:
            return transport
        return capture_transport(self, transport, url, boundary, library)

    return _transport_for_url


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds httpx, httpx2 and the ``websockets`` client modules as the other finders would,
    and has each module patched right after it has run."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _PATCHED_MODULES:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if loader is not None and hasattr(loader, "exec_module"):
                spec.loader = _PatchAfterExec(loader)
            return spec
        return None


class _PatchAfterExec(importlib.abc.Loader):
    """The library's own loader, which then patches the module it ran (and puts itself
    back as the module's loader)."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader
        with _lock:
            _patch(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
