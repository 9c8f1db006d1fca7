"""One set of router defaults: the API, the CLI and the notebooks' headline row read the same record and agree."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

from synapse_nb.eval import evaluate_router, load_dataset, run_gate_eval
from synapse_nb.eval.compare import compare_routers
from synapse_nb.eval.variants import gate_variants
from synapse_nb.gate import CRITERIA, DEFAULT_CRITERION, DEFAULTS, Router
from synapse_nb.gate.defaults import RouterDefaults

REPO = Path(__file__).resolve().parents[1]
HEADLINE = re.compile(r"^headline default \(criterion (\w+)\): accuracy (\d+\.\d) \[(\d+\.\d), (\d+\.\d)\] "
                      r"in-scope (\d+\.\d) oos recall (\d+\.\d)", re.MULTILINE)


class _Named:
    dimension, fingerprint = 2, "v1"

    def __init__(self, name: str) -> None:
        self.name = name

    def embed(self, texts, *, query=False):
        raise AssertionError("not called")


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def test_every_entry_point_takes_its_defaults_from_the_one_record():
    assert RouterDefaults() == DEFAULTS and DEFAULT_CRITERION == DEFAULTS.criterion in CRITERIA
    for fn in (Router.calibrate, Router.fit_calibrated, evaluate_router, run_gate_eval, gate_variants):
        assert _default(fn, "criterion") == DEFAULTS.criterion, fn.__qualname__
    for fn in (Router.calibrate, Router.fit_calibrated, evaluate_router, run_gate_eval):
        assert _default(fn, "per_route") == DEFAULTS.per_route, fn.__qualname__
    assert _default(Router.fit_calibrated, "folds") == DEFAULTS.folds
    r = Router()
    for key, value in DEFAULTS.router_kwargs().items():
        assert getattr(r, key) == value, key
    assert r.embedder is None and DEFAULTS.embedder is None and _default(run_gate_eval, "embedder") is None
    assert Router(embedder=_Named("e5-small")).semantic_weight == DEFAULTS.weight_for("e5-small") == 2.0
    assert Router(embedder=_Named("wordllama")).semantic_weight == DEFAULTS.weight_for("wordllama") == 1.0
    assert Router(embedder=_Named("mine")).semantic_weight == DEFAULTS.semantic_weight
    assert Router(embedder=_Named("e5-small"), semantic_weight=0.5).semantic_weight == 0.5
    from synapse_nb.cli.gate import gate_eval

    for option, key in (("criterion", "criterion"), ("method", "method"), ("per_route", "per_route"),
                        ("embedder", "embedder")):
        assert _default(gate_eval, option) == getattr(DEFAULTS, key), option


def _cli(*args: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "synapse_nb", "gate", "eval", *args, "--json"], cwd=REPO,
                         capture_output=True, text=True, timeout=600, check=True)
    out: dict = json.loads(run.stdout)
    return out


def _notebook_headline(name: str) -> tuple[str, ...]:
    nb = json.loads((REPO / "notebooks" / name).read_text(encoding="utf-8"))
    text = "\n".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code"
                     for o in c.get("outputs", []))
    found = HEADLINE.findall(text)
    assert len(found) == 1, f"{name}: one headline default row expected, found {found}"
    return found[0]


def _row(criterion: str, acc: float, lo: float, hi: float, inn: float, oos: float) -> tuple[str, ...]:
    return (criterion, *(f"{100 * v:.1f}" for v in (acc, lo, hi, inn, oos)))


def test_cli_api_and_hub_notebook_give_the_same_default_figures():
    cli = _cli("datasets/agent_vault")
    api = run_gate_eval("datasets/agent_vault")
    res = evaluate_router(Router(), load_dataset("agent_vault"), with_descriptions=True)
    table = compare_routers("agent_vault", {"default": {"router": Router, "with_descriptions": True}})
    for out in (cli, api):
        assert out["criterion"] == DEFAULTS.criterion
        assert (out["accuracy"], out["in_scope_accuracy"], out["oos_recall"]) == (
            res.metrics.accuracy, res.metrics.in_scope_accuracy, res.metrics.oos_recall)
        assert out["ci"]["accuracy"] == list(res.ci["accuracy"])
    assert table["accuracy"][0] == res.metrics.accuracy
    expected = _row(DEFAULTS.criterion, res.metrics.accuracy, *res.ci["accuracy"], res.metrics.in_scope_accuracy,
                    res.metrics.oos_recall)  # type: ignore[arg-type]
    assert _notebook_headline("gate_hub_routing.ipynb") == expected


def test_cli_on_clinc150_gives_the_clinc_notebook_headline():
    """nbval re-runs the notebook's headline cell on every test run; here the CLI must print the same figures."""
    cli = _cli("datasets/clinc150")
    assert cli["criterion"] == DEFAULTS.criterion and cli["n_test"] == 5500
    assert _notebook_headline("gate_clinc150.ipynb") == _row(
        cli["criterion"], cli["accuracy"], *cli["ci"]["accuracy"], cli["in_scope_accuracy"], cli["oos_recall"])
