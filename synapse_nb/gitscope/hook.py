"""Former name of the git hook entry, kept for hooks installed before it became :mod:`~synapse_nb.gitscope.githook`.

Such hooks run ``python -m synapse_nb.gitscope.hook <name>``; this runs the same entry point, and the
line it writes to ``hook.log`` ends with a note that ``synapse-nb hooks install`` refreshes the hook
(rewriting it to call ``synapse_nb.gitscope.githook``). New code uses :mod:`synapse_nb.gitscope.githook`.
"""

from __future__ import annotations

import sys

from synapse_nb.gitscope.githook import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover - exercised through an old-style hook script in tests
    try:
        main(legacy=True)
    except BaseException:  # noqa: BLE001, S110 - a hook never fails the git command
        pass
    sys.exit(0)
