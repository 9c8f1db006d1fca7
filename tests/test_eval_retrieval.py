"""LoCoMo retrieval evaluation through the vault's recall: a 2-conversation subset of the real file and a toy one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synapse_nb.errors import DatasetError, ValidationError
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.retrieval import (
    HELD_OUT_CONVERSATIONS,
    RETRIEVERS,
    TUNE_CONVERSATIONS,
    build_locomo_vault,
    locomo_questions,
    locomo_table,
    run_locomo_eval,
    turn_document,
)

LOCOMO = Path(__file__).resolve().parents[1] / "datasets" / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """conv-26 and conv-30 with their first 12 questions each (the real turns, all of them)."""
    raw = json.loads(LOCOMO.read_text(encoding="utf-8"))
    keep = [dict(s, qa=s["qa"][:12]) for s in raw if s["sample_id"] in ("conv-26", "conv-30")]
    path = tmp_path_factory.mktemp("locomo") / "locomo10.json"
    path.write_text(json.dumps(keep), encoding="utf-8")
    return path


def _toy(tmp_path: Path) -> Path:
    sample = {
        "sample_id": "toy-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Have you been to the pottery workshop?"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Yes, last Saturday, I made a blue bowl."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister adopted a puppy called Rex."},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "The marathon in Boston was exhausting."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Congratulations on finishing it!"},
            ],
        },
        "qa": [
            {"question": "What did Bob make at the pottery workshop?", "answer": "a bowl", "evidence": ["D1:2"],
             "category": 4},
            {"question": "What is the name of the puppy Ann's sister adopted?", "answer": "Rex",
             "evidence": ["D1:3"], "category": 4},
            {"question": "Which marathon did Bob run?", "answer": "Boston", "evidence": ["D2:1"], "category": 2},
            {"question": "Unanswerable?", "answer": None, "evidence": [], "category": 5},
        ],
    }
    path = tmp_path / "toy.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_split_constants_cover_the_ten_conversations_once() -> None:
    ids = [c.sample_id for c in load_locomo(LOCOMO)]
    assert sorted(TUNE_CONVERSATIONS + HELD_OUT_CONVERSATIONS) == sorted(ids)
    assert list(TUNE_CONVERSATIONS) == ids[:7] and list(HELD_OUT_CONVERSATIONS) == ids[7:]  # 0-6 and 7-9
    assert not set(TUNE_CONVERSATIONS) & set(HELD_OUT_CONVERSATIONS)


def test_turn_document_adds_the_preceding_turn_of_the_same_session_only(tmp_path: Path) -> None:
    conv = load_locomo(_toy(tmp_path))[0]
    assert turn_document(conv, 1, context=1) == (
        "[1:56 pm on 8 May, 2023] Bob: Yes, last Saturday, I made a blue bowl. "
        "| replying to: Ann: Have you been to the pottery workshop?")
    assert turn_document(conv, 1) == "[1:56 pm on 8 May, 2023] Bob: Yes, last Saturday, I made a blue bowl."
    assert "replying to" not in turn_document(conv, 3, context=1)  # first turn of session 2
    assert turn_document(conv, 1, date=False, context=0) == "Bob: Yes, last Saturday, I made a blue bowl."
    with pytest.raises(ValidationError):
        turn_document(conv, 1, context=-1)


def test_vault_holds_one_episode_per_turn_with_deterministic_ids(tmp_path: Path) -> None:
    conv = load_locomo(_toy(tmp_path))[0]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    v1, ids1 = build_locomo_vault(conv, tmp_path / "a")
    v2, ids2 = build_locomo_vault(conv, tmp_path / "b")
    try:
        assert ids1 == ids2 and sorted(ids1.values()) == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
        eps = {e.refs[0]: e for e in v1.episodes.history(limit=None)}
        assert set(eps) == set(ids1.values())
        assert eps["D1:2"].created_at.startswith("2023-05-08T13:56")
        assert eps["D2:1"].task_key == "toy-1 D2:1" and "Boston" in eps["D2:1"].outcome
        # the conversation's structure: session = thread, turn order = seq, speaker = actor
        assert (eps["D1:3"].thread, eps["D1:3"].seq, eps["D1:3"].actor) == ("toy-1 session 1", 2, "Ann")
        assert (eps["D2:1"].thread, eps["D2:1"].seq) == ("toy-1 session 2", 0)
        assert v1.export_jsonl() == v2.export_jsonl()
    finally:
        v1.close()
        v2.close()


def test_toy_answers_rank_first_for_recall_and_bm25(tmp_path: Path) -> None:
    path = _toy(tmp_path)
    frame = locomo_questions(path, retrievers=["recall", "bm25"])
    assert frame.height == 3 * 2 * 2  # 3 questions with evidence x 2 retrievers x 2 levels
    turn = frame.filter(frame["level"] == "turn")
    assert turn["recall_at_5"].to_list() == [1.0] * 6
    assert turn.filter(turn["retriever"] == "recall")["mrr"].to_list() == [1.0, 1.0, 1.0]


def test_run_locomo_eval_on_a_two_conversation_subset(subset: Path) -> None:
    out = run_locomo_eval(subset)
    assert out["conversations"] == ["conv-26", "conv-30"]
    n = sum(1 for c in load_locomo(subset) for q in c.questions if q.evidence)
    assert out["n_questions"] == n == 24
    for key in ("recall_at_5", "recall_at_10", "ndcg_at_10", "mrr"):
        assert 0.0 <= out[key] <= 1.0
        assert 0.0 <= out["session"][key] <= 1.0
    assert out["recall_at_5"] <= out["recall_at_10"]
    assert out["recall_at_10"] > 0.3  # the gate finds real evidence, not noise
    assert sum(c["n_questions"] for c in out["by_category"].values()) == n
    assert set(out["by_category"]) <= {"multi-hop", "temporal", "open-domain", "single-hop", "adversarial"}
    assert run_locomo_eval(subset) == out  # byte-for-byte the same figures on a rebuilt vault
    json.dumps(out)
    # what a user receives with the default bars, and the off-topic stand-in (the other conversation's vault)
    for key in ("delivered_recall_at_5", "nothing_new_rate", "offtopic_nothing_new_rate"):
        assert 0.0 <= out[key] <= 1.0, key
    assert out["delivered_recall_at_5"] <= out["recall_at_5"] + 1e-9  # the bars only remove
    assert out["offtopic_nothing_new_rate"] > out["nothing_new_rate"]  # another life's questions: nothing new


def test_subsets_name_dev_heldout_and_indices(subset: Path) -> None:
    frame = locomo_questions(subset, "1", retrievers=["recall"])
    assert frame["sample_id"].unique().to_list() == ["conv-30"]
    turn = frame.filter(frame["level"] == "turn")
    assert turn["offtopic_nothing_new"].null_count() == turn.height  # alone: no other conversation to ask
    assert turn["nothing_new"].null_count() == 0
    with pytest.raises(ValidationError, match="heldout"):
        locomo_questions(subset, "nonsense", retrievers=["recall"])


def test_table_orders_retrievers_levels_and_categories(subset: Path) -> None:
    frame = locomo_questions(subset, conversations=["conv-30"], retrievers=list(RETRIEVERS))
    table = locomo_table(frame)
    assert table["retriever"].unique(maintain_order=True).to_list() == list(RETRIEVERS)
    first = table.filter((table["retriever"] == "recall") & (table["level"] == "turn"))
    assert first["category"][0] == "all" and first["n_questions"][0] == 12
    assert locomo_table(frame, by_category=False).height == len(RETRIEVERS) * 2


def test_bad_arguments_are_refused(subset: Path, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="unknown conversation"):
        run_locomo_eval(subset, conversations=["conv-99"])
    with pytest.raises(ValidationError, match="out of range"):
        run_locomo_eval(subset, conversations=[7])
    with pytest.raises(ValidationError, match="retriever"):
        run_locomo_eval(subset, retriever="dragon")
    with pytest.raises(ValidationError, match="k_values"):
        run_locomo_eval(subset, k_values=(0,))
    with pytest.raises(DatasetError, match="no LoCoMo file"):
        run_locomo_eval(tmp_path / "missing")


def test_cli_recall_eval_takes_a_subset(subset: Path) -> None:
    from typer.testing import CliRunner

    from synapse_nb.cli import app

    res = CliRunner().invoke(app, ["recall", "eval", str(subset), "--subset", "0,1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["conversations"] == ["conv-26", "conv-30"] and out["n_questions"] == 24
    assert {"recall_at_5", "recall_at_10", "ndcg_at_10", "mrr", "delivered_recall_at_5", "nothing_new_rate",
            "offtopic_nothing_new_rate", "by_category"} <= set(out)
    both = CliRunner().invoke(app, ["recall", "eval", str(subset), "--subset", "dev", "--conversations", "1"])
    assert both.exit_code != 0 and "not both" in both.output


def test_a_file_with_each_messages_time_and_iso_times_keeps_them(tmp_path: Path) -> None:
    """A messaging app's export gives every message its time, often in ISO 8601 or Unix seconds: each turn keeps
    its own (written as LoCoMo writes times, so documents and questions read alike), and the vault's episodes are
    stamped with it; LoCoMo's own session times are kept as written."""
    path = _toy(tmp_path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    conv = raw[0]["conversation"]
    conv["session_2_date_time"] = "2023-06-09T10:00:00Z"
    conv["session_1"][1]["timestamp"] = "2023-05-08T14:03:00+00:00"
    conv["session_1"][2]["date_time"] = 1683555000  # Unix seconds: 2023-05-08 14:10 UTC
    conv["session_2"][1]["time"] = "not a time"
    path.write_text(json.dumps(raw), encoding="utf-8")
    turns = {t.dia_id: t.session_date for t in load_locomo(path)[0].turns}
    assert turns == {"D1:1": "1:56 pm on 8 May, 2023", "D1:2": "2:03 pm on 8 May, 2023",
                     "D1:3": "2:10 pm on 8 May, 2023", "D2:1": "10:00 am on 9 June, 2023", "D2:2": "not a time"}
    (tmp_path / "v").mkdir()
    v, _ = build_locomo_vault(load_locomo(path)[0], tmp_path / "v")
    try:
        eps = {e.refs[0]: e.created_at for e in v.episodes.history(limit=None)}
        assert eps["D1:2"].startswith("2023-05-08T14:03") and eps["D1:3"].startswith("2023-05-08T14:10")
        assert eps["D2:1"].startswith("2023-06-09T10:00")
    finally:
        v.close()
