"""openprogram: record an LLM agent session at the provider boundary, replay it offline.

Importing this package (or :mod:`openprogram.providers`) has no side effects: it registers
no provider, reads no configuration and opens no file. See ``docs/`` for the guides.
"""

from __future__ import annotations

__version__ = "0.1.0"
