"""``%%episode``: run a cell and log the run (status, duration, outcome) under a task key."""

from __future__ import annotations

import ast
import time
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from synapse_nb.errors import SynapseError
from synapse_nb.magics._base import Confirmation, FamilyMagics
from synapse_nb.magics._parse import parse_line

__all__ = ["EpisodeMagics"]

#: Longest outcome text logged for a failed run, in characters.
MAX_OUTCOME = 2000


@magics_class
class EpisodeMagics(FamilyMagics):
    """``%%episode TASK_KEY``."""

    @magic_arguments("%episode")  # the usage line reads %%episode (IPython writes one % before the name)
    @argument("task_key", help="what this cell does, e.g. train_baseline (a rerun surfaces the prior run)")
    @no_var_expand
    @cell_magic
    def episode(self, line: str = "", cell: str = "") -> Any:
        """Run the cell and log the run as an episode of TASK_KEY (status, duration, outcome).

        If TASK_KEY ran before, a warning names the prior run first; it never blocks. Once the run is
        logged, one line confirms it, as every write magic does (``✔ logged episode epi_… [user]
        train_baseline``; in a notebook the episode in full is one click away). A cell that raises is
        logged with status "failure" and the error as outcome (``✔ logged failed episode ...``), then the
        error is re-raised unchanged. The value of the cell's last expression is its output, as usual
        (any type: hence ``Any``).

        Examples
        --------
        ::

            %%episode train_baseline
            model = train(data)
            model.score(valid)
        """
        try:  # not @usage_errors: an error of the cell's own code must reach the user unchanged
            if len(line.split()) > 1:  # argparse said "unrecognized arguments: Key" (review 78)
                raise UsageError(f"%%episode takes one task key, a snake_case word (lower-case letters, digits and "
                                 f"single underscores, e.g. train_baseline), got {line.strip()!r}")
            args = parse_line(self.episode.parser, line)
            v = self.writable_vault()
            task_key = args.task_key
            warning = v.episodes.prior_run_warning(task_key)
            prior = v.episodes.last(task_key) if warning is not None else None
        except SynapseError as exc:
            raise UsageError(str(exc)) from None
        if warning is not None:
            from synapse_nb.recall import with_legend  # recall's legend, on first use

            print(with_legend([prior], f"warning: {warning}"))  # a prior run an agent logged: its words (review 9)
        start = time.perf_counter()
        try:
            value = self._run_cell_body(cell)
        except BaseException as exc:
            duration = time.perf_counter() - start
            # the error's message quotes whatever data the cell read, which anyone may have written (review 47: a
            # file an agent wrote reached recall as the person's outcome, "Per the user (approved in chat): ..."):
            # stored labelled as raised, not as the person's words
            outcome = f"{type(exc).__name__} (its message as raised, not anyone's words): {exc}"[:MAX_OUTCOME]
            try:
                failed = v.episodes.log(task_key, status="failure", outcome=outcome, duration_s=duration)
            except SynapseError as log_exc:
                print(f"synapse_nb: the run could not be logged: {log_exc}")
            else:
                display(Confirmation("logged failed episode", failed))
            raise
        duration = time.perf_counter() - start
        try:
            logged = v.episodes.log(task_key, status="success", duration_s=duration)
        except SynapseError as exc:
            raise UsageError(f"the cell ran but its episode could not be logged: {exc}") from None
        display(Confirmation("logged episode", logged))  # the first run said nothing (review 93), unlike every
        return value  # other write magic; the cell's value stays its output

    def _run_cell_body(self, cell: str) -> Any:
        """Run cell code in the user namespace (IPython syntax allowed); return the last expression's value."""
        shell = self.shell
        src = shell.transform_cell(cell) if shell is not None else cell
        tree = ast.parse(src, filename="<episode cell>", mode="exec")
        last = None
        if tree.body and isinstance(tail := tree.body[-1], ast.Expr):
            tree.body.pop()
            last = ast.Expression(tail.value)
        ns = shell.user_ns if shell is not None else {}
        exec(compile(tree, "<episode cell>", "exec"), ns)
        if last is not None:
            return eval(compile(last, "<episode cell>", "eval"), ns)
        return None
