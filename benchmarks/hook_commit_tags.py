"""Benchmark what the installed hooks add to ``git commit`` in a repository with many tags.

Run:  .venv/bin/python benchmarks/hook_commit_tags.py [--tags 20000] [--commits 5] [--package DIR]

Builds a throw-away repository with ``--tags`` commits and one annotated tag on each (``git fast-import``, refs
packed), then times ``--commits`` empty commits (wall time of ``git commit``, median) three ways: no hook, the hooks
installed in the background (the default) with a vault, and the same hooks with no vault. Between commits it waits for
the detached scan to finish, so the next commit does not share the CPU with it. ``--package``: the folder holding the
``synapse_nb`` to measure (default this checkout), e.g. an older one unpacked with ``git archive``.
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


def tagged(root: Path, env: dict[str, str], n: int) -> None:
    """``n`` commits on main, each with an annotated tag ``v<i>``."""
    lines = []
    for i in range(n):
        msg = f"Change {i}\n".encode()
        lines.append(f"commit refs/heads/main\nmark :{i + 1}\ncommitter Dev <d@x> {1_700_000_000 + i} +0000\n"
                     f"data {len(msg)}\nChange {i}\n" + (f"from :{i}\n" if i else "")
                     + f"M 100644 inline f.txt\ndata {len(str(i)) + 1}\n{i}\n\n")
        tag = f"Release {i}\n".encode()
        lines.append(f"tag v{i}\nfrom :{i + 1}\ntagger Dev <d@x> {1_700_000_000 + i} +0000\n"
                     f"data {len(tag)}\nRelease {i}\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, env=env, input="".join(lines).encode(), check=True,
                   capture_output=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, env=env, check=True)
    subprocess.run(["git", "pack-refs", "--all"], cwd=root, env=env, check=True)


def commits(root: Path, env: dict[str, str], n: int, log: Path | None) -> list[float]:
    times = []
    for _ in range(n):
        lines = len(log.read_text().splitlines()) if log is not None and log.exists() else 0
        t0 = time.perf_counter()
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "empty"], cwd=root, env=env, check=True)
        times.append((time.perf_counter() - t0) * 1000)
        deadline = time.time() + 10
        while log is not None and time.time() < deadline:  # the detached scan's line: it has finished
            if log.exists() and len(log.read_text().splitlines()) > lines:
                break
            time.sleep(0.05)
        time.sleep(0.2)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tags", type=int, default=20_000)
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--package", type=Path, default=ROOT)
    args = parser.parse_args()
    package = args.package.resolve()
    sys.path.insert(0, str(package))
    os.environ["PYTHONPATH"] = str(package)  # the hook's python, too
    os.environ.pop("SYNAPSE_HOME", None)
    from synapse_nb.gitscope import install_hooks
    from synapse_nb.gitscope.testing import ScratchRepo
    from synapse_nb.vault import open_vault

    with tempfile.TemporaryDirectory(prefix="synapse-tags-bench-") as tmp:
        r = ScratchRepo.init(Path(tmp) / "repo")
        env = r.env()
        t0 = time.perf_counter()
        tagged(r.root, env, args.tags)
        print(f"{args.tags} commits and annotated tags in {time.perf_counter() - t0:.1f} s")
        plain = commits(r.root, env, args.commits, None)
        install_hooks(r.root)
        bare = commits(r.root, env, args.commits, None)
        with open_vault(r.root) as v:
            v.lessons.scan()
        vault = commits(r.root, env, args.commits, r.root / ".synapse" / "hook.log")
        for name, times in (("no hook", plain), ("hook, no vault", bare), ("hook, vault", vault)):
            print(f"git commit, {name}: median {statistics.median(times):.0f} ms "
                  f"({', '.join(f'{t:.0f}' for t in times)})")


if __name__ == "__main__":
    main()
