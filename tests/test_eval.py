"""synapse_nb.eval: loader, metrics, router evaluation (with a tiny deterministic router), results files."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import synapse_nb.eval as ev
from synapse_nb.errors import DatasetError, NotFoundError, ValidationError
from synapse_nb.eval import (
    LabelledData,
    bootstrap_ci,
    evaluate_router,
    load_dataset,
    load_labelled,
    load_results,
    mrr,
    ndcg_at_k,
    recall_at_k,
    routing_metrics,
    save_results,
    threshold_sweep,
)

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------- toy router


class WordRouter:
    """Deterministic toy router: score = share of the query's words seen in a route's training texts."""

    def __init__(self) -> None:
        self.routes_: list[str] = []
        self.threshold_: float = -math.inf
        self.route_thresholds_: dict[str, float] = {}
        self.criterion_: str | None = None
        self.calibrate_calls: list[tuple[int, str, bool]] = []

    def fit(self, texts: Sequence[str], labels: Sequence[str | None]) -> WordRouter:
        vocab: dict[str, set[str]] = {}
        for t, y in zip(texts, labels, strict=True):
            if y not in (None, "", "oos"):
                vocab.setdefault(y, set()).update(t.lower().split())
        self.routes_ = sorted(vocab)
        self._vocab = vocab
        return self

    def decision_scores(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(self.routes_)))
        for i, t in enumerate(texts):
            words = t.lower().split()
            for j, r in enumerate(self.routes_):
                out[i, j] = sum(w in self._vocab[r] for w in words) / max(len(words), 1)
        return out

    def predict(self, texts: Sequence[str]) -> list[str | None]:
        s = self.decision_scores(texts)
        best = s.argmax(1)
        return [self.routes_[b] if s[i, b] >= self.threshold_ else None for i, b in enumerate(best)]

    def calibrate(self, texts, labels, criterion="accuracy", per_route=False):
        self.calibrate_calls.append((len(texts), criterion, per_route))
        best_t, best_acc = 0.0, -1.0
        for t in np.linspace(0, 1, 21):
            self.threshold_ = float(t)
            acc = routing_metrics(labels, self.predict(texts)).accuracy
            if acc > best_acc:
                best_t, best_acc = float(t), acc
        self.threshold_ = best_t
        self.criterion_ = criterion
        return self


def _toy_data(val_oos: bool = True) -> LabelledData:
    rows = [
        ("run the unit tests", "testing", "train"),
        ("pytest fixture setup", "testing", "train"),
        ("deploy to production now", "deploy", "train"),
        ("rollback the deploy", "deploy", "train"),
        ("tell me a joke", None, "train"),
        ("unit tests are failing", "testing", "val"),
        ("production deploy stuck", "deploy", "val"),
        ("what is the weather", None if val_oos else "deploy", "val"),
        ("run pytest again", "testing", "test"),
        ("deploy production please", "deploy", "test"),
        ("banana bread recipe", None, "test"),
        ("a joke about cats", None, "test"),
    ]
    t, y, s = zip(*rows, strict=True)
    return LabelledData(t, y, s, source="toy", name="toy")


# ---------------------------------------------------------------------------------------------- loader


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


def test_csv_jsonl_parquet_give_the_same_data(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "text": ["run tests", "deploy it", "hello there", "rollback", "joke please"],
            "label": ["testing", "deploy", "oos", "deploy", None],
            "split": ["train", "train", "val", "test", "test"],
        }
    )
    csv = tmp_path / "d.csv"
    frame.to_csv(csv, index=False)
    jl = tmp_path / "d.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in frame.to_dict("records")) + "\n", encoding="utf-8")
    pq = tmp_path / "d.parquet"
    frame.to_parquet(pq)
    loaded = [load_labelled(p) for p in (csv, jl, pq)]
    for d in loaded:
        assert d.labels == ("testing", "deploy", None, "deploy", None)
        assert d.splits == ("train", "val", "test")
        assert d.routes == ("deploy", "testing")
        assert d.split("test") == (["rollback", "joke please"], ["deploy", None])
    assert loaded[0].texts == loaded[1].texts == loaded[2].texts


@pytest.mark.parametrize("raw", ["", "oos", "OOS", "None", "null", " none "])
def test_oos_label_spellings_become_none(tmp_path: Path, raw: str) -> None:
    p = _write(tmp_path, "d.csv", f"text,label\nhello,{raw}\nrun tests,testing\n")
    assert load_labelled(p).labels == (None, "testing")


def test_no_split_column_means_no_splits(tmp_path: Path) -> None:
    d = load_labelled(_write(tmp_path, "d.csv", "text,label\na,x\nb,y\n"))
    assert d.splits == ()
    assert d.split() == (["a", "b"], ["x", "y"])
    with pytest.raises(DatasetError, match="no split column"):
        d.split("train")


def test_custom_column_names(tmp_path: Path) -> None:
    d = load_labelled(_write(tmp_path, "d.csv", "q,intent,part\na,x,train\nb,,test\n"),
                      text_col="q", label_col="intent", split_col="part")
    assert d.split("test") == (["b"], [None])


def test_to_pandas_and_polars(tmp_path: Path) -> None:
    d = _toy_data()
    pdf, pldf = d.to_pandas(), d.to_polars()
    assert list(pdf.columns) == ["text", "label", "split"] == pldf.columns
    assert pdf["label"].isna().sum() == d.n_oos == pldf["label"].null_count() == 4
    assert pldf.filter(pl.col("split") == "val").height == 3


@pytest.mark.parametrize(
    ("name", "content", "pattern"),
    [
        ("d.csv", "text,lbl\na,x\n",
         r"d\.csv: no label column found; looked for label, intent, category.*found: text, lbl; pass --label-col"),
        ("d.csv", "text,label\na,x\n ,y\n", r"d\.csv: row 3: empty 'text'"),
        ("d.csv", "text,label,split\na,x,train\nb,y,\n", r"row 3: empty 'split'"),
        ("d.csv", "text,label\na,x\nb,x\n", r"one class \('x'\)"),
        ("d.csv", "text,label\na,\nb,oos\n", "every label is out of scope"),
        ("d.jsonl", '{"text": "a", "label": "x"}\n\n{"text": "b", "label": "y"\n', r"d\.jsonl: line 3: not valid JSON"),
        ("d.jsonl", '{"text": "a", "label": "x"}\n{"text": 3, "label": "y"}\n', r"line 2: 'text' is int"),
        ("d.xlsx", "text,label\n", r"unknown extension '\.xlsx'; accepted: CSV/TSV"),
        ("d.csv", "", "the file is empty"),
    ],
)
def test_bad_input_names_file_row_and_problem(tmp_path: Path, name: str, content: str, pattern: str) -> None:
    p = _write(tmp_path, name, content)
    with pytest.raises(DatasetError, match=pattern):
        load_labelled(p)


def test_non_utf8_bytes_report_the_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "d.csv", b"text,label\nabc,x\ncaf\xe9,y\n")
    with pytest.raises(DatasetError, match=r"d\.csv: line 3, column 4: byte 0xe9 \(file offset 20\) is not valid "
                       r"utf-8; pass --encoding .* or --errors replace"):
        load_labelled(p)
    assert load_labelled(p, encoding="latin-1").texts == ("abc", "café")
    assert load_labelled(p, errors="replace").texts == ("abc", "caf\ufffd")


def test_unknown_split_lists_known_ones() -> None:
    with pytest.raises(DatasetError, match="unknown split 'dev'; known splits: train, val, test"):
        _toy_data().split("dev")


def test_missing_file_and_unknown_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_labelled(tmp_path / "nope.csv")
    with pytest.raises(DatasetError, match="no such file or dataset; accepted: agent_vault"):
        load_dataset("nope_dataset")
    with pytest.raises(DatasetError, match="not a dataset folder; accepted: split files named train"):
        load_dataset(tmp_path)


# -------------------------------------------------------------------------------------------- bundled


def test_agent_vault_shape_and_split_is_reproducible() -> None:
    d = load_dataset("agent_vault")
    assert d.name == "agent_vault" and d.splits == ("train", "val", "test")
    assert len(d) >= 400 and d.n_oos >= 100 and len(d.routes) == 20
    assert sorted(d.route_descriptions) == list(d.routes)
    assert len(set(d.texts)) == len(d.texts)  # no duplicate queries
    for split in d.splits:
        _, labels = d.split(split)
        assert None in labels and set(d.routes) <= set(labels)  # every stratum in every split
    assert len(d.split("train")[0]) == 220 and len(d.split("val")[0]) == 83 and len(d.split("test")[0]) == 135
    import runpy

    mod = runpy.run_path(str(REPO / "datasets/agent_vault/make_splits.py"), run_name="not_main")
    assert mod["render"]() == (REPO / "datasets/agent_vault/queries.csv").read_text(encoding="utf-8")


def test_agent_vault_hub_triggers() -> None:
    for line in (REPO / "datasets/agent_vault/hubs.jsonl").read_text(encoding="utf-8").splitlines():
        hub = json.loads(line)
        assert 25 <= len(hub["trigger"].split()) <= 40, hub["name"]
        assert len(hub["examples"]) >= 3


def test_clinc150_full_and_oos_plus() -> None:
    full = load_dataset("clinc150")
    assert full.splits == ("train", "val", "test") and len(full.routes) == 150
    sizes = {s: len(full.split(s)[0]) for s in full.splits}
    assert sizes == {"train": 15_100, "val": 3_100, "test": 5_500}
    assert sum(y is None for y in full.split("test")[1]) == 1_000
    plus = load_dataset(REPO / "datasets/clinc150", variant="oos_plus")
    assert sum(y is None for y in plus.split("train")[1]) == 250
    assert plus.split("test") == full.split("test")
    assert load_dataset("clinc150_oos_plus").name == "clinc150_oos_plus"
    with pytest.raises(DatasetError, match="accepted: full, oos_plus"):
        load_dataset("clinc150", variant="small")


# -------------------------------------------------------------------------------------------- metrics


def test_routing_metrics_by_hand() -> None:
    y_true = ["a", "a", "b", None, None, None]
    y_pred = ["a", "b", "b", None, "a", None]
    m = routing_metrics(y_true, y_pred)
    assert (m.n, m.n_in_scope, m.n_oos) == (6, 3, 3)
    assert m.in_scope_accuracy == pytest.approx(2 / 3)
    assert m.oos_recall == pytest.approx(2 / 3)
    assert m.oos_precision == pytest.approx(1.0)
    assert m.oos_f1 == pytest.approx(0.8)
    assert m.accuracy == pytest.approx(4 / 6)
    per = {r["route"]: r for r in m.per_route.iter_rows(named=True)}
    assert per["a"]["precision"] == pytest.approx(0.5) and per["a"]["recall"] == pytest.approx(0.5)
    assert per["b"]["precision"] == pytest.approx(0.5) and per["b"]["recall"] == pytest.approx(1.0)
    assert m.confusion.columns == ["true", "a", "b", "oos"]
    assert m.confusion.filter(pl.col("true") == "oos").row(0) == ("oos", 1, 0, 2)
    assert m.confusion_pandas().loc["a", "b"] == 1
    assert "oos_recall=0.667" in repr(m) and "<table>" in m._repr_html_()


def test_routing_metrics_without_oos_rows_gives_none_not_zero() -> None:
    m = routing_metrics(["a", "b"], ["a", None])
    assert m.oos_recall is None and m.oos_precision is None and m.oos_f1 is None
    assert m.in_scope_accuracy == 0.5 and m.accuracy == 0.5
    assert json.loads(json.dumps(m.to_dict()))["oos_f1"] is None


def test_routing_metrics_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValidationError, match="same length"):
        routing_metrics(["a"], ["a", "b"])


def test_bootstrap_ci_is_deterministic_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(5)
    y_true = [str(v) if v < 4 else None for v in rng.integers(0, 5, 300)]
    y_pred = [v if rng.random() < 0.8 else "0" for v in y_true]
    for name in ("in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1", "accuracy"):
        lo, hi = bootstrap_ci(y_true, y_pred, name, n_boot=300, seed=1)
        assert (lo, hi) == bootstrap_ci(y_true, y_pred, name, n_boot=300, seed=1)
        point = getattr(routing_metrics(y_true, y_pred), name)
        assert 0.0 <= lo <= point <= hi <= 1.0, name
    assert bootstrap_ci(y_true, y_pred, "accuracy", n_boot=300, seed=2) != bootstrap_ci(
        y_true, y_pred, "accuracy", n_boot=300, seed=1
    )
    # a callable metric uses the same resamples as the vectorised name
    def acc(t, p):
        return routing_metrics(t, p).accuracy

    assert bootstrap_ci(y_true, y_pred, acc, n_boot=50, seed=3) == pytest.approx(
        bootstrap_ci(y_true, y_pred, "accuracy", n_boot=50, seed=3)
    )
    assert bootstrap_ci(["a", "b"], ["a", "a"], "oos_recall", n_boot=20) == (None, None)
    with pytest.raises(ValidationError, match="unknown metric"):
        bootstrap_ci(y_true, y_pred, "f2")


def test_retrieval_metrics() -> None:
    ranked = ["d4", "d1", "d7", "d2", "d1"]
    assert recall_at_k(ranked, {"d1", "d2"}, 1) == 0.0
    assert recall_at_k(ranked, {"d1", "d2"}, 2) == 0.5
    assert recall_at_k(ranked, {"d1", "d2"}, 10) == 1.0
    assert ndcg_at_k(["d1"], {"d1"}, 10) == 1.0
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(ranked, {"d1", "d2"}, 10) == pytest.approx(expected)
    assert ndcg_at_k(["x", "y"], {"d1"}, 2) == 0.0
    assert mrr(ranked, {"d7"}) == pytest.approx(1 / 3)
    assert mrr(ranked, {"d7"}, k=2) == 0.0 and mrr(ranked, {"zz"}) == 0.0
    assert recall_at_k(ranked, set(), 5) is None and ndcg_at_k(ranked, [], 5) is None and mrr(ranked, []) is None
    with pytest.raises(ValidationError, match="k=0"):
        recall_at_k(ranked, {"d1"}, 0)


# -------------------------------------------------------------------------------------- evaluate_router


def test_evaluate_router_fits_train_calibrates_val_scores_test() -> None:
    router = WordRouter()
    result = evaluate_router(router, _toy_data(), criterion="balanced", per_route=True, n_boot=200)
    assert router.calibrate_calls == [(3, "balanced", True)]  # the val split only
    assert result.calibrated and result.criterion == "balanced"
    assert (result.n_train, result.n_val, result.n_test) == (5, 3, 4)
    assert result.thresholds["global"] == router.threshold_
    assert result.y_pred == tuple(router.predict(_toy_data().split("test")[0]))
    d = json.loads(json.dumps(result.to_dict()))
    for key in ("in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1", "accuracy", "criterion",
                "thresholds", "n_train", "n_test", "queries_per_second"):
        assert key in d
    for key in ("in_scope_accuracy", "oos_recall", "accuracy"):
        assert 0.0 <= d[key] <= 1.0
        lo, hi = d["ci"][key]
        assert lo <= d[key] <= hi
    assert d["queries_per_second"] > 0 and d["config"]["dataset"] == "toy"
    text = repr(result)
    assert "oos_recall" in text and "balanced" in text and "<table>" in result._repr_html_()


def test_evaluate_router_skips_calibration_without_val_oos() -> None:
    router = WordRouter()
    result = evaluate_router(router, _toy_data(val_oos=False), n_boot=50)
    assert router.calibrate_calls == [] and not result.calibrated and result.criterion is None
    assert result.to_dict()["config"]["calibration_skipped"] == "split 'val' has no out-of-scope rows"
    assert result.to_dict()["thresholds"]["global"] is None  # -inf is not JSON: null
    r2 = WordRouter()
    assert not evaluate_router(r2, _toy_data(), calibrate=False, n_boot=50).calibrated and r2.calibrate_calls == []


def test_evaluate_router_errors() -> None:
    with pytest.raises(ValidationError, match="accepted: accuracy, balanced"):
        evaluate_router(WordRouter(), _toy_data(), criterion="f1")
    with pytest.raises(DatasetError, match="no test split 'holdout'; splits found: train, val, test"):
        evaluate_router(WordRouter(), _toy_data(), test="holdout")
    flat = LabelledData(("a", "b"), ("x", None))
    with pytest.raises(DatasetError, match="has no split column"):
        evaluate_router(WordRouter(), flat)


def test_threshold_sweep_traces_the_trade_off() -> None:
    data = _toy_data()
    router = WordRouter().fit(*data.split("train"))
    texts, labels = data.split(None)
    curve = threshold_sweep(router, texts, labels)
    assert curve.columns == ["threshold", "in_scope_accuracy", "oos_recall", "oos_precision", "accuracy", "routed"]
    assert curve["threshold"].is_sorted()
    assert curve["oos_recall"].to_list() == sorted(curve["oos_recall"].to_list())  # rises with the threshold
    assert curve["routed"][-1] == 0.0 and curve["oos_recall"][-1] == 1.0
    for t, acc in zip(*[curve[c].to_list() for c in ("threshold", "accuracy")], strict=True):
        router.threshold_ = t
        assert acc == pytest.approx(routing_metrics(labels, router.predict(texts)).accuracy)
    fixed = threshold_sweep(router, texts, labels, thresholds=[0.5, 0.0])
    assert fixed["threshold"].to_list() == [0.0, 0.5]


def test_save_and_load_results_append(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "gate.parquet"
    r1 = evaluate_router(WordRouter(), _toy_data(), n_boot=50)
    r2 = evaluate_router(WordRouter(), _toy_data(val_oos=False), n_boot=50)
    save_results(r1, path, saved_at="2026-01-01T00:00:00Z")
    save_results(r2.to_dict(), path)
    runs = load_results(path)
    assert runs.height == 2
    assert runs["saved_at"][0] == "2026-01-01T00:00:00Z"
    assert runs["calibrated"].to_list() == [True, False]
    assert runs["accuracy"][0] == pytest.approx(r1.metrics.accuracy)
    assert json.loads(runs["config_json"][0])["dataset"] == "toy"
    assert json.loads(runs["thresholds_json"][1])["global"] is None
    assert runs.to_pandas().shape[0] == 2
    with pytest.raises(NotFoundError, match="no results file"):
        load_results(tmp_path / "missing.parquet")


def test_router_protocol_and_public_names() -> None:
    assert isinstance(WordRouter().fit(["a"], ["x"]), ev.RouterLike)
    submodules = {"chatstyle", "compare", "conflicts", "data", "embedding_cache", "locomo", "metrics", "progress",
                  "readers", "results", "retrieval", "router_eval", "routing", "sweep", "variants"}
    public = sorted(n for n in dir(ev) if not n.startswith("_") and n not in {"annotations", *submodules})
    assert sorted(ev.__all__) == ev.__all__ == public
