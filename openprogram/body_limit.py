"""The one default for how large a body openprogram holds whole in memory.

The recording proxy reads each request body whole before it records or forwards it
(``openprogram serve --max-request-size``); ``recordings import`` decodes each body of a
cassette whole before it stores it (``--max-body-size``). Both stop at this size unless told
otherwise. This module imports nothing, so a command's help can show the default at no cost."""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_BODY_SIZE", "MAX_BODY_SIZE_MB", "MEBIBYTE"]

MEBIBYTE: Final = 1024 * 1024
"""What the options' ``MB`` counts."""
MAX_BODY_SIZE_MB: Final = 64
"""The largest body held whole by default, in MB (a conversation with images fits)."""
MAX_BODY_SIZE: Final = MAX_BODY_SIZE_MB * MEBIBYTE
"""The same, in bytes."""
