"""The code-health checks run in the default test run, so CI (`.ci/run`, the README's test command) runs them:
mypy (pinned, configured in pyproject.toml: strict for the core) reports no error, ruff (pinned, the chosen rule
set) reports no finding, and the few ``type: ignore`` comments left each say why. The doctests run beside them
(``--doctest-modules`` over ``synapse_nb`` in pyproject's addopts)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Most ``type: ignore`` comments the package may carry (each names its error code and says why on its line).
MAX_TYPE_IGNORES = 5
_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(.*)$")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def test_mypy_reports_no_error(record_property: Callable[[str, object], None]) -> None:
    proc = _run("mypy", "--no-color-output")
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    record_property("mypy", summary)
    print(f"\nmypy: {summary}")
    assert proc.returncode == 0, f"mypy found errors:\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"
    assert summary.startswith("Success: no issues found"), summary


def test_ruff_reports_no_finding(record_property: Callable[[str, object], None]) -> None:
    proc = _run("ruff", "check", "--no-cache", "synapse_nb", "tests", "benchmarks")
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    record_property("ruff", summary)
    print(f"\nruff: {summary}")
    assert proc.returncode == 0, f"ruff found problems:\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"


def test_type_ignores_are_few_and_each_says_why() -> None:
    found = []
    for path in sorted((ROOT / "synapse_nb").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = _IGNORE.search(line)
            if m:
                found.append((f"{path.relative_to(ROOT)}:{n}", m.group(1), m.group(2)))
    assert len(found) <= MAX_TYPE_IGNORES, "too many type: ignore comments:\n" + "\n".join(f for f, *_ in found)
    unexplained = [f for f, code, why in found if not code or not re.search(r"\w{3}", why)]
    assert not unexplained, "each type: ignore names its code and says why on its line:\n" + "\n".join(unexplained)
