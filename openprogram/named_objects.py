"""Loading what a ``module:attr`` name on the command line points at.

``openprogram verify --tools my_agent.tools:TOOLS`` and ``recordings scan --redactor
my_project.redaction:redact`` name an object of the user's code this way: the module is
imported, with the current folder importable as under pytest, and the attribute path
(dotted: ``module:Class.method``) is walked. Each caller words its own errors. This module
imports nothing at import time."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

__all__ = ["NotAModuleAttributeName", "load_named_object"]


class NotAModuleAttributeName(ValueError):
    """The name is not of the form ``module:attr``."""


def load_named_object(name: str) -> object:
    """The object ``module:attr`` names. Raises :class:`NotAModuleAttributeName` when
    ``name`` has no module or attribute part, and the ``ImportError`` or ``AttributeError``
    of a module or attribute that is not there."""
    module_name, colon, attribute = name.partition(":")
    if not colon or not module_name or not attribute:
        raise NotAModuleAttributeName(name)
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    value: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value
