"""Old import path of :mod:`openprogram.recording.reader`, kept working.

Importing it gives that very module, so whatever is set through either name is one.
"""

from __future__ import annotations

import sys

from openprogram.recording import reader as _moved
from openprogram.recording.reader import *  # noqa: F403 - its names, for type checkers

sys.modules[__name__] = _moved
