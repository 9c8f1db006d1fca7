"""Review 78 F5: the package said MIT and shipped no licence; the sdist had the tests without their conftest.py,
tests/team/ or tests/browser/. (Built and listed by hand: ``python -m build``; this guards the inputs.)"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_licence_is_shipped_and_the_sdist_holds_the_tests_whole_and_no_dataset() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the synapse_nb authors\n")
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
    assert {"graft tests", "prune datasets", "prune benchmarks", "prune notebooks"} <= set(manifest)
