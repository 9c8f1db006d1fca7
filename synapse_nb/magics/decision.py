"""``%%decision``: log a design decision and its rationale from a cell."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from synapse_nb.magics._base import FamilyMagics, confirmed, usage_errors
from synapse_nb.magics._parse import parse_line, split_decision_cell, split_list
from synapse_nb.models import Decision

__all__ = ["DecisionMagics"]


@magics_class
class DecisionMagics(FamilyMagics):
    """``%%decision [--tags a,b]``."""

    @magic_arguments("%decision")  # the usage line reads %%decision (IPython writes one % before the name)
    @argument("--tags", help="comma-separated tags, one word each (storage,sqlite; '#SQLite' is the tag sqlite)")
    @no_var_expand
    @cell_magic
    @usage_errors
    def decision(self, line: str = "", cell: str = "") -> Decision:
        """Log a design decision: the first line of the cell is the decision, the rest its rationale.

        Prints one line (``✔ logged decision dec_… Use SQLite WAL mode [user]``; in a notebook the decision in
        full is one click away) and returns the stored Decision.

        Examples
        --------
        ::

            %%decision --tags storage,sqlite
            Use SQLite WAL mode
            Readers never block writers, and the notebook and the CLI write at the same time.
        """
        try:
            args = parse_line(self.decision.parser, line)
        except UsageError as exc:  # e.g. --rationale x: the rationale is the cell's (review 68)
            raise UsageError(f"{exc}; %%decision takes only --tags: the cell's first line is the decision, the lines "
                             "under it its rationale") from None
        text, rationale = split_decision_cell(cell)
        d = self.writable_vault().decide(text, rationale=rationale, tags=split_list(args.tags))
        return confirmed("logged decision", d, self.synapse.fresh)
