"""Benchmark the post-commit hook after an agent adds a huge side branch (review 45's leftover).

Run:  .venv/bin/python benchmarks/git_side_branch_hooks.py [--side 200000] [--hooks 12] [--timeout 2]

Builds a throw-away repository and vault, scans it once as a person, adds ``--side`` commits on branch
``agent-scratch`` with ``git fast-import`` (one revert at its bottom, one at its top), then makes ``--hooks`` person's
commits on ``main``, running the real hook process after each (``python -P -m synapse_nb.gitscope.githook
post-commit``, in the foreground so the runs do not overlap) with ``SYNAPSE_HOOK_TIMEOUT=--timeout``. It prints each
hook's wall time and ``hook.log`` line, and after which hook each side-branch revert became a pending lesson.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synapse_nb.gitscope.testing import ScratchRepo  # noqa: E402


def side_branch(r: ScratchRepo, n: int) -> None:
    """``n`` commits on ``agent-scratch`` from main; the second and the last revert main's first commit."""
    first = r.git("rev-list", "--max-parents=0", "main").strip()
    lines = []
    for i in range(n):
        if i in (1, n - 1):
            msg = f'Revert "init" ({i})\n\nThis reverts commit {first}.\n'
        else:
            msg = f"Side change {i}\n"
        raw = msg.encode()
        lines.append(f"commit refs/heads/agent-scratch\nmark :{i + 1}\n"
                     f"committer Bot <b@x> {1_700_000_000 + i} +0000\ndata {len(raw)}\n{msg}\n"
                     + ("from refs/heads/main^0\n" if i == 0 else "") + f"M 100644 inline f{i % 10}.txt\n"
                     f"data {len(str(i)) + 1}\n{i}\n\n")
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=r.root, env=r.env(),
                   input="".join(lines).encode(), check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=200_000)
    parser.add_argument("--hooks", type=int, default=12)
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args()
    from synapse_nb.vault import open_vault

    with tempfile.TemporaryDirectory(prefix="synapse-side-bench-") as tmp:
        r = ScratchRepo.init(Path(tmp) / "repo")
        r.commit_file("a.txt", "a\n", "init")
        os.environ.pop("SYNAPSE_HOME", None)
        with open_vault(r.root) as v:
            v.lessons.scan()
        t0 = time.perf_counter()
        side_branch(r, args.side)
        print(f"side branch: {args.side} commits in {time.perf_counter() - t0:.1f} s (git fast-import)")
        env = r.env() | {"SYNAPSE_HOOK_TIMEOUT": str(args.timeout), "PYTHONPATH": str(ROOT)}
        env.pop("SYNAPSE_HOME", None)
        log = r.root / ".synapse" / "hook.log"
        seen = 0
        for k in range(1, args.hooks + 1):
            r.commit_file("a.txt", f"a{k}\n", f"person's change {k}")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-P", "-m", "synapse_nb.gitscope.githook", "post-commit"], cwd=r.root,
                           env=env, check=True)
            took = time.perf_counter() - t0
            with open_vault(r.root) as v:
                pending = len(v.lessons.pending())
            line = log.read_text().splitlines()[-1].split(" ", 3)[-1]
            print(f"hook {k}: {took:.2f} s wall, {pending} pending lesson(s); log: {line[:150]}")
            if pending >= 2 > seen:
                print(f"both side-branch reverts are lessons after hook {k}")
            seen = pending
        print(f"after {args.hooks} hooks: {seen} of 2 side-branch reverts are pending lessons")


if __name__ == "__main__":
    main()
