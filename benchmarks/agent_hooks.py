"""Agent hook cold-start benchmark: ``synapse-nb hook ...`` in fresh processes (prints figures, asserts nothing).

Run: ``.venv/bin/python benchmarks/agent_hooks.py [--runs 11] [--records 10000]``

Each line is the median wall time of a fresh ``python -m synapse_nb ...`` process and its ratio to ``python -c
pass`` measured in the same run (the steady figure on a shared machine):

- ``hook post-tool`` (an edit counted, no checkpoint due): the hook path itself (interpreter, ``import
  synapse_nb``, opening the vault, the session file), without typer;
- the same call through the typer CLI (``synapse_nb.cli.main``): what the light path saves;
- ``hook prompt`` with a relevant prompt in a new session (a cold recall), and the same prompt again in that
  session (the delta: nothing new, nothing printed);
- ``hook session-start``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(args: list[str], env: dict[str, str], runs: int, cwd: Path, stdin: str = "") -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(args, env=env, cwd=cwd, input=stdin, text=True, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--records", type=int, default=10_000)
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import synapse_nb as syn

    tmp = Path(tempfile.mkdtemp(prefix="synapse-bench-hooks-"))
    env = {k: v for k, v in os.environ.items() if k not in ("SYNAPSE_HOME", "SYNAPSE_READONLY")}
    env["PYTHONPATH"] = str(ROOT)
    with syn.open_vault(tmp) as v, v.transaction():
        for i in range(a.records):
            v.remember("knowledge", f"fact_{i}", f"service {i} runs on port {8000 + i} behind proxy {i % 97}")
        v.remember("procedure", "run_migrations", "Run alembic upgrade head before deploying the billing api")
    py = sys.executable
    hook = [py, "-m", "synapse_nb", "--vault", str(tmp), "hook"]
    typer_path = [py, "-c", "import sys; from synapse_nb.cli import main; sys.exit(main(sys.argv[1:]))",
                  "--vault", str(tmp), "hook"]
    base = statistics.median(timed([py, "-c", "pass"], env, a.runs, tmp))
    rows: list[tuple[str, float]] = [("python -c pass", base)]

    def row(name: str, xs: list[float]) -> None:
        rows.append((name, statistics.median(xs)))

    row("hook post-tool (light path)", timed([*hook, "post-tool", "--session", "b", "--file", "a.py"], env,
                                             a.runs, tmp))
    row("hook post-tool through typer", timed([*typer_path, "post-tool", "--session", "b", "--file", "a.py"], env,
                                              a.runs, tmp))
    prompt = "how do we run the migrations before deploying billing?"
    new = [timed([*hook, "prompt", "--session", f"new-{i}", "--text", prompt], env, 1, tmp)[0] for i in range(a.runs)]
    row("hook prompt, cold recall, new session", new)
    row("hook prompt, same session again (empty)", timed([*hook, "prompt", "--session", "new-0", "--text", prompt],
                                                          env, a.runs, tmp))
    row("hook session-start", timed([*hook, "session-start", "--session", "s"], env, a.runs, tmp))
    print(f"python {sys.version.split()[0]}; {a.records:,} memories; median of {a.runs} fresh processes")
    for name, med in rows:
        print(f"{name:<44} {med * 1000:8.1f} ms  {med / base:6.1f}x python -c pass")


if __name__ == "__main__":
    main()
