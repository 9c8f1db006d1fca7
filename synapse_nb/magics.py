"""IPython magics: ``%load_ext synapse_nb`` puts checkpoints, decisions, lessons and recall one line away.

Magics (``%magic?`` shows each one's full help)::

    %checkpoint create --doing "..." [--files a.py,b.py] [--next-step "..."] [--blockers "..."]
    %checkpoint list | restore [latest|ID] | auto on|off [--every N]
    %recall QUERY [--session S | --all] [--budget N] [--explain]
    %%decision [--tags a,b]            first line = decision, the rest = rationale
    %remember CATEGORY KEY CONTENT [--tags a,b] [--priority high] [--expires 30d]
    %memory status | search Q | expiring [--within 7d] | prune | verify [ID] [--fix]
    %%episode TASK_KEY                 run the cell, log the run (success/failure, duration)
    %lessons                           the LessonReview widget: approve or reject lessons from reverts
    %synapse                           which vault, mind, actor and settings are in use

Settings (``%config SynapseMagics.<name> = value``): ``vault_path``, ``mind``, ``session``,
``lesson_expiry_days`` (written to the vault), ``auto_checkpoint_every``, ``default_budget``.

Reading magics (``%recall``, ``%memory``, ``%checkpoint list|restore``, ``%lessons``) never create a
vault; writing ones create it inside an existing folder and say where on stderr, once.

The magics act as the human user (``actor="user"``). Every mistake in a magic line and every
:class:`~synapse_nb.errors.SynapseError` becomes a one-line ``UsageError``; an error raised by the
code of a ``%%episode`` cell is logged and re-raised unchanged.

Examples
--------
In IPython or Jupyter::

    %load_ext synapse_nb
    %checkpoint create --doing "Refactoring JWT auth" --files src/auth.py --next-step "Run pytest"
    %remember procedure run_migrations alembic upgrade head --tags db
    r = %recall how do we run migrations?
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.utils.process import arg_split
from traitlets import Int, TraitError, Unicode, observe, validate

from synapse_nb._magics_core import (
    AutoCheckpoint,
    default_session_id,
    git_changed_files,
    keep_recall_questions,
    parse_switch,
    split_decision_cell,
    split_list,
    split_options,
)
from synapse_nb._util import plural
from synapse_nb.errors import NoCheckpointError, SynapseError

__all__ = ["SynapseMagics", "load_ipython_extension", "unload_ipython_extension"]

F = TypeVar("F", bound=Callable[..., Any])


def _usage_errors(func: F) -> F:
    """Turn every SynapseError into ``UsageError`` itself (the shell prints exactly that type as one line)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SynapseError as exc:
            raise UsageError(f"{exc}") from None

    return wrapper  # type: ignore[return-value]


def _split(line: str) -> list[str]:
    """Split a magic line like a shell (quotes group words); an unbalanced quote splits on spaces only."""
    try:
        return arg_split(line, posix=True, strict=True)
    except ValueError:  # e.g. an apostrophe in "how's": keep every character
        return line.split()


def _parse(magic: Callable[..., Any], line: str) -> Any:
    """Parse a magic line with the method's ``@argument`` parser.

    Quotes group words (``--doing "two words"``); a lone apostrophe (``how's``) is kept as text
    instead of failing; options and positional words may be mixed in any order.
    """
    argv = _split(line)
    parser = magic.parser  # type: ignore[attr-defined]
    try:
        return parser.parse_intermixed_args(argv)
    except TypeError:  # argparse refuses intermixed parsing for some layouts
        return parser.parse_args(argv)


_SHOWN_TYPES: dict[type, type] = {}


def _display_unless_fresh(self: Any) -> None:
    if getattr(self, "_synapse_fresh", False):
        return
    from IPython.display import display

    display(getattr(self, "_synapse_original"))


