"""``synapse-nb gate``: evaluate the recall gate as a router on labelled data."""

from __future__ import annotations

from typing import Annotated

import typer

from synapse_nb.cli._common import Group, JsonOpt, echo_json, group_help, print_mapping

__all__ = ["gate_app"]


gate_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Evaluate the recall gate as a router on labelled data.", "synapse-nb gate eval datasets/agent_vault --json"))


@gate_app.command("eval")
def gate_eval(
    path: Annotated[str, typer.Argument(help="A labelled file (CSV/JSONL/Parquet), a dataset folder or a bundled name.")],
    train_split: Annotated[str, typer.Option("--train-split", help="Split the router is fitted on.")] = "train",
    val_split: Annotated[str | None, typer.Option("--val-split", help="Split thresholds are calibrated on ('' for none).")] = "val",
    test_split: Annotated[str, typer.Option("--test-split", help="Split that is scored.")] = "test",
    criterion: Annotated[str, typer.Option("--criterion", metavar="accuracy|balanced", help="Calibration criterion.")] = "accuracy",
    per_route: Annotated[bool, typer.Option("--per-route", help="Calibrate one threshold per route.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fit the gate's router on one split, calibrate on another, score the test split.

    Examples:

        synapse-nb gate eval datasets/agent_vault

        synapse-nb gate eval datasets/clinc150 --criterion balanced --json
    """
    from synapse_nb.eval import run_gate_eval  # here: the eval code loads scikit-learn and pandas

    out = run_gate_eval(path, train_split=train_split, val_split=val_split or None, test_split=test_split,
                        criterion=criterion, per_route=per_route)
    if as_json:
        echo_json(out)
    else:
        print_mapping(out)
