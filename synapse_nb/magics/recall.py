"""``%recall``: what the vault knows about a question, shown once and returned."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from synapse_nb.displays import explain_titles
from synapse_nb.errors import OfflineError
from synapse_nb.magics._base import FamilyMagics, shown_once, usage_errors
from synapse_nb.magics._parse import parse_line
from synapse_nb.render import explanation_html

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.offline import StaleAnswer
    from synapse_nb.recall import Recall

__all__ = ["RecallMagics"]


@magics_class
class RecallMagics(FamilyMagics):
    """``%recall QUERY``."""

    @magic_arguments()
    @argument("query", nargs="*", help="what you want to remember (free text, no quotes needed)")
    @argument("--session", help="recall session id (default: one per notebook kernel)")
    @argument("--all", action="store_true", dest="no_session",
              help="no session: show everything that clears the bars, even what this notebook already saw")
    @argument("--budget", type=int, help="token budget of the recall text")
    @argument("--explain", action="store_true",
              help="show each candidate's score, matched terms and the bar that kept or dropped it")
    @no_var_expand
    @line_magic
    @usage_errors
    def recall(self, line: str = "") -> Recall | StaleAnswer:
        """Recall what the vault knows about QUERY: approved lessons first, then what clears the gate.

        Displays the recall and returns it, so ``r = %recall ...`` keeps it (``r.text`` is the plain text
        for an LLM, ``r.items`` the hits, ``r.explain()`` the scores). Within one notebook kernel the
        session is stable, so a second recall shows only what changed ("nothing new" otherwise, with the
        reason: nothing relevant, all already given to this notebook, or relevant items over the budget).

        A query may end with ``?`` from the cell after ``%load_ext``. In an ``ipython script.ipy`` file (read as one
        cell before its ``%load_ext`` runs) a recall must not end with ``?`` (IPython takes it as a help request),
        unless the extension is loaded first: ``ipython --ext synapse_nb script.ipy``.

        While the extension is loaded this replaces IPython's own ``%recall`` (re-running history);
        ``%unload_ext synapse_nb`` brings that one back.

        Examples
        --------
        ::

            %recall how do we run migrations?
            r = %recall deploy checklist --budget 300
            %recall flaky tests --explain      # also show the gate's table
            %recall flaky tests --all          # ignore what this notebook already received
            %recall deploy --session review-1  # a named session
        """
        args = parse_line(self.recall.parser, line)
        query = " ".join(args.query).strip()
        if not query:
            raise UsageError("%recall needs a query (it was empty or blank), e.g. %recall how do we run migrations?")
        if args.no_session and args.session:
            raise UsageError("use either --session NAME or --all, not both")
        syn = self.synapse
        session = None if args.no_session else (args.session or syn.session_id)
        budget = args.budget if args.budget is not None else syn.default_budget
        v = syn.readable_vault()
        if not v.offline:
            try:
                r = v.recall(query, session=session, budget_tokens=budget)
            except OfflineError as exc:  # the server went away since the vault was opened
                v = syn.stale_copy(exc)
        if v.offline:  # a team vault whose server cannot be reached: this machine's stale copy, marked so
            return shown_once(v.recall(query), syn.fresh)
        if args.explain:  # each candidate named by its title beside its id (knowledge/ingest_bottleneck)
            table = r.explain()
            html = explanation_html(table, explain_titles(v, table))
            display({"text/plain": str(table), "text/html": html}, raw=True)
        shown = shown_once(r, syn.fresh)
        if r.empty_reason == "over_budget":
            print(f"hint: raise the budget (it was {r.bars.budget_tokens}): %recall {query} --budget N, "
                  "or %config SynapseMagics.default_budget = N")
        return shown
