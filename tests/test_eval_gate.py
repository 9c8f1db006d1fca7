"""synapse_nb.eval with the real gate Router, the LoCoMo loader, and dataset packaging/licensing guards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.errors import DatasetError
from synapse_nb.eval import evaluate_router, load_dataset, load_locomo, normalize_evidence, run_gate_eval
from synapse_nb.eval.locomo import CATEGORIES
from synapse_nb.gate import DEFAULTS, Router

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO / "datasets" / "locomo" / "locomo10.json"


# ------------------------------------------------------------------------------------ real gate Router


def test_run_gate_eval_on_agent_vault_with_the_real_router() -> None:
    out = run_gate_eval(REPO / "datasets" / "agent_vault", criterion="balanced")
    assert json.loads(json.dumps(out)) == out  # JSON-safe as is
    for key in ("in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1", "accuracy"):
        assert 0.0 <= out[key] <= 1.0, key
    assert out["calibrated"] and out["criterion"] == "balanced"
    # the notebook's setting: fitted on train + the 20 hubs' 3 examples, the triggers as route descriptions
    assert (out["n_train"], out["n_val"], out["n_test"], out["n_oos_test"]) == (280, 83, 135, 35)
    assert out["config"]["with_descriptions"] is True
    assert isinstance(out["thresholds"]["global"], float)
    assert out["config"]["router"] == "Router" and out["queries_per_second"] > 0


def test_real_router_evaluation_is_deterministic_and_matches_its_own_metrics() -> None:
    data = load_dataset("agent_vault")
    a = evaluate_router(Router(method="knn"), data, n_boot=100)
    b = evaluate_router(Router(method="knn"), data, n_boot=100)
    da, db = a.to_dict(), b.to_dict()
    da.pop("queries_per_second"), db.pop("queries_per_second"), da.pop("fit_seconds"), db.pop("fit_seconds")
    assert da == db
    router = Router(method="knn").fit(*data.split("train"))
    router.calibrate(*data.split("val"))  # the same default criterion as evaluate_router's
    assert a.criterion == router.criterion_ == DEFAULTS.criterion
    assert a.y_pred == tuple(router.predict(data.split("test")[0]))
    own = router.evaluate(*data.split("test"))
    assert own.accuracy == pytest.approx(a.metrics.accuracy)


def test_with_descriptions_adds_hub_triggers_and_examples_to_train_only() -> None:
    data = load_dataset("agent_vault")
    assert len(data.route_examples) == 20 and all(len(v) == 3 for v in data.route_examples.values())
    plain = evaluate_router(Router(method="centroid"), data, n_boot=50)
    hubs = evaluate_router(Router(method="centroid"), data, with_descriptions=True, n_boot=50)
    # Router.fit takes the 20 triggers as descriptions=, the 3 examples per hub as rows
    assert hubs.n_train == plain.n_train + 20 * 3 and hubs.n_test == plain.n_test == 135
    assert hubs.config["with_descriptions"] and not plain.config["with_descriptions"]


def test_run_gate_eval_on_a_plain_file_without_oos(tmp_path: Path) -> None:
    rows = ["text,label,split"]
    for i, (word, route) in enumerate([("deploy", "ops"), ("pytest", "qa")] * 6):
        rows.append(f"{word} thing number {i},{route},{'train' if i < 8 else 'test'}")
    path = tmp_path / "tiny.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = run_gate_eval(path, method="centroid")
    assert out["oos_recall"] is None and out["oos_f1"] is None and out["oos_precision"] is None
    assert not out["calibrated"] and out["criterion"] is None
    assert out["config"]["calibration_skipped"] == out["notes"][0]
    assert out["notes"] == [("no validation split, and no out-of-scope rows in train to carve one from: "
                             "thresholds not calibrated")]
    assert out["in_scope_accuracy"] == 1.0 and out["n_test"] == 4


# ------------------------------------------------------------------------------------------- LoCoMo


def test_load_locomo_counts_match_the_dataset_readme() -> None:
    convs = load_locomo(LOCOMO)
    assert len(convs) == 10
    assert sum(len(c.turns) for c in convs) == 5_882
    assert sum(len(c.session_dates) for c in convs) == 272
    questions = [q for c in convs for q in c.questions]
    assert len(questions) == 1_986
    assert sum(1 for q in questions if q.evidence) == 1_982
    assert {q.category for q in questions} == set(CATEGORIES)
    assert sum(1 for q in questions if q.category == 5) == 446
    for c in convs:
        ids = {t.dia_id for t in c.turns}
        assert len(ids) == len(c.turns)
        assert all(e in ids for q in c.questions for e in q.evidence)
    first = convs[0]
    assert first.sample_id == "conv-26" and first.turns[0].dia_id == "D1:1"
    assert first.turns[0].session_date == "1:56 pm on 8 May, 2023"
    assert first.turns[0].document().startswith("[1:56 pm on 8 May, 2023] Caroline: ")
    assert first.questions[0].evidence == ("D1:3",) and first.questions[0].category_name == "temporal"


def test_normalize_evidence_cleans_the_known_oddities() -> None:
    assert normalize_evidence(["D9:1 D4:4 D4:6"]) == ("D9:1", "D4:4", "D4:6")
    assert normalize_evidence(["D:11:26", "D30:05", "D4:5", "D4:5", "D"]) == ("D11:26", "D30:5", "D4:5")


def test_load_locomo_errors(tmp_path: Path) -> None:
    bad = tmp_path / "l.json"
    bad.write_text('[{"sample_id": "x"}]', encoding="utf-8")
    with pytest.raises(DatasetError, match="sample 1: expected keys"):
        load_locomo(bad)
    with pytest.raises(DatasetError, match="no such file"):
        load_locomo(tmp_path / "missing.json")


# --------------------------------------------------------------------------------- licensing / packaging


def test_datasets_are_unchanged_copies_with_their_licenses() -> None:
    import hashlib

    digest = hashlib.sha256(LOCOMO.read_bytes()).hexdigest()
    assert digest == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    assert "Attribution-NonCommercial 4.0" in (REPO / "datasets/locomo/LICENSE.txt").read_text(encoding="utf-8")
    assert "Attribution 3.0" in (REPO / "datasets/clinc150/LICENSE").read_text(encoding="utf-8")


def test_no_dataset_is_inside_the_package_and_discovery_excludes_datasets() -> None:
    """The wheel and sdist only carry `synapse_nb*` packages: no dataset file may live under synapse_nb/."""
    pkg = REPO / "synapse_nb"
    data_suffixes = {".json", ".jsonl", ".csv", ".tsv", ".parquet", ".pq", ".ndjson"}
    offenders = sorted(
        str(p.relative_to(REPO)) for p in pkg.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
        and (p.suffix.lower() in data_suffixes or p.stat().st_size > 1_000_000
             or (p.suffix != ".py" and ("locomo" in p.name.lower() or "clinc" in p.name.lower())))
    )
    assert offenders == []
    code = (
        "import setuptools, tomllib, json;"
        "cfg = tomllib.load(open('pyproject.toml', 'rb'))['tool']['setuptools']['packages']['find'];"
        "print(json.dumps(sorted(setuptools.find_packages(include=cfg['include']))))"
    )
    found = json.loads(subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                                      check=True).stdout)
    assert found and all(name == "synapse_nb" or name.startswith("synapse_nb.") for name in found)
    assert not any("dataset" in name for name in found)


def test_eval_routing_keeps_its_public_names_after_the_split() -> None:
    """Issue 27: the evaluation moved to eval/router_eval.py; every public name still imports from eval/routing.py."""
    from synapse_nb.eval import router_eval, routing

    for name in ("CRITERIA", "RouterEvaluation", "RouterLike", "evaluate_router"):
        assert getattr(routing, name) is getattr(router_eval, name), name
    assert set(router_eval.__all__) < set(routing.__all__) and "run_gate_eval" in routing.__all__
    from synapse_nb.eval.routing import RouterEvaluation, evaluate_router, run_gate_eval  # the old import path

    assert callable(evaluate_router) and callable(run_gate_eval) and RouterEvaluation.__name__ == "RouterEvaluation"
