"""``python -m synapse_nb``: the same as the ``synapse-nb`` command.

>>> import subprocess, sys
>>> subprocess.run([sys.executable, "-m", "synapse_nb", "--version"], capture_output=True).returncode  # doctest: +SKIP
0
"""

import sys

from synapse_nb.cli import main

if __name__ == "__main__":
    sys.exit(main())
