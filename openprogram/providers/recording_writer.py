"""Old import path of :mod:`openprogram.recording.writer`, kept working.

Importing it gives that very module, so whatever is set through either name is one.
"""

from __future__ import annotations

import sys

from openprogram.recording import writer as _moved
from openprogram.recording.writer import *  # noqa: F403 - its names, for type checkers

sys.modules[__name__] = _moved
