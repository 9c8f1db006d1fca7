"""How long ``%load_ext synapse_nb`` takes in a fresh process (target: <= 0.5 s).

Each repetition starts a new Python process with a plain IPython shell (IPython already imported, as in
a kernel), then times ``%load_ext synapse_nb`` alone and, separately, the first magic that opens the
vault (``%synapse``). Prints the median and max of each over the repetitions.

Usage::

    .venv/bin/python benchmarks/extension_load.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import io, json, sys, time, contextlib
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
t0 = time.perf_counter()
ip.run_line_magic("load_ext", "synapse_nb")
t1 = time.perf_counter()
ip.run_line_magic("config", "SynapseMagics.vault_path = %r" % sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()):
    ip.run_line_magic("synapse", "")
t2 = time.perf_counter()
heavy = sorted(m for m in ("ipywidgets", "pandas", "polars", "lancedb", "sklearn", "pyarrow") if m in sys.modules)
print(json.dumps({"load_ext": t1 - t0, "first_magic": t2 - t1, "heavy_modules_after_load": heavy}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    loads, firsts, heavy = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([sys.executable, "-c", CHILD, tmp], check=True, capture_output=True, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        loads.append(row["load_ext"])
        firsts.append(row["first_magic"])
        heavy = row["heavy_modules_after_load"]
    print(f"%load_ext synapse_nb: median {statistics.median(loads):.3f} s, max {max(loads):.3f} s "
          f"over {args.repeat} fresh processes (target <= 0.5 s)")
    print(f"first magic (%synapse, opens the vault): median {statistics.median(firsts):.3f} s, "
          f"max {max(firsts):.3f} s")
    print(f"heavy modules imported after load + first magic: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
