"""``python -m synapse_nb`` and the ``synapse-nb`` script: the command line.

``synapse-nb hook ...`` (an agent's hook, run on every prompt) takes a light path that never loads the CLI
framework (:func:`synapse_nb.agents.hooks.main`); every other command (and ``hook --help``) runs the typer CLI
(:func:`synapse_nb.cli.main`).

>>> import subprocess, sys
>>> subprocess.run([sys.executable, "-m", "synapse_nb", "--version"], capture_output=True).returncode  # doctest: +SKIP
0
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run ``synapse-nb`` with ``argv`` (default: the process's arguments) and return the exit code."""
    args = sys.argv[1:] if argv is None else argv
    from synapse_nb.agents.hooks import is_hook_call  # never the CLI framework (typer, click, rich)

    if is_hook_call(args):
        from synapse_nb.agents.hooks import main as hook_main

        return hook_main(args)
    from synapse_nb.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
