"""Former name of :mod:`synapse_nb.recall.assembly` (renamed: ``synapse_nb/render.py`` is the surfaces' text and
HTML helpers, this one assembles a recall's text). Importing it still works for one release and warns.
"""

from __future__ import annotations

import warnings

from synapse_nb.recall.assembly import *  # noqa: F403 - the old import path re-exports the new module's names
from synapse_nb.recall.assembly import __all__  # noqa: F401

warnings.warn("synapse_nb.recall.render is now synapse_nb.recall.assembly; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
