"""Benchmark the git side of synapse_nb: revert scan (full, incremental) and the hook's cost per commit.

Run:  .venv/bin/python benchmarks/git_scan.py [--commits 10000] [--reverts 100] [--hook-commits 10]

It builds a throw-away repository with ``git fast-import`` (rounds of commits on
``main`` and a few side branches; each round after the first opens with a revert of a
commit from the previous round, so the revert messages carry real shas), then prints:

- the first full scan (``scan_reverts`` over the whole history; target <= 5 s),
- an incremental scan after 100 more commits (``since=`` the previous tips),
- the hook's added wall time per commit: ``git commit`` with the hooks installed and a
  real vault, minus the same without hooks (target <= 100 ms), in background (default)
  and foreground mode, and the time spent inside the hook process (from hook.log).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.gitscope import find_repo, install_hooks, scan_reverts, uninstall_hooks
from synapse_nb.gitscope.testing import git_env

FILES = 50


def _data(text: str) -> str:
    raw = text.encode()
    return f"data {len(raw)}\n{text}\n"


def fast_import_round(
    root: Path, start: int, count: int, parent: str | None, revert_of: tuple[str, int] | None, branch: str
) -> tuple[str, list[str]]:
    """Import ``count`` commits on ``branch``; return the new tip and every commit's sha."""
    lines: list[str] = []
    ts = 1_600_000_000 + start * 60
    for i in range(count):
        n = start + i
        lines.append(f"commit refs/heads/{branch}\nmark :{i + 1}\n")
        lines.append(f"committer Bench <bench@example.com> {ts + i * 60} +0000\n")
        if i == 0 and revert_of is not None:
            sha, k = revert_of
            msg = f'Revert "Change {k}"\n\nThis reverts commit {sha}.\n'
            path, content = f"src/mod{k % FILES}.py", f"# reverted change {k}\n"
        else:
            msg = f"Change {n}\n\nRoutine edit number {n}.\n"
            path, content = f"src/mod{n % FILES}.py", f"# change {n}\n" + "x = 1\n" * (n % 7)
        lines.append(_data(msg))
        if i == 0 and parent is not None:
            lines.append(f"from {parent}\n")
        lines.append(f"M 100644 inline {path}\n{_data(content)}\n")
    marks = root / ".git" / "bench-marks"
    subprocess.run(
        ["git", "fast-import", "--quiet", f"--export-marks={marks}"],
        cwd=root,
        input="".join(lines).encode(),
        env=git_env(),
        check=True,
    )
    by_mark = dict(line.split() for line in marks.read_text().splitlines())
    shas = [by_mark[f":{i + 1}"] for i in range(count)]
    return shas[-1], shas


def build(root: Path, commits: int, reverts: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=git_env())
    per_round = max(2, commits // max(1, reverts))
    tip: str | None = None
    previous: list[str] = []
    made = 0
    for r in range(reverts + 1):
        count = min(per_round, commits - made) if r < reverts else max(1, commits - made)
        if count <= 0:
            break
        revert_of = (previous[len(previous) // 2], made - len(previous) + len(previous) // 2) if previous else None
        tip, previous = fast_import_round(root, made, count, tip, revert_of, "main")
        made += count
        if r % 20 == 10:
            subprocess.run(["git", "branch", "-f", f"release/{r}", tip], cwd=root, check=True, env=git_env())
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True, env=git_env())


def time_commits(root: Path, n: int, pause: float = 0.0) -> list[float]:
    """Wall time of ``n`` commits; ``pause`` between them (not timed) lets detached hooks finish."""
    env = git_env()
    out = []
    for _ in range(n):
        time.sleep(pause)
        t0 = time.perf_counter()
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "bench"], cwd=root, check=True, env=env)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--reverts", type=int, default=100)
    parser.add_argument("--hook-commits", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="synapse-git-bench-") as tmp:
        root = Path(tmp) / "repo"
        t0 = time.perf_counter()
        build(root, args.commits, args.reverts)
        info = find_repo(root)
        assert info is not None
        count = subprocess.run(["git", "rev-list", "--count", "--all"], cwd=root, capture_output=True, text=True,
                               env=git_env(), check=True).stdout.strip()
        print(f"built repo: {count} commits in {time.perf_counter() - t0:.1f} s (git fast-import)")

        t0 = time.perf_counter()
        full = scan_reverts(info, max_commits=args.commits + 1000)
        t_full = time.perf_counter() - t0
        found_subjects = sum(1 for r in full.reverts if r.reverted and r.reverted[0].exists)
        print(f"full scan: {t_full * 1000:.0f} ms for {full.commits_scanned} commits, "
              f"{len(full.reverts)} reverts ({found_subjects} with the reverted commit resolved)  [target <= 5000 ms]")

        tip = subprocess.run(["git", "rev-parse", "main"], cwd=root, capture_output=True, text=True,
                             env=git_env(), check=True).stdout.strip()
        fast_import_round(root, args.commits, 100, tip, (tip, args.commits - 1), "main")
        t0 = time.perf_counter()
        inc = scan_reverts(info, since=full.scanned_tips)
        t_inc = time.perf_counter() - t0
        print(f"incremental scan: {t_inc * 1000:.0f} ms for {inc.commits_scanned} new commits, "
              f"{len(inc.reverts)} revert(s)")

        # hook cost: a real vault, first scan done, then commits with and without the hooks
        from synapse_nb.vault import open_vault

        with open_vault(root) as v:
            v.lessons.scan()
        base = statistics.median(time_commits(root, args.hook_commits))
        print(f"commit without hooks: median {base * 1000:.0f} ms")
        for background in (True, False):
            install_hooks(info, background=background)
            hooked = statistics.median(time_commits(root, args.hook_commits, pause=1.0 if background else 0.0))
            uninstall_hooks(info)
            mode = "background (default)" if background else "foreground"
            print(f"  hooks {mode}: median {hooked * 1000:.0f} ms, added per commit {(hooked - base) * 1000:.0f} ms"
                  "  [target <= 100 ms]")
        time.sleep(3)  # let detached hooks finish before reading the log
        log = (root / ".synapse" / "hook.log").read_text().splitlines()
        inside = sorted(int(line.split()[2].rstrip("ms")) for line in log)
        print(f"hook.log: {len(log)} runs, time inside the hook process: median {statistics.median(inside)} ms; "
              f"last: {log[-1] if log else '(none)'}")


if __name__ == "__main__":
    main()
