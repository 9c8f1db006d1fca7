"""``%checkpoint``: save, list and restore work state; automatic checkpoints every N cells."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from synapse_nb.errors import NoCheckpointError
from synapse_nb.magics._base import FamilyMagics, confirmed, shown_once, usage_errors
from synapse_nb.magics._parse import all_is_zero, parse_line, parse_switch, split_list
from synapse_nb.models import Checkpoint, RecordList

__all__ = ["CheckpointMagics"]


@magics_class
class CheckpointMagics(FamilyMagics):
    """``%checkpoint create | list | restore | auto``."""

    @magic_arguments()
    @argument("action", choices=["create", "list", "restore", "auto"], help="what to do")
    @argument("target", nargs="?", default=None,
              help="restore: 'latest' (default) or a checkpoint id / prefix; auto: 'on' or 'off'")
    @argument("--doing", help="create: what you are working on (required)")
    @argument("--files", help="create: changed files, comma-separated (a.py,b.py)")
    @argument("--next-step", dest="next_step", help="create: what to do next")
    @argument("--blockers", help="create: what is in the way")
    @argument("--branch", help="list: only this git branch (default: every branch)")
    @argument("-n", "--limit", type=int, default=20, help="list: at most this many (default 20; 0: all)")
    @argument("--every", type=int, help="auto: checkpoint every N executed cells that changed something")
    @no_var_expand
    @line_magic
    @usage_errors
    def checkpoint(self, line: str = "") -> Checkpoint | RecordList[Checkpoint] | None:
        """Save, list and restore work state; switch automatic checkpoints on or off.

        Examples
        --------
        ::

            %checkpoint create --doing "Refactoring JWT auth" --files src/auth.py,tests/test_auth.py \\
                --next-step "Run pytest" --blockers "CI is red on main"
            %checkpoint list               # the 20 newest (--limit 0: all)
            %checkpoint restore            # the newest saved on purpose on this branch, and what came after
            %checkpoint restore ckp_3f9a   # an id or unique prefix
            c = %checkpoint restore        # prints the restore text and keeps the Checkpoint
            %checkpoint auto on --every 5  # a checkpoint every 5 cells that change files (git status)
            %checkpoint auto off
            %checkpoint auto               # is it on, and how many cells are counted so far

        ``create`` prints one line (in a notebook the checkpoint in full is one click away) and returns the
        Checkpoint; ``list`` shows when, who, where and what. Checkpoints made here have origin "notebook";
        automatic ones have origin "auto". Inside git an automatic checkpoint counts only cells that ran without
        error while git reports changed files (the vault folder excepted); outside git it counts cells that ran
        without error. Without ``--every`` the count is ``%config SynapseMagics.auto_checkpoint_cells``, else the
        vault setting ``auto_checkpoint_cells`` (not set: ``auto_checkpoint_every``, 10).
        """
        args = parse_line(self.checkpoint.parser, line)
        if args.action == "create":
            if args.target is not None:
                raise UsageError(f"unexpected {args.target!r}: use %checkpoint create --doing \"...\"")
            if not args.doing:
                raise UsageError('%checkpoint create needs --doing "what you are working on"')
            ckp = self.writable_vault().checkpoint(args.doing, files=split_list(args.files),
                                                   next_step=args.next_step, blockers=args.blockers, origin="notebook")
            return confirmed("saved checkpoint", ckp, self.synapse.fresh)
        if args.action == "list":  # shown now: a script's (.ipy) cell displays no result (review 78)
            listed = self.vault.checkpoints.list(branch=args.branch, limit=all_is_zero(args.limit))
            return shown_once(listed, self.synapse.fresh)
        if args.action == "restore":
            try:
                ckp = self.vault.checkpoints.restore(args.target or "latest")
            except NoCheckpointError as exc:
                raise UsageError(exc.with_remedy('%checkpoint create --doing "what you are working on"')) from None
            print(self.vault.checkpoints.resume(ckp).text)  # what was saved after it, the legend (review 86)
            return shown_once(ckp, self.synapse.fresh, show=False)
        self._auto(args.target, args.every)
        return None

    def _auto(self, switch: str | None, every: int | None) -> None:
        """``%checkpoint auto [on|off] [--every N]``: print the state, or switch it."""
        syn = self.synapse
        auto = syn.auto
        if switch is None:
            print(auto.describe())
            return
        on = parse_switch(switch)
        if every is not None:
            auto.set_every(every)
            syn.auto_checkpoint_cells = every
        where = ""
        if on:  # automatic checkpoints are writes: the vault is created if needed
            v = self.writable_vault()
            where = "git status of " + str(v.repo.work_tree) if v.repo is not None else "cells (no git repository)"
        auto.enabled = on
        auto.count = 0
        if on:
            auto.set_every(syn.cells_per_checkpoint())
        print(auto.describe() + (f"; watching {where}" if on else ""))
