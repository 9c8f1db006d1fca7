"""README's test command and .ci/run stay the same command (CI runs exactly what a newcomer runs)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    test_cmd = next(c for c in commands if "python -m pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == test_cmd
    assert '".[test,browser]"' in test_cmd  # the browser suite's extra is part of the one command
    # the browser suite's system packages come first, from Debian, never from `playwright install`
    body = "\n".join(ci)
    assert "apt-get install" in body and "chromium" in body and "playwright install" not in body.replace(
        "never `playwright install`", "")
