"""``synapse-nb recall``: what is relevant now (``recall QUERY``), and the LoCoMo evaluation (``recall eval``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from synapse_nb.cli._common import Group, JsonOpt, echo_json, group_help, open_vault_for, print_mapping
from synapse_nb.provenance import inline

if TYPE_CHECKING:  # pragma: no cover
    from typer._click.core import Context as ClickContext  # what a group's parse_args receives (typer vendors click)

__all__ = ["recall_app"]


class _RecallGroup(Group):
    """``recall QUERY ...`` runs ``recall query QUERY ...``; ``recall eval PATH`` is the LoCoMo eval."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["query", *args]
        return super().parse_args(ctx, args)


recall_app = typer.Typer(cls=_RecallGroup, no_args_is_help=True, help=group_help(
    "Ask the vault what is relevant now: 'recall QUERY' (short for 'recall query QUERY'), or 'recall eval PATH'. "
    "'recall QUERY' takes --session, --explain, --budget and --json: see 'synapse-nb recall query --help'.",
    'synapse-nb recall "how do we run migrations?"', 'synapse-nb recall "deploy to prod" --session s1 --explain',
    "synapse-nb recall eval datasets/locomo --conversations 2"))


@recall_app.command("query")
def recall_query(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What you (or the agent) are about to do or ask.")],
    session: Annotated[str | None, typer.Option(
        "--session", help="Session id: what it already received is not repeated.")] = None,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Also show every candidate's score, matched terms and bar.")] = False,
    budget: Annotated[int | None, typer.Option("--budget", min=1, help="Token budget for the text.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall what is relevant to QUERY (``synapse-nb recall QUERY`` is the short form).

    Approved lessons come first, always; then the hits that clear the gate, or "nothing new" with its reason:
    nothing relevant, all already given to this --session, or relevant items over the --budget.

    Examples:

        synapse-nb recall "how do we run migrations?"

        synapse-nb recall query "deploy to prod" --session s1 --explain --json
    """
    if not query.strip():  # refused as %recall refuses it (review 68: exit 0 here, a UsageError there)
        raise typer.BadParameter('recall needs a query (it was empty or blank), e.g. synapse-nb recall "how do we '
                                 'run migrations?"', param_hint="QUERY")
    v = open_vault_for(ctx, offline=True)
    if v.offline:  # a team vault whose server cannot be reached: this machine's stale copy, marked so
        stale = v.recall(query)
        echo_json(stale.to_dict()) if as_json else typer.echo(stale.text)
        return
    r = v.recall(query, session=session, budget_tokens=budget)
    if as_json:
        out = {**r.to_dict(), "query": inline(r.query)}
        if explain:
            out["explain"] = r.explain().to_dicts()
        echo_json(out)
        return
    typer.echo(r.text)
    if r.empty_reason == "over_budget":
        typer.echo(f"hint: raise --budget (it was {r.bars.budget_tokens}) to get the relevant items", err=True)
    if explain:
        typer.echo("\n" + str(r.explain()))
        typer.echo(f"(read at vault version {r.version})")


@recall_app.command("eval")
def recall_eval(
    path: Annotated[str, typer.Argument(help="The LoCoMo dataset folder or JSON file.")] = "datasets/locomo",
    conversations: Annotated[int | None, typer.Option(
        "--conversations", min=1, help="Only the first N conversations.")] = None,
    subset: Annotated[str | None, typer.Option(
        "--subset",
        help="dev (conversations 0-6, tuned on), heldout (7-9), all, or 0-based indices such as 7,8,9.")] = None,
    semantic: Annotated[float, typer.Option(
        "--semantic", min=0.0, max=1.0,
        help="Weight of the optional semantic channel (0: off; 0.4 with --embedder e5-small, 0.1 with wordllama)."
    )] = 0.0,
    embedder: Annotated[str | None, typer.Option(
        "--embedder", help="The semantic channel's model: wordllama (default; extra semantic), e5-small (extra "
        "semantic-e5), sentence-transformers:<folder>, import:<module>:<factory>.")] = None,
    style: Annotated[str, typer.Option(
        "--style", help=(
            "original (LoCoMo's text) or chat (rewritten as real chat: split messages, lower case, typos, "
            "abbreviations, back-channel turns).")
    )] = "original",
    chat_seed: Annotated[int, typer.Option(
        "--chat-seed", help=(
            "Seed of the chat-style rewrite (with --style chat).")
    )] = 0,
    retriever: Annotated[str, typer.Option(
        "--retriever", help=(
            "recall (default), fts5 (a bare FTS5 BM25 baseline), bm25, vector or hybrid (the retrieval "
            "index).")
    )] = "recall",
    as_json: JsonOpt = False,
) -> None:
    """Evaluate recall on LoCoMo questions: ranking (R@5, R@10, nDCG@10, MRR), what a user receives with the
    default bars (delivered R@5, "nothing new" rate) and off-topic rejection (each question asked of the next
    conversation's vault).

    Examples:

        synapse-nb recall eval datasets/locomo --subset heldout

        synapse-nb recall eval datasets/locomo --subset 7,8,9 --json

        synapse-nb recall eval datasets/locomo --conversations 2

        synapse-nb recall eval datasets/locomo --style chat --subset dev --json

        synapse-nb recall eval datasets/locomo --style chat --subset heldout --retriever fts5 --json

        synapse-nb recall eval datasets/locomo --subset heldout --semantic 0.4 --embedder e5-small --json
    """
    from synapse_nb.errors import ValidationError
    from synapse_nb.eval import run_locomo_eval  # here: the eval code loads polars

    kwargs: dict[str, Any] = {}
    if conversations is not None and subset is not None:
        raise ValidationError("give --conversations N or --subset, not both")
    if conversations is not None:
        kwargs["conversations"] = list(range(conversations))  # the first N, by position in the file
    if subset is not None:
        kwargs["conversations"] = subset
    if semantic:
        kwargs["semantic"] = semantic
    if embedder is not None:
        kwargs["embedder"] = embedder
    if style != "original" or chat_seed:
        from synapse_nb.eval.chatstyle import ChatStyle

        kwargs["style"], kwargs["chat"] = style, ChatStyle(seed=chat_seed)
    out = run_locomo_eval(path, retriever=retriever, **kwargs)
    out = out.to_dict() if hasattr(out, "to_dict") else out
    if as_json:
        echo_json(out)
    else:
        print_mapping(out)