def _shown_once(obj: Any, tracker: list[Any], *, show: bool = True) -> Any:
    """Display ``obj`` now (unless ``show=False``) and return a twin not displayed again as this cell's output.

    So ``%recall q`` shows the recall once, and ``r = %recall q`` shows it *and* binds it. From the
    next cell on, the twin displays like the original (``post_run_cell`` clears the flag). The twin is
    an instance of a subclass of the original's type, so ``isinstance`` and every attribute work.
    An object that cannot be twinned is returned as it is (then shown by the cell's output only).
    """
    import copy

    base = type(obj)
    try:
        sub = _SHOWN_TYPES.get(base)
        if sub is None:
            sub = type(base.__name__, (base,), {"_ipython_display_": _display_unless_fresh,
                                                "__module__": base.__module__, "__qualname__": base.__qualname__})
            _SHOWN_TYPES[base] = sub
        twin = copy.copy(obj)
        object.__setattr__(twin, "__class__", sub)
        object.__setattr__(twin, "_synapse_fresh", True)
        object.__setattr__(twin, "_synapse_original", obj)
    except (TypeError, AttributeError):
        return obj
    if show:
        from IPython.display import display

        display(obj)
    tracker.append(twin)
    return twin


@magics_class
class SynapseMagics(Magics):
    """The synapse_nb magics; one instance per shell holds the vault handle and notebook state.

    Settings are traitlets, so ``%config SynapseMagics.lesson_expiry_days = 14`` works.
    """

    vault_path = Unicode(None, allow_none=True, help=(
        "Vault or project folder to use; None means SYNAPSE_HOME if set, else the current folder "
        "(the vault is .synapse/ at its git root)."
    )).tag(config=True)
    mind = Unicode("default", help="Which mind's records the magics read and write.").tag(config=True)
    session = Unicode(None, allow_none=True, help=(
        "Recall session id (what this notebook already received is not repeated); None means one "
        "stable id per kernel."
    )).tag(config=True)
    lesson_expiry_days = Int(None, allow_none=True, help=(
        "Days an approved lesson stays in force; setting it writes the vault's lesson_expiry_days. "
        "None means: leave the vault's value as it is."
    )).tag(config=True)
    auto_checkpoint_every = Int(None, allow_none=True, help=(
        "Automatic checkpoint every N executed cells that changed something; None means the vault's "
        "auto_checkpoint_every setting (default 10)."
    )).tag(config=True)
    default_budget = Int(None, allow_none=True, help=(
        "Token budget for %recall when --budget is not given; None means the recall default."
    )).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        self._vault: Any = None
        self._session_auto: str | None = None
        self._auto = AutoCheckpoint()
        self._fresh: list[Any] = []
        self._shadowed: dict[str, dict[str, Any]] = {}
        super().__init__(shell=shell, **kwargs)

    # -- state --------------------------------------------------------------------------------------------
    @property
    def vault(self) -> Any:
        """The vault the magics read (opened on first use, as the user actor).

        Reading never creates a vault: with none yet this raises ``VaultNotFoundError`` (a magic shows
        it as one line). Writing magics use :meth:`writable_vault`, which creates it.
        """
        return self._open_vault(create=False)

    def writable_vault(self) -> Any:
        """The vault for a write: created inside an existing folder when there is none (said once on stderr)."""
        return self._open_vault(create=True)

    def _open_vault(self, *, create: bool) -> Any:
        if self._vault is None:
            from synapse_nb.vault import open_vault

            v = open_vault(self.vault_path or None, mind=self.mind, actor="user", create=create)
            if v.created:
                print(f"synapse_nb: created a new vault at {v.path}", file=sys.stderr)
            self._vault = v
            if self.lesson_expiry_days is not None:
                v.settings.set("lesson_expiry_days", self.lesson_expiry_days)
        return self._vault

    @property
    def session_id(self) -> str:
        """The recall session of this notebook: the ``session`` setting, else one id per kernel."""
        if self.session:
            return self.session
        if self._session_auto is None:
            self._session_auto = default_session_id()
        return self._session_auto

    def close(self) -> None:
        if self._vault is not None:
            self._vault.close()
            self._vault = None

    @observe("vault_path", "mind")
    def _reopen(self, change: Any) -> None:
        self.close()

    @validate("lesson_expiry_days")
    def _check_expiry(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is None:
            return value
        try:
            return self.writable_vault().settings.set("lesson_expiry_days", value)
        except SynapseError as exc:
            raise TraitError(f"lesson_expiry_days: {exc}") from None

    @validate("auto_checkpoint_every")
    def _check_every(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is not None and not 1 <= value <= 100_000:
            raise TraitError(f"auto_checkpoint_every must be from 1 to 100000 cells, got {value}")
        return value

    def _every(self) -> int:
        if self.auto_checkpoint_every is not None:
            return int(self.auto_checkpoint_every)
        return int(self.vault.settings.get("auto_checkpoint_every"))

    # -- events -------------------------------------------------------------------------------------------
    def post_run_cell(self, result: Any) -> None:
        """IPython ``post_run_cell`` hook: end the cell's display suppression; count auto-checkpoint cells."""
        for obj in self._fresh:
            try:
                object.__setattr__(obj, "_synapse_fresh", False)
            except (TypeError, AttributeError):
                pass
        self._fresh.clear()
        if not self._auto.enabled:
            return
        try:
            self._auto.every = self._every()
            success = bool(getattr(result, "success", True))
            changed = self._changed_files()
            if self._auto.observe(success=success, changed=changed):
                n = self._auto.every
                files = changed or []
                self.writable_vault().checkpoint(
                    f"auto checkpoint after {plural(n, 'cell')} that changed something", files=files,
                    next_step=None, origin="auto")
        except Exception as exc:  # a hook must never break the user's cell
            print(f"synapse_nb: auto checkpoint skipped: {exc}")

    def _changed_files(self) -> list[str] | None:
        repo = self.vault.repo
        if repo is None:
            return None
        return git_changed_files(repo.work_tree, exclude=self.vault.path)

    # -- %checkpoint --------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("action", choices=["create", "list", "restore", "auto"], help="what to do")
    @argument("target", nargs="?", default=None,
              help="restore: 'latest' (default) or a checkpoint id / prefix; auto: 'on' or 'off'")
    @argument("--doing", help="create: what you are working on (required)")
    @argument("--files", help="create: changed files, comma-separated (a.py,b.py)")
    @argument("--next-step", dest="next_step", help="create: what to do next")
    @argument("--blockers", help="create: what is in the way")
    @argument("--branch", help="list: only this git branch (default: every branch)")
    @argument("--limit", type=int, default=20, help="list: at most this many (default 20)")
    @argument("--every", type=int, help="auto: checkpoint every N executed cells that changed something")
    @line_magic
    @_usage_errors
    def checkpoint(self, line: str = "") -> Any:
        """Save, list and restore work state; switch automatic checkpoints on or off.

        Examples
        --------
        ::

            %checkpoint create --doing "Refactoring JWT auth" --files src/auth.py,tests/test_auth.py \\
                --next-step "Run pytest" --blockers "CI is red on main"
            %checkpoint list
            %checkpoint restore            # the newest checkpoint on the current git branch
            %checkpoint restore ckp_3f9a   # an id or unique prefix
            c = %checkpoint restore        # prints the restore text and keeps the Checkpoint
            %checkpoint auto on --every 5  # a checkpoint every 5 cells that change files (git status)
            %checkpoint auto off

        Checkpoints made here have origin "notebook"; automatic ones have origin "auto". Inside git an
        automatic checkpoint counts only cells that ran without error while git reports changed files
        (the vault folder excepted); outside git it counts cells that ran without error.
        """
        args = _parse(self.checkpoint, line)
        if args.action == "create":
            if args.target is not None:
                raise UsageError(f"unexpected {args.target!r}: use %checkpoint create --doing \"...\"")
            if not args.doing:
                raise UsageError('%checkpoint create needs --doing "what you are working on"')
            return self.writable_vault().checkpoint(args.doing, files=split_list(args.files), next_step=args.next_step,
                                blockers=args.blockers, origin="notebook")
        if args.action == "list":
            return self.vault.checkpoints.list(branch=args.branch, limit=args.limit)
        if args.action == "restore":
            try:
                ckp = self.vault.checkpoints.restore(args.target or "latest")
            except NoCheckpointError as exc:
                raise UsageError(exc.with_remedy('%checkpoint create --doing "what you are working on"')) from None
            print(ckp.restore_text())
            return _shown_once(ckp, self._fresh, show=False)
        # auto
        if args.target is None:
            print(self._auto.describe())
            return None
        on = parse_switch(args.target)
        if args.every is not None:
            self._auto.set_every(args.every)
            self.auto_checkpoint_every = args.every
        where = ""
        if on:  # automatic checkpoints are writes: the vault is created if needed
            v = self.writable_vault()
            where = "git status of " + str(v.repo.work_tree) if v.repo is not None else "cells (no git repository)"
        self._auto.enabled = on
        self._auto.count = 0
        if on:
            self._auto.every = self._every()
        print(self._auto.describe() + (f"; watching {where}" if on else ""))
        return None

    # -- %recall ------------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("query", nargs="*", help="what you want to remember (free text, no quotes needed)")
    @argument("--session", help="recall session id (default: one per notebook kernel)")
    @argument("--all", action="store_true", dest="no_session",
              help="no session: show everything that clears the bars, even what this notebook already saw")
    @argument("--budget", type=int, help="token budget of the recall text")
    @argument("--explain", action="store_true",
              help="show each candidate's score, matched terms and the bar that kept or dropped it")
    @line_magic
    @_usage_errors
    def recall(self, line: str = "") -> Any:
        """Recall what the vault knows about QUERY: approved lessons first, then what clears the gate.

        Displays the recall and returns it, so ``r = %recall ...`` keeps it (``r.text`` is the plain text
        for an LLM, ``r.items`` the hits, ``r.explain()`` the scores). Within one notebook kernel the
        session is stable, so a second recall shows only what changed ("nothing new" otherwise, with the
        reason: nothing relevant, all already given to this notebook, or relevant items over the budget).

        Examples
        --------
        ::

            %recall how do we run migrations?
            r = %recall deploy checklist --budget 300
            %recall flaky tests --explain      # also show the gate's table
            %recall flaky tests --all          # ignore what this notebook already received
            %recall deploy --session review-1  # a named session
        """
        args = _parse(self.recall, line)
        query = " ".join(args.query).strip()
        if not query:
            raise UsageError("%recall needs a query, e.g. %recall how do we run migrations?")
        if args.no_session and args.session:
            raise UsageError("use either --session NAME or --all, not both")
        session = None if args.no_session else (args.session or self.session_id)
        budget = args.budget if args.budget is not None else self.default_budget
        kwargs: dict[str, Any] = {"session": session}
        if budget is not None:
            kwargs["budget_tokens"] = budget
        recall_fn = getattr(self.vault, "recall", None)
        if recall_fn is None:
            raise UsageError("recall is not available in this version of synapse_nb")
        r = recall_fn(query, **kwargs)
        if args.explain:
            from IPython.display import display

            table = r.explain()
            display({"text/plain": str(table), "text/html": table._repr_html_()}, raw=True)
        shown = _shown_once(r, self._fresh)
        if getattr(r, "empty_reason", None) == "over_budget":
            print(f"hint: raise the budget (it was {r.bars.budget_tokens}): %recall {query} --budget N, "
                  "or %config SynapseMagics.default_budget = N")
        return shown

    # -- %%decision ---------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("--tags", help="comma-separated tags, one word each (storage,sqlite; '#SQLite' is the tag sqlite)")
    @cell_magic
    @_usage_errors
    def decision(self, line: str = "", cell: str = "") -> Any:
        """Log a design decision: the first line of the cell is the decision, the rest its rationale.

        Returns the stored Decision (shown as the cell's output).

        Examples
        --------
        ::

            %%decision --tags storage,sqlite
            Use SQLite WAL mode
            Readers never block writers, and the notebook and the CLI write at the same time.
        """
        args = _parse(self.decision, line)
        text, rationale = split_decision_cell(cell)
        return self.writable_vault().decide(text, rationale=rationale, tags=split_list(args.tags))

    # -- %remember ----------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("category", help="identity, preference, project, context, knowledge, mistake, procedure or relationship")
    @argument("key", help="snake_case key; remembering the same key again updates that memory")
    @argument("content", nargs="+", help="the text (free words, no quotes needed; other --words are kept)")
    @argument("--tags", help="comma-separated tags, one word each (db,deploy; '#DB' is the tag db)")
    @argument("--priority", help="critical, high, normal (default) or low")
    @argument("--expires", help="a duration such as 30d or 12h, or an ISO 8601 time")
    @line_magic
    @_usage_errors
    def remember(self, line: str = "") -> Any:
        """Remember something under CATEGORY/KEY (stored again under the same key, it is updated in place).

        Memories written here are the user's: verified, confidence 1.0. Returns the Memory.

        Words of the content may look like options (``python clean.py --wave 2025``): only
        ``--tags``, ``--priority`` and ``--expires`` are read as options, and after ``--`` nothing is.

        Examples
        --------
        ::

            %remember procedure run_migrations alembic upgrade head --tags db,deploy
            %remember procedure clean_survey python clean.py --wave 2025 --tags data
            %remember project project_status v1.5 deployed --priority high
            %remember context sprint_goal Ship the importer --expires 14d
        """
        opts, words = split_options(_split(line), ("--tags", "--priority", "--expires"))
        if len(words) < 3:
            raise UsageError("usage: %remember CATEGORY KEY CONTENT [--tags a,b] [--priority high] [--expires 30d]")
        category, key, content = words[0], words[1], " ".join(words[2:])
        tags = split_list(opts["--tags"]) if "--tags" in opts else None
        return self.writable_vault().remember(category, key, content, tags=tags, priority=opts.get("--priority"),
                                   expires=opts.get("--expires"))

    # -- %memory ------------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("action", choices=["status", "search", "expiring", "prune", "verify"], help="what to do")
    @argument("rest", nargs="*", help="search: the query; verify: a memory id or prefix")
    @argument("--within", default="7d", help="expiring: how far ahead (default 7d)")
    @argument("--tag", help="search: only memories with this tag")
    @argument("--category", help="search: only this category")
    @argument("--fix", action="store_true", help="verify without ID: follow renames, mark dangling/stale records")
    @line_magic
    @_usage_errors
    def memory(self, line: str = "") -> Any:
        """Look after the vault: counts, search, what expires soon, pruning, verifying.

        Examples
        --------
        ::

            %memory status                    # counts per kind, pending lessons, what expires soon
            %memory search migrations --tag db
            %memory expiring --within 14d
            %memory prune                     # delete expired memories, mark expired lessons
            %memory verify mem_3f9a           # a human confirms an agent's memory
            %memory verify                    # check every file reference against git HEAD
            %memory verify --fix              # follow renames, mark dangling and possibly stale records
        """
        args = _parse(self.memory, line)
        v = self.vault
        rest = " ".join(args.rest).strip()
        if args.action == "status":
            return v.status()
        if args.action == "search":
            return v.memories.search(rest, tag=args.tag, category=args.category)
        if args.action == "expiring":
            return v.memories.expiring(within=args.within)
        if args.action == "prune":
            print(v.prune())
            return None
        if not rest:
            return v.verify(fix=args.fix)
        if len(args.rest) != 1:
            raise UsageError("%memory verify takes one memory id (or unique prefix), e.g. %memory verify mem_3f9a, "
                             "or nothing to check file references")
        return v.memories.verify(rest)

    # -- %%episode ----------------------------------------------------------------------------------------
    @magic_arguments()
    @argument("task_key", help="what this cell does, e.g. train_baseline (a rerun surfaces the prior run)")
    @cell_magic
    def episode(self, line: str = "", cell: str = "") -> Any:
        """Run the cell and log the run as an episode of TASK_KEY (status, duration, outcome).

        If TASK_KEY ran before, a warning names the prior run first; it never blocks. A cell that
        raises is logged with status "failure" and the error as outcome, then the error is re-raised
        unchanged. The value of the cell's last expression is its output, as usual.

        Examples
        --------
        ::

            %%episode train_baseline
            model = train(data)
            model.score(valid)
        """
        try:
            args = _parse(self.episode, line)
            v = self.writable_vault()
            task_key = args.task_key
            prior = v.episodes.last(task_key)
        except SynapseError as exc:
            raise UsageError(str(exc)) from None
        if prior is not None:
            from synapse_nb.models import Episode

            probe = Episode(id="", mind=v.mind, created_at="", updated_at="", task_key=task_key, prior=prior)
            print(f"warning: {probe.warning}")
        start = time.perf_counter()
        try:
            value = self._run_cell_body(cell)
        except BaseException as exc:
            duration = time.perf_counter() - start
            outcome = f"{type(exc).__name__}: {exc}"[:2000]
            try:
                v.episodes.log(task_key, status="failure", outcome=outcome, duration_s=duration)
            except SynapseError as log_exc:
                print(f"synapse_nb: the run could not be logged: {log_exc}")
            raise
        duration = time.perf_counter() - start
        try:
            v.episodes.log(task_key, status="success", duration_s=duration)
        except SynapseError as exc:
            raise UsageError(f"the cell ran but its episode could not be logged: {exc}") from None
        return value

    def _run_cell_body(self, cell: str) -> Any:
        """Run cell code in the user namespace (IPython syntax allowed); return the last expression's value."""
        import ast

        shell = self.shell
        src = shell.transform_cell(cell) if shell is not None else cell
        tree = ast.parse(src, filename="<episode cell>", mode="exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        ns = shell.user_ns if shell is not None else {}
        exec(compile(tree, "<episode cell>", "exec"), ns)
        if last is not None:
            return eval(compile(last, "<episode cell>", "eval"), ns)
        return None

    # -- %lessons, %synapse -------------------------------------------------------------------------------
    @line_magic
    @_usage_errors
    def lessons(self, line: str = "") -> Any:
        """Review lessons from reverted changes: approve (with your wording), reject, re-approve expired ones.

        Returns the LessonReview widget (shown as the cell's output). Approving here is the same call as
        ``vault.lessons.approve(id, text=...)``.

        Examples
        --------
        ::

            %lessons
            w = %lessons     # keep the widget, e.g. w.refresh()
        """
        if line.strip():
            raise UsageError(f"%lessons takes no arguments, got {line.strip()!r}")
        from synapse_nb.widgets import LessonReview

        return LessonReview(self.vault)

    @line_magic
    @_usage_errors
    def synapse(self, line: str = "") -> None:
        """Show which vault, mind, actor, session and settings the magics use.

        Examples
        --------
        ::

            %synapse
            %config SynapseMagics.mind = "research"   # switch mind (the vault is reopened)
            %config SynapseMagics.lesson_expiry_days = 14
        """
        if line.strip():
            raise UsageError(f"%synapse takes no arguments, got {line.strip()!r}")
        print(self.describe())

    def describe(self) -> str:
        """The text ``%synapse`` prints (it never creates the vault: before the first write it says so)."""
        from synapse_nb.errors import VaultNotFoundError
        from synapse_nb.gitscope.repo import find_repo
        from synapse_nb.vault import SETTINGS, find_vault_dir

        try:
            v = self.vault
            path, project, repo, settings = v.path, v.project_dir, v.repo, v.settings.as_dict()
            mind, actor, note = v.mind, v.actor, ""
        except VaultNotFoundError:
            path, project = find_vault_dir(self.vault_path or None)
            repo = find_repo(project)
            settings = {k: SETTINGS[k][0] for k in sorted(SETTINGS)}
            mind, actor, note = self.mind, "user", " (none yet: the first write creates it)"
        lines = [
            f"vault    {path}{note}",
            f"project  {project}" + (f" (git work tree {repo.work_tree})" if repo is not None else " (no git)"),
            f"mind     {mind}",
            f"actor    {actor}",
            f"session  {self.session_id}",
            "vault settings: " + ", ".join(f"{k}={settings[k]}" for k in sorted(settings)),
            "magic settings: " + ", ".join(f"{k}={getattr(self, k)!r}" for k in (
                "vault_path", "mind", "session", "lesson_expiry_days", "auto_checkpoint_every", "default_budget")),
            self._auto.describe(),
        ]
        return "\n".join(lines)


_INSTANCES: dict[int, SynapseMagics] = {}


def load_ipython_extension(ip: Any) -> None:
    """Register the magics on ``ip`` (an instance: it holds the vault and notebook state)."""
    if id(ip) in _INSTANCES:  # %load_ext twice, or %reload_ext: keep one instance, one hook
        unload_ipython_extension(ip)
    magics = SynapseMagics(shell=ip)
    table = ip.magics_manager.magics
    # IPython has its own %recall (alias %rep, history); ours shadows it while loaded, unload restores it
    magics._shadowed = {kind: {name: table[kind][name] for name in magics.magics[kind] if name in table[kind]}
                        for kind in magics.magics}
    ip.register_magics(magics)
    ip.events.register("post_run_cell", magics.post_run_cell)
    if keep_recall_questions not in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.append(keep_recall_questions)
    _INSTANCES[id(ip)] = magics


def unload_ipython_extension(ip: Any) -> None:
    """Remove the magics and the post_run_cell hook; close the vault."""
    magics = _INSTANCES.pop(id(ip), None)
    if magics is None:
        return
    try:
        ip.events.unregister("post_run_cell", magics.post_run_cell)
    except ValueError:
        pass
    while keep_recall_questions in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(keep_recall_questions)
    registry = ip.magics_manager.magics
    for kind, table in magics.magics.items():
        for name in list(table):
            if registry[kind].get(name) == table[name]:
                del registry[kind][name]
                previous = magics._shadowed.get(kind, {}).get(name)
                if previous is not None:
                    registry[kind][name] = previous
    if magics in getattr(ip, "configurables", []):
        ip.configurables.remove(magics)
    magics.close()
