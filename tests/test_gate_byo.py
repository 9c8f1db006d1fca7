"""Bring your own data: `synapse-nb gate eval` on raw public layouts (issue 16's eight items), end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from synapse_nb.cli import app
from synapse_nb.errors import DatasetError
from synapse_nb.eval import evaluate_router, load_dataset, load_labelled, run_gate_eval
from synapse_nb.gate import Router

REPO = Path(__file__).resolve().parents[1]
BYO = REPO / "tests" / "fixtures" / "byo"
BANKING = BYO / "banking77_layout"
MASSIVE = BYO / "massive_layout" / "en-US.jsonl"
SHEET = BYO / "spreadsheet_export.csv"


def gate(*args: str, code: int = 0) -> Any:
    res = CliRunner().invoke(app, ["gate", "eval", *map(str, args)])
    assert res.exit_code == code, res.output
    return res


def gate_json(*args: str) -> dict[str, Any]:
    return json.loads(gate(*args, "--json").stdout)


# ------------------------------------------------------------------------------------- 1: folders, formats


def test_a_folder_of_split_files_is_a_dataset() -> None:
    out = gate_json(BANKING)
    assert (out["n_train"], out["n_test"]) == (60, 30)
    assert out["config"]["train"] == "train" and out["config"]["test"] == "test"
    assert out["notes"] == [("no validation split, and no out-of-scope rows in train to carve one from: "
                             "thresholds not calibrated")]
    assert out["in_scope_accuracy"] >= 0.8


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "json", "parquet"])
def test_every_format_in_a_split_folder_gives_the_same_data(tmp_path: Path, fmt: str) -> None:
    import pandas as pd

    ref = load_dataset(BANKING)
    for split, stem in (("train", "train"), ("test", "validation")):  # validation.* -> val
        frame = pd.read_csv(BANKING / f"{split}.csv", dtype=str)
        target = tmp_path / f"{stem}.{fmt}"
        if fmt in ("csv", "tsv"):
            frame.to_csv(target, sep="," if fmt == "csv" else "\t", index=False)
        elif fmt == "jsonl":
            frame.to_json(target, orient="records", lines=True)
        elif fmt == "json":
            frame.to_json(target, orient="records")
        else:
            frame.to_parquet(target)
    got = load_dataset(tmp_path)
    assert got.splits == ("train", "val")
    assert got.split("train") == ref.split("train") and got.split("val") == ref.split("test")


def test_hugging_face_data_subfolder_and_shards(tmp_path: Path) -> None:
    import pandas as pd

    (tmp_path / "data").mkdir()
    frame = pd.read_csv(BANKING / "train.csv", dtype=str)
    frame.iloc[:30].to_parquet(tmp_path / "data" / "train-00000-of-00002.parquet")
    frame.iloc[30:].to_parquet(tmp_path / "data" / "train-00001-of-00002.parquet")
    pd.read_csv(BANKING / "test.csv", dtype=str).to_parquet(tmp_path / "data" / "test-00000-of-00001.parquet")
    (tmp_path / "README.md").write_text("# a dataset card\n", encoding="utf-8")
    got = load_dataset(tmp_path)
    assert got.split("train") == load_dataset(BANKING).split("train")


def test_clinc150s_own_file_given_directly() -> None:
    d = load_dataset(REPO / "datasets" / "clinc150" / "data_oos_plus.json")
    assert d.name == "clinc150_oos_plus" and len(d.split("train")[0]) == 15_250


def test_a_single_file_with_a_split_column() -> None:
    data = load_labelled(MASSIVE, text_col="utt")
    assert data.splits == ("train", "dev", "test")
    assert data.find_split("val") == "dev" and data.n_oos == 40


# ------------------------------------------------------------------------------------- 2: columns


def test_column_options_and_detection() -> None:
    res = gate(MASSIVE, code=1)
    assert "no text column found; looked for text, utterance, query, sentence" in res.output
    assert "found: id, locale, partition, scenario, intent, utt, annot_utt; pass --text-col" in res.output
    out = gate_json(MASSIVE, "--text-col", "utt")  # intent and partition are detected
    assert (out["n_train"], out["n_val"], out["n_test"]) == (75, 35, 55)
    by_scenario = gate_json(MASSIVE, "--text-col", "utt", "--label-col", "scenario", "--split-col", "partition")
    assert by_scenario["n_test"] == 55
    assert "no column 'nope' (--label-col" in gate(MASSIVE, "--text-col", "utt", "--label-col", "nope", code=1).output


# ------------------------------------------------------------------------------------- 3, 4: delimiter, encoding


def test_semicolon_csv_is_sniffed_and_delimiter_can_be_forced(tmp_path: Path) -> None:
    data = load_labelled(SHEET, encoding="cp1252")
    assert data.texts[0].startswith("i lost my luggage") or len(data.routes) == 5
    assert data.routes == ("confirm_reservation", "lost_luggage", "mpg", "timezone", "what_song")
    res = gate(SHEET, "--encoding", "cp1252", "--delimiter", ",", "--holdout", "0.2", code=1)
    assert "not valid delimited text with delimiter ','" in res.output and "pass --delimiter" in res.output
    tabs = tmp_path / "tabs.txt"  # a .txt of tab-separated values, delimiter named on the command line
    rows = [line.split(",", 1) for line in (BANKING / "train.csv").read_text(encoding="utf-8").splitlines()]
    assert all(len(r) == 2 and '"' not in r[0] for r in rows)  # no quoted commas in this fixture
    tabs.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    out = gate_json(tabs, "--delimiter", "\\t", "--holdout", "0.2")
    assert (out["n_train"], out["n_test"]) == (50, 10)  # round(0.2 * 12) = 2 of each of the 5 labels
    p = tmp_path / "pipes.txt"
    p.write_text("text|label\nbook a flight|travel\nrain today|weather\n", encoding="utf-8")
    assert load_labelled(p).labels == ("travel", "weather")


def test_non_utf8_file_names_line_and_byte_and_reads_with_an_encoding() -> None:
    res = gate(SHEET, "--holdout", "0.2", code=1)
    assert "spreadsheet_export.csv: line 85, column 5: byte 0x92 (file offset 4275) is not valid utf-8" in res.output
    assert "--encoding" in res.output and "--errors replace" in res.output
    replaced = load_labelled(SHEET, errors="replace")
    cp = load_labelled(SHEET, encoding="cp1252")
    assert "\ufffd" in replaced.texts[83] and "\u2019" in cp.texts[83] and len(replaced) == len(cp) == 120
    with pytest.raises(DatasetError, match="errors='nope'"):
        load_labelled(SHEET, errors="nope")


# ------------------------------------------------------------------------------------- 5: method and options


def test_method_and_router_options_reach_the_router() -> None:
    out = gate_json(MASSIVE, "--text-col", "utt", "--method", "knn")
    assert out["config"]["router_params"]["method"] == "knn"
    out = gate_json(MASSIVE, "--text-col", "utt", "--C", "0.5", "--linear-idf", "1", "--blend", "0.25",
                    "--description-weight", "0.3", "--criterion", "balanced")
    params = out["config"]["router_params"]
    assert (params["C"], params["linear_idf"], params["blend"], params["description_weight"]) == (0.5, 1.0, 0.25, 0.3)
    assert "method must be one of auto, centroid, knn, linear" in gate(MASSIVE, "--text-col", "utt", "--method",
                                                                        "bert", code=1).output


# ------------------------------------------------------------------------------------- 6: unknown split


def test_unknown_split_names_are_errors_listing_the_splits() -> None:
    res = gate(MASSIVE, "--text-col", "utt", "--val-split", "holdout", code=1)
    assert "no validation split 'holdout'; splits found: train, dev, test" in res.output
    res = gate(MASSIVE, "--text-col", "utt", "--test-split", "eval", code=1)
    assert "no test split 'eval'; splits found: train, dev, test" in res.output
    out = gate_json(MASSIVE, "--text-col", "utt", "--val-split", "")
    assert not out["calibrated"] and out["n_val"] == 0


# ------------------------------------------------------------------------------------- 7: hold-out


def test_holdout_is_stratified_deterministic_and_carves_val_when_needed() -> None:
    args = (SHEET, "--encoding", "cp1252", "--holdout", "0.25", "--criterion", "balanced")
    a, b = gate_json(*args, "--seed", "3"), gate_json(*args, "--seed", "3")
    a.pop("queries_per_second"), b.pop("queries_per_second")
    assert a == b
    assert (a["n_test"], a["n_val"], a["n_train"]) == (28, 26, 66)  # 0.25 of each label, then of train
    assert a["n_oos_test"] == 8 and a["calibrated"]
    assert a["notes"][0] == "no split column: held out 0.25 of each label as 'test' (28 rows, stratified, seed 3)"
    assert a["notes"][1].startswith("no validation split: carved 0.25 of each label of 'train' as 'val' (26 rows")
    text = gate(*args, "--seed", "3").stdout
    assert "note: no split column: held out 0.25" in text  # said in the plain output too
    data = load_labelled(SHEET, encoding="cp1252").carve(0.25, into="test", seed=3)
    per_label = {y: sum(1 for t, s in zip(data.labels, data.row_splits, strict=True) if t == y and s == "test")
                 for y in set(data.labels)}
    assert set(per_label.values()) == {4, 8} and per_label[None] == 8  # 18 rows -> 4, 30 oos rows -> 8
    other = gate_json(*args, "--seed", "4")
    assert other["n_test"] == 28
    assert "pass --holdout 0.2" in gate(SHEET, "--encoding", "cp1252", code=1).output


# ------------------------------------------------------------------------------------- 8: the notebook's setting


def test_cli_reproduces_the_notebooks_agent_vault_setting() -> None:
    out = gate_json("datasets/agent_vault", "--criterion", "balanced")
    nb = evaluate_router(Router(), load_dataset("agent_vault"), criterion="balanced", with_descriptions=True)
    assert out["accuracy"] == nb.metrics.accuracy >= 0.65
    assert out["config"]["with_descriptions"] is True
    plain = run_gate_eval("datasets/agent_vault", criterion="balanced", with_descriptions=False)
    assert plain["accuracy"] < out["accuracy"]
    assert gate_json("datasets/agent_vault", "--no-descriptions", "--criterion", "balanced")["accuracy"] == \
        plain["accuracy"]


# ------------------------------------------------------------------------------------- progress bars


def test_progress_bar_on_a_terminal_never_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    run_gate_eval(BANKING, progress=True, n_boot=20)
    err = capsys.readouterr().err
    assert "gate eval banking77_layout" in err and "3/3" in err  # fit, predict, intervals
    run_gate_eval(BANKING, n_boot=20)  # not a terminal: no bar
    assert capsys.readouterr().err == ""
    res = CliRunner().invoke(app, ["gate", "eval", str(BANKING), "--json"])
    assert "gate eval" not in res.output and json.loads(res.stdout)["n_test"] == 30


def test_threshold_sweep_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    from synapse_nb.eval import threshold_sweep

    data = load_labelled(MASSIVE, text_col="utt")
    r = Router().fit(*data.split("train"))
    a = threshold_sweep(r, *data.split("dev"), batch_size=10, progress=True)
    err = capsys.readouterr().err
    assert "threshold sweep" in err and "4/4" in err  # 35 rows in batches of 10
    assert threshold_sweep(r, *data.split("dev")).equals(a)  # batching changes no figure
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------------- docs/gate.md examples


def _doc_examples() -> list[tuple[str, list[str]]]:
    import re

    text = (REPO / "docs" / "gate.md").read_text(encoding="utf-8")
    section = text.split("## Your own data", 1)[1].split("\n## ", 1)[0]
    return [(cmd.strip(), [line for line in out.strip().splitlines() if line])
            for cmd, out in re.findall(r"```bash\n(.*?)\n```\n```text\n(.*?)```", section, flags=re.S)]


def test_the_three_worked_examples_of_gate_md_print_what_it_shows() -> None:
    import shlex

    examples = _doc_examples()
    assert len(examples) == 3
    for command, lines in examples:
        argv = shlex.split(command)
        assert argv[:3] == ["synapse-nb", "gate", "eval"], command
        res = gate(*argv[3:])
        printed = res.stdout.splitlines()
        for line in lines:
            assert line in printed, (command, line)


def test_recall_eval_progress_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from synapse_nb.eval import locomo_questions

    sample = {"sample_id": "toy-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "My sister adopted a puppy called Rex."},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "The marathon in Boston was exhausting."}]},
        "qa": [{"question": "Which marathon did Bob run?", "answer": "Boston", "evidence": ["D1:2"], "category": 2}]}
    path = tmp_path / "toy.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    quiet = locomo_questions(path)
    assert capsys.readouterr().err == ""
    assert locomo_questions(path, progress=True).equals(quiet)
    err = capsys.readouterr().err
    assert "recall eval" in err and "1/1" in err
