"""The Router: fit errors, predict/evaluate, calibration on the data given only, per-route fallback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.gate import Router, RoutingMetrics

TRAIN = [
    ("book a flight to paris", "travel"),
    ("i need a plane ticket to rome", "travel"),
    ("fly me to berlin tomorrow", "travel"),
    ("find flights to tokyo", "travel"),
    ("what's the weather like", "weather"),
    ("will it rain today", "weather"),
    ("is it sunny outside", "weather"),
    ("forecast for the weekend", "weather"),
    ("play some jazz music", "music"),
    ("put on my favourite song", "music"),
    ("start the workout playlist", "music"),
    ("skip this track", "music"),
    ("tell me a joke", None),
    ("who won the game last night", "oos"),
    ("how tall is mount everest", ""),
]
X = [t for t, _ in TRAIN]
Y = [y for _, y in TRAIN]


@pytest.mark.parametrize("method", ["linear", "centroid", "knn"])
def test_fit_predict_each_method(method):
    r = Router(method=method).fit(X, Y)
    assert r.routes_ == ["music", "travel", "weather"]
    assert r.predict(["a flight to paris please", "rain this weekend?", "play a song"]) == [
        "travel",
        "weather",
        "music",
    ]
    s = r.decision_scores(["rain", "paris flight"])
    assert s.shape == (2, 3) and s.dtype == np.float64
    assert r.decision_scores([]).shape == (0, 3)


def test_threshold_turns_low_scores_into_no_route():
    r = Router(method="knn").fit(X, Y)
    assert r.predict(["qwxz zzyq"]) != [None]  # no threshold yet: everything is routed
    r.set_threshold(0.5)
    assert r.predict(["qwxz zzyq"]) == [None]
    assert r.predict(["book a flight to paris"]) == ["travel"]


def test_fit_errors_are_validation_errors_with_clear_messages():
    with pytest.raises(ValidationError, match="differ in length"):
        Router().fit(["a", "b"], ["x"])
    with pytest.raises(ValidationError, match="texts is empty"):
        Router().fit([], [])
    with pytest.raises(ValidationError, match="blank"):
        Router().fit(["hello there", "  "], ["a", "b"])
    with pytest.raises(ValidationError, match="at least two classes"):
        Router(method="linear").fit(["hello there", "hi"], ["greet", "greet"])
    assert Router().fit(["hello there", "hi"], ["greet", "greet"]).blend_ == 1.0  # auto: centroid only
    with pytest.raises(ValidationError, match="no route"):
        Router().fit(["hello there", "hi"], [None, "oos"])
    with pytest.raises(ValidationError, match="no example has any word"):
        Router().fit(["!!!", "???"], ["a", "b"])
    with pytest.raises(ValidationError, match=r"labels\[1\]: label \['y'\] is a list; accepted: a route name"):
        Router().fit(["a b", "c d"], ["x", ["y"]])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="boolean"):
        Router().fit(["a b", "c d"], ["x", True])  # type: ignore[list-item]
    assert Router(method="knn").fit(["a b", "c d"], ["x", 3]).routes_ == ["3", "x"]  # Parquet int labels
    with pytest.raises(ValidationError, match="method"):
        Router(method="bert")
    with pytest.raises(ConflictError, match="not fitted"):
        Router().predict(["x"])


def test_one_route_per_trigger_works_with_knn():
    """Note triggers: one example per route."""
    triggers = ["how we deploy to production", "database migration procedure", "coding style for tests"]
    r = Router(method="knn").fit(triggers, ["note_deploy", "note_db", "note_style"])
    assert r.predict(["deploying to production", "run the db migration"]) == ["note_deploy", "note_db"]
    single = Router(method="knn").fit(["how we deploy"], ["note_deploy"])
    assert single.predict(["deploy"]) == ["note_deploy"]


def test_evaluate_counts_oos_as_its_own_class():
    r = Router(method="knn", threshold=0.5).fit(X, Y)
    m = r.evaluate(["book a flight to paris", "qwxz zzyq", "play some jazz music", "will it rain today"],
                   ["travel", None, "weather", "weather"])
    assert isinstance(m, RoutingMetrics)
    assert m.n == 4
    assert m.accuracy == pytest.approx(3 / 4)
    assert m.in_scope_accuracy == pytest.approx(2 / 3)
    assert m.oos_recall == 1.0 and m.oos_precision == 1.0 and m.oos_f1 == 1.0
    assert m.per_route["route"].to_list() == ["music", "travel", "weather", "oos"]
    weather = m.per_route.row(2, named=True)
    assert (weather["precision"], weather["recall"], weather["support"]) == (1.0, 0.5, 2)
    no_oos = r.evaluate(["book a flight to paris"], ["travel"])
    assert no_oos.oos_recall is None and no_oos.oos_f1 is None and no_oos.accuracy == 1.0


class _Spy(list):
    """A list that records that it was read."""

    reads = 0

    def __iter__(self):
        type(self).reads += 1
        return super().__iter__()


def test_calibration_uses_only_the_data_given():
    r = Router(method="knn").fit(X, Y)
    val_x = ["flight to madrid", "is it going to snow", "play a track", "what is the capital of peru", "qwxz"]
    val_y = ["travel", "weather", "music", None, None]
    test_x = _Spy(["a plane to lisbon", "who is the president"])
    r.calibrate(val_x, val_y, criterion="accuracy")
    assert _Spy.reads == 0  # the test split was never touched
    th = r.threshold_
    # the threshold is a function of the calibration data alone: recomputing gives the same value
    assert Router(method="knn").fit(X, Y).calibrate(val_x, val_y).threshold_ == th
    assert r.criterion_ == "accuracy"
    scores = r.decision_scores(val_x).max(axis=1)
    # exhaustive: no threshold does better on the calibration data than the one chosen
    best = max(
        Router(method="knn", threshold=float(t)).fit(X, Y).evaluate(val_x, val_y).accuracy
        for t in [*scores, math.inf]
    )
    assert r.evaluate(val_x, val_y).accuracy == best
    r.evaluate(test_x, ["travel", None])


def test_calibrate_exhaustive_search_picks_optimum_and_handles_extremes():
    r = Router(method="knn").fit(X, Y)
    # only in-scope rows, accuracy criterion: nothing to reject -> route everything
    r.calibrate(["flight to madrid", "rain"], ["travel", "weather"], criterion="accuracy")
    assert r.threshold_ == -math.inf
    # only oos rows: reject everything
    r.calibrate(["qwxz", "zzyq"], [None, None], criterion="accuracy")
    assert r.threshold_ == math.inf
    with pytest.raises(ValidationError, match="balanced"):
        r.calibrate(["qwxz"], [None])  # the default criterion, balanced, needs both kinds of rows
    with pytest.raises(ValidationError, match="criterion"):
        r.calibrate(["qwxz"], [None], criterion="f1")
    # seeded candidate sampling is reproducible
    a = r.calibrate(X, Y, max_candidates=3, seed=7).threshold_
    b = r.calibrate(X, Y, max_candidates=3, seed=7).threshold_
    assert a == b


def test_per_route_thresholds_fall_back_to_global_for_thin_routes():
    r = Router(method="knn", min_route_examples=2).fit(X, Y)
    val_x = ["flight to madrid", "plane to oslo", "is it going to snow", "play a track", "qwxz", "who won"]
    val_y = ["travel", "travel", "weather", "music", None, None]
    r.calibrate(val_x, val_y, criterion="balanced", per_route=True)
    assert sorted(r.route_thresholds_) == ["travel"]  # only travel has >= 2 calibration rows
    th = r._thresholds()
    assert th[r.routes_.index("music")] == r.threshold_ == th[r.routes_.index("weather")]
    assert r.criterion_ == "balanced"
    r.calibrate(val_x, val_y)  # without per_route the per-route thresholds are cleared
    assert r.route_thresholds_ == {}


# the project's own copy (datasets/clinc150, unchanged from the source)
CLINC = Path(__file__).resolve().parents[1] / "datasets" / "clinc150" / "data_full.json"


def test_clinc_smoke_on_a_small_deterministic_subset():
    data = json.loads(CLINC.read_text())
    intents = sorted({lab for _, lab in data["train"]})[:10]

    def take(split, per):
        rows = [r for r in data[split] if r[1] in intents]
        out = []
        for it in intents:
            out += [r for r in rows if r[1] == it][:per]
        return out + data["oos_" + split][: per * 2]

    tr, va, te = take("train", 30), take("val", 10), take("test", 10)
    r = Router().fit([t for t, _ in tr], [y for _, y in tr])
    r.calibrate([t for t, _ in va], [y for _, y in va], criterion="balanced")
    m = r.evaluate([t for t, _ in te], [y for _, y in te])
    assert m.n == len(te)
    assert m.in_scope_accuracy is not None and m.in_scope_accuracy > 0.8
    assert m.oos_recall is not None and m.oos_recall > 0.5
    again = Router(blend=r.blend_).fit([t for t, _ in tr], [y for _, y in tr]).decision_scores([t for t, _ in te])
    assert np.array_equal(again, r.decision_scores([t for t, _ in te]))
