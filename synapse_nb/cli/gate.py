"""``synapse-nb gate``: evaluate the recall gate as a router on labelled data."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from synapse_nb.cli._common import Group, JsonOpt, echo_json, group_help, print_mapping
from synapse_nb.gate.defaults import DEFAULTS

__all__ = ["gate_app"]


gate_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Evaluate the recall gate as a router on labelled data.", "synapse-nb gate eval datasets/agent_vault --json"))


@gate_app.command("eval")
def gate_eval(
    path: Annotated[str, typer.Argument(help=(
        "A labelled file (CSV/TSV/JSONL/JSON records/Parquet), a folder of split files (train.*, val.*|valid*|"
        "dev.*, test.*), a dataset folder or a bundled name (agent_vault, clinc150)."))],
    text_col: Annotated[str | None, typer.Option(
        "--text-col", help="Text column (default: text/utterance/query/sentence/...).")] = None,
    label_col: Annotated[str | None, typer.Option(
        "--label-col", help="Label column (default: label/intent/category/...).")] = None,
    split_col: Annotated[str | None, typer.Option(
        "--split-col", help="Split column (default: split/partition/...; '' for none).")] = None,
    delimiter: Annotated[str | None, typer.Option(
        "--delimiter", help="CSV delimiter, e.g. ';' or '\\t' (default: sniffed).")] = None,
    encoding: Annotated[str, typer.Option("--encoding", help="File encoding, e.g. latin-1, cp1252.")] = "utf-8",
    errors: Annotated[str, typer.Option(
        "--errors", metavar="strict|replace", help="Undecodable bytes: stop, or read them as U+FFFD.")] = "strict",
    train_split: Annotated[str, typer.Option("--train-split", help="Split the router is fitted on.")] = "train",
    val_split: Annotated[str, typer.Option(
        "--val-split", help="Split thresholds are calibrated on; 'auto' finds val/valid/dev or carves one from train; "
                            "'' for none.")] = "auto",
    test_split: Annotated[str, typer.Option("--test-split", help="Split that is scored.")] = "test",
    holdout: Annotated[float | None, typer.Option(
        "--holdout", help="Data without splits: hold out this share of each label as test (also the share carved "
                          "from train for a missing val split).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of hold-outs, folds and bootstrap intervals.")] = 0,
    method: Annotated[str, typer.Option(
        "--method", metavar="auto|linear|centroid|knn", help="How the router scores routes.")] = DEFAULTS.method,
    criterion: Annotated[str, typer.Option(
        "--criterion", metavar="balanced|accuracy",
        help="Calibration criterion: balanced (mean of in-scope accuracy and oos recall, whatever the share of oos "
             "rows) or accuracy (oos as a class, at val's share of oos rows).")] = DEFAULTS.criterion,
    per_route: Annotated[bool, typer.Option(
        "--per-route", help="Calibrate one threshold per route.")] = DEFAULTS.per_route,
    cross_fit: Annotated[int | None, typer.Option(
        "--cross-fit", help="Fit on train+val; choose thresholds on out-of-fold scores of this many folds.")] = None,
    c: Annotated[float | None, typer.Option(
        "--C", help=f"Linear model regularisation (default {DEFAULTS.C:g}).")] = None,
    linear_idf: Annotated[float | None, typer.Option(
        "--linear-idf", help=f"idf exponent of the linear model's features, 0..1 (default {DEFAULTS.linear_idf:g}).")
    ] = None,
    description_weight: Annotated[float | None, typer.Option(
        "--description-weight",
        help=f"Share of a route's centroid taken by its description, 0..1 (default {DEFAULTS.description_weight:g}).")
    ] = None,
    embedder: Annotated[str | None, typer.Option(
        "--embedder", metavar="wordllama|e5-small|import:MOD:FACTORY|...",
        help="Semantic features: append this embedder's vectors to the TF-IDF rows. For accuracy, e5-small (extra "
             "semantic-e5; CLINC150 91.1 against 88.1, about 30 queries/s: cache the training set's vectors with "
             "--embed-cache); wordllama (extra semantic) is the cheap middle (89.2). Default: none (lexical, the "
             "fastest: docs/gate.md).")] = DEFAULTS.embedder,
    semantic_weight: Annotated[float | None, typer.Option(
        "--semantic-weight", help="Length of the semantic block beside the TF-IDF block, (0, 8] (default: chosen on "
                                  "val per embedder: " + ", ".join(f"{n} {w:g}" for n, w in DEFAULTS.semantic_weights)
                                  + f", others {DEFAULTS.semantic_weight:g}).")] = None,
    embed_cache: Annotated[bool, typer.Option(
        "--embed-cache", help="Keep the embedder's vectors on disk between runs ($SYNAPSE_EMBED_CACHE or "
                              "~/.cache/synapse_nb/embeddings); never changes a figure.")] = False,
    blend: Annotated[float | None, typer.Option(
        "--blend", help="method auto: fix the linear/centroid blend, 0..1 (default: chosen on val).")] = None,
    descriptions: Annotated[bool | None, typer.Option(
        "--descriptions/--no-descriptions",
        help="Fit on route descriptions and examples (default: when the dataset has them).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fit the gate's router on one split, calibrate on another, score the test split (95% bootstrap CIs).

    A progress bar shows on a terminal (never with --json).

    Examples:

        synapse-nb gate eval datasets/agent_vault

        synapse-nb gate eval datasets/clinc150 --criterion accuracy --json

        synapse-nb gate eval datasets/clinc150 --embedder e5-small --embed-cache

        synapse-nb gate eval banking/ --label-col category

        synapse-nb gate eval intents.csv --delimiter ';' --encoding latin-1 --holdout 0.2 --seed 1
    """
    from synapse_nb.eval import run_gate_eval  # here: the eval code loads scikit-learn and pandas

    if delimiter in ("\\t", "tab", "TAB"):
        delimiter = "\t"
    options: dict[str, Any] = {k: v for k, v in (("C", c), ("linear_idf", linear_idf),
                                                  ("description_weight", description_weight), ("blend", blend),
                                                  ("semantic_weight", semantic_weight))
                               if v is not None}
    out = run_gate_eval(path, train_split=train_split, val_split=val_split or None, test_split=test_split,
                        criterion=criterion, method=method, per_route=per_route, with_descriptions=descriptions,
                        text_col=text_col, label_col=label_col, split_col=split_col, delimiter=delimiter,
                        encoding=encoding, errors=errors, holdout=holdout, seed=seed, cross_fit=cross_fit,
                        router_options=options, embedder=embedder or None, embed_cache=embed_cache or None,
                        progress=False if as_json else None)
    if as_json:
        echo_json(out)
    else:
        notes = out.pop("notes", [])
        out["config"].pop("notes", None)  # printed once, below
        print_mapping(out)
        for note in notes:
            typer.echo(f"note: {note}")
