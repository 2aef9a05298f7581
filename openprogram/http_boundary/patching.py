"""The capture's hook into the client libraries, installed lazily.

Each library of :data:`~openprogram.http_boundary.clients.CLIENT_LIBRARIES` names the modules it
hooks (httpx and httpx2: their clients' ``_transport_for_url``, see
:mod:`~openprogram.http_boundary.clients.httpx_clients`; urllib3: its connection pools'
``_make_request``, see :mod:`~openprogram.http_boundary.clients.urllib3_client`).
:func:`install_http_capture` hooks them lazily: one already imported is hooked at once; for one
imported later, a finder placed first on ``sys.meta_path`` hooks it right after its module has run.
openprogram never imports a client library itself to hook it: importing httpx early would break a
program that later calls ``httpx2.alias_httpx()`` (which refuses once httpx is imported).

The same finder has the ``websockets`` package's client modules checked when they are
imported (:mod:`~openprogram.http_boundary.websocket_refusal`): a WebSocket is refused under replay.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from openprogram.http_boundary.clients import CLIENT_LIBRARIES, ClientLibrary

__all__ = ["install_http_capture"]

WEBSOCKET_MODULES = ("websockets.sync.client", "websockets.asyncio.client")
"""The modules of the ``websockets`` package whose connections are checked (see
:mod:`~openprogram.http_boundary.websocket_refusal`)."""
_HOOKS: dict[str, ClientLibrary[Any]] = {
    name: library for library in CLIENT_LIBRARIES for name in library.module_names
}
"""Which library hooks each module name."""
_PATCHED_MODULES = (*_HOOKS, *WEBSOCKET_MODULES)

_lock = threading.RLock()


def install_http_capture() -> None:
    """Hook the client libraries now if they are imported, and as soon as they are if not
    (idempotent). The finder is put back if something removed it from ``sys.meta_path``
    meanwhile (a harness restoring the import system, as pytest's in-process runs do)."""
    with _lock:
        if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
            sys.meta_path.insert(0, _PatchOnImport())
        for name in _PATCHED_MODULES:
            module = sys.modules.get(name)
            if module is not None:
                _patch(name, module)


def _patch(name: str, module: ModuleType) -> None:
    """Hook ``module``, imported as ``name`` (under the lock)."""
    library = _HOOKS.get(name)
    if library is not None:
        library.hook(module)
        return
    # the check (and the logging it imports) loads once a ``websockets`` module is imported
    from openprogram.http_boundary import websocket_refusal

    if name == "websockets.sync.client":
        websocket_refusal.patch_sync_websockets(module)
    else:
        websocket_refusal.patch_async_websockets(module)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the hooked modules and the ``websockets`` client modules as the other finders would,
    and has each module patched right after it has run."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
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
            _patch(module.__name__, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
