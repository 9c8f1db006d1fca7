"""The example notebooks are committed executed, stable under the sanitize file, and widget cells are tagged.

The notebooks themselves run under nbval in CI:
``pytest --nbval notebooks/ --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg``
(the slow test below does the same from here).
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = ["quickstart", "lessons_from_reverts", "memory_model_tour"]
SANITIZE = NB_DIR / "nbval_sanitize.cfg"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
VOLATILE = [
    re.compile(r"\b(mem|ckp|dec|les|epi|note)_[0-9a-f]{12}\b"),
    re.compile(r"/tmp/"),
    re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"),
    re.compile(r"\b20\d{2}-\d{2}-\d{2}\b"),  # a record's date (recall lines) changes with the day it ran
    re.compile(r"\bnb-[0-9a-f]{12}\b"),
    re.compile(r"0x[0-9a-f]{6,}"),
]


def _sanitizers() -> list[tuple[re.Pattern[str], str]]:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(SANITIZE, encoding="utf-8")
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def _texts(cell: nbformat.NotebookNode) -> list[str]:
    out = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            out.append(o.text)
        elif "data" in o:
            out += [v for k, v in o.data.items() if k.startswith("text/") and isinstance(v, str)]
    return out


@pytest.fixture(params=NOTEBOOKS)
def nb(request: pytest.FixtureRequest) -> nbformat.NotebookNode:
    node = nbformat.read(NB_DIR / f"{request.param}.ipynb", as_version=4)
    node.metadata["_name"] = request.param
    return node


def test_valid_and_on_the_python3_kernel(nb: nbformat.NotebookNode) -> None:
    name = nb.metadata.pop("_name")
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3", name
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


def test_committed_executed_in_order_without_errors(nb: nbformat.NotebookNode) -> None:
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    for c in code:
        assert not [o for o in c.outputs if o.output_type == "error"], c.source
        assert not [o for o in c.outputs if o.output_type == "stream" and o.name == "stderr"], c.source


def test_widget_cells_are_tagged_and_followed_by_a_checked_cell(nb: nbformat.NotebookNode) -> None:
    cells = nb.cells
    widget_cells = [i for i, c in enumerate(cells) if c.cell_type == "code"
                    and any(WIDGET_MIME in o.get("data", {}) for o in c.outputs)]
    for i in widget_cells:
        assert "nbval-ignore-output" in cells[i].metadata.get("tags", []), cells[i].source
        after = [c for c in cells[i + 1:] if c.cell_type == "code"]
        assert after and any(o.output_type == "stream" for o in after[0].outputs)  # values printed, checked
    for c in cells:  # nothing else is ignored wholesale
        if "nbval-ignore-output" in c.metadata.get("tags", []):
            assert cells.index(c) in widget_cells


def test_sanitize_file_covers_every_volatile_value(nb: nbformat.NotebookNode) -> None:
    subs = _sanitizers()
    assert [p.pattern for p, _ in subs][:2] == [r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?",
                                                r"\b(mem|ckp|dec|les|epi|note)_[0-9a-f]{12}\b"]
    for c in nb.cells:
        if "nbval-ignore-output" in c.metadata.get("tags", []):
            continue
        for text in _texts(c):
            for pattern, repl in subs:
                text = pattern.sub(repl, text)
            for v in VOLATILE:
                assert not v.search(text), (v.pattern, text[:200])
            assert str(ROOT) not in text  # nothing depends on where the repository is checked out


def test_the_notebooks_show_what_they_promise() -> None:
    def all_text(name: str) -> str:
        node = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
        return "\n".join(t for c in node.cells if c.cell_type == "code" for t in _texts(c))

    quick = all_text("quickstart")
    assert "False ['memory', 'checkpoint', 'decision']" in quick  # the first recall finds all three (rank order)
    assert "True\n" in quick and "nothing new" in quick           # the second one: nothing new
    assert "Doing: Cleaning the 2025 survey wave" in quick         # restored from a fresh handle
    assert "already ran at" in quick
    lessons = all_text("lessons_from_reverts")
    assert "1 new lesson(s); 0 on a second scan" in lessons
    assert "APPROVED SYSTEM MEMORY — CRITICAL: ADHERE" in lessons
    assert "approved | Keep the cache in process: offline runs have no Redis. | 0 left to review" in lessons
    tour = all_text("memory_model_tour")
    assert tour.count(": refused") == 4 and "allowed?!" not in tour
    assert "overwrite the user's memory: still 'v1.5 deployed' | pending revisions: [('agent', 'pending'" in tour
    assert "- [agent · unverified] [normal] knowledge/cache_ttl" in tour and "pruned: 1 expired memory deleted" in tour


@pytest.mark.slow
def test_notebooks_pass_nbval() -> None:
    """The three notebooks owned here (other notebooks in the folder have their own checks)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", *(str(NB_DIR / f"{n}.ipynb") for n in NOTEBOOKS),
         "--nbval-current-env",
         "--nbval-sanitize-with", str(SANITIZE), "-p", "no:cacheprovider", "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
