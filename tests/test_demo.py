"""``synapse-nb demo``: the newcomer's tour runs end to end in a throwaway vault and leaves nothing behind."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.demo import run_demo


def test_demo_tour_goes_through_every_step(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SYNAPSE_HOME", str(tmp_path / "must-not-be-used"))
    out = io.StringIO()
    summary = run_demo(file=out)
    text = out.getvalue()
    for n in range(1, 6):
        assert f"\n{n}. " in text
    for key in ("checkpoint", "decision", "memory", "lesson"):
        assert summary[key] in text
    assert "APPROVED SYSTEM MEMORY" in summary["recall"] and "idempotency key" in summary["recall"]
    assert "run_migrations" in summary["recall"]
    assert "in place, same id" in text
    assert "its history keeps every version (2:" in text and "v1 said 'alembic upgrade head'" in text
    assert not Path(summary["vault"]).exists()  # the throwaway folder is gone
    assert not (tmp_path / "must-not-be-used").exists()
    assert "\033[" not in text  # no colour codes when not a terminal


def test_demo_keep(tmp_path: Path) -> None:
    out = io.StringIO()
    summary = run_demo(keep=True, file=out)
    vault = Path(summary["vault"])
    try:
        assert vault.is_dir() and "kept the demo vault" in out.getvalue()
    finally:
        import shutil

        shutil.rmtree(vault.parent.parent, ignore_errors=True)


def test_demo_command_in_a_subprocess() -> None:
    res = subprocess.run([sys.executable, "-m", "synapse_nb", "demo"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "synapse-nb demo" in res.stdout and "APPROVED SYSTEM MEMORY" in res.stdout
