"""Former name of :mod:`synapse_nb.gitscope.githook_install` (renamed so that the git hook's installer sits beside the
git hook's process, :mod:`synapse_nb.gitscope.githook`, and no longer reads like the agent hooks,
:mod:`synapse_nb.agents.hooks`). Importing it still works for one release and warns.
"""

from __future__ import annotations

import warnings

from synapse_nb.gitscope.githook_install import *  # noqa: F403 - the old import path re-exports the new module's names
from synapse_nb.gitscope.githook_install import __all__  # noqa: F401

warnings.warn("synapse_nb.gitscope.hooks is now synapse_nb.gitscope.githook_install; the old name goes in the next "
              "release", DeprecationWarning, stacklevel=2)
