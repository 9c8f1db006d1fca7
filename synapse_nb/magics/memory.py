"""``%remember`` and ``%memory``: write a memory; look after the vault (status, search, expiry, verify)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from synapse_nb.context import require_human
from synapse_nb.differences import shown_memory
from synapse_nb.errors import ConflictError, OfflineError
from synapse_nb.magics._base import FamilyMagics, confirmed, shown_once, usage_errors
from synapse_nb.magics._parse import all_is_zero, parse_line, split_line, split_list, split_options
from synapse_nb.models import Memory, RecordList, Status
from synapse_nb.people import People
from synapse_nb.render import shown_id

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.follow import VerifyReport
    from synapse_nb.offline import StaleAnswer
    from synapse_nb.vault import Vault

__all__ = ["MemoryMagics"]

#: The options of ``%remember``; any other ``--word`` is part of the content.
REMEMBER_OPTIONS = ("--tags", "--priority", "--expires")


@magics_class
class MemoryMagics(FamilyMagics):
    """``%remember CATEGORY KEY CONTENT`` and ``%memory status | search | expiring | prune | verify``."""

    @magic_arguments()
    @argument("category", help="identity, preference, project, context, knowledge, mistake, procedure or relationship")
    @argument("key", help="snake_case key; remembering the same key again updates that memory")
    @argument("content", nargs="+", help="the text (free words, no quotes needed; other --words are kept)")
    @argument("--tags", help="comma-separated tags, one word each (db,deploy; '#DB' is the tag db)")
    @argument("--priority", help="critical, high, normal (default) or low")
    @argument("--expires", help="a duration such as 30d or 12h, or an ISO 8601 time")
    @no_var_expand
    @line_magic
    @usage_errors
    def remember(self, line: str = "") -> Memory:
        """Remember something under CATEGORY/KEY (stored again under the same key, it is updated in place).

        Memories written here are the user's: verified, confidence 1.0. Prints one line (``✔ remembered mem_…
        procedure/run_migrations [user · verified]``; in a notebook the memory in full is one click away) and
        returns the Memory (``m = %remember ...``). On a team vault, an update of another person's verified memory
        adds a line under it: whose version it replaced and the command that restores it (``m.note``).

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
        opts, words = split_options(split_line(line), REMEMBER_OPTIONS)
        if len(words) < 3:
            raise UsageError("usage: %remember CATEGORY KEY CONTENT [--tags a,b] [--priority high] [--expires 30d]")
        category, key, content = words[0], words[1], " ".join(words[2:])
        tags = split_list(opts["--tags"]) if "--tags" in opts else None
        m = self.writable_vault().remember(category, key, content, tags=tags, priority=opts.get("--priority"),
                                           expires=opts.get("--expires"))
        return confirmed("updated" if m.created_at != m.updated_at else "remembered", m, self.synapse.fresh)

    @magic_arguments()
    @argument("action", choices=["status", "search", "expiring", "prune", "verify"], help="what to do")
    @argument("rest", nargs="*", default=[], help=(
        "search: the query (needed unless --tag or --category is given, as by synapse-nb memory search); verify: a "
        "memory id or prefix"))
    @argument("--within", default="7d", help="expiring: how far ahead (default 7d)")
    @argument("-n", "--limit", type=int, default=20, help="expiring: at most this many, people's first (0: all)")
    @argument("--tag", help="search: only memories with this tag")
    @argument("--category", help="search: only this category")
    @argument("--fix", action="store_true", help="verify without ID: follow renames, mark dangling/stale records")
    @argument("--yes", action="store_true",
              help="verify ID: verify the agent's memory as the last %%memory verify ID showed it")
    @no_var_expand
    @line_magic
    @usage_errors
    def memory(self, line: str = "") -> Status | RecordList[Memory] | StaleAnswer | VerifyReport | Memory | None:
        """Look after the vault: counts, search, what expires soon, pruning, verifying.

        Verifying an agent's memory takes two steps, as ``synapse-nb memory verify ID`` at a terminal: an agent
        may edit its unverified memory at any time, so ``%memory verify ID`` prints it as stored (its mark,
        priority, text a line each, tags, confidence and expiry) and verifies nothing; ``%memory verify ID --yes``
        then verifies it exactly as printed (one line; returns it). If it changed in between, nothing is verified:
        the new version is printed, and ``--yes`` again verifies that one. A person's memory, or one verified
        already, is verified at once.

        Examples
        --------
        ::

            %memory status                    # counts per kind, pending lessons, what expires soon
            %memory search migrations --tag db
            %memory expiring --within 14d     # people's first, then agents', 20 at most (-n 0: all)
            %memory prune                     # delete expired memories, mark expired lessons
            %memory verify mem_3f9a           # an agent's memory: shown as stored, not verified yet
            %memory verify mem_3f9a --yes     # then verified as shown (one line; returns it)
            %memory verify                    # check every file reference against git HEAD
            %memory verify --fix              # follow renames, mark dangling and possibly stale records
        """
        args = parse_line(self.memory.parser, line)
        rest = " ".join(args.rest).strip()
        if args.yes and (args.action != "verify" or not rest):
            raise UsageError("--yes goes with %memory verify ID: it verifies an agent's memory as %memory verify ID "
                             "showed it")
        if args.action == "search":
            if not rest and args.tag is None and args.category is None:
                raise UsageError("%memory search needs a query (it was empty or blank), e.g. %memory search migrations "
                                 "(or --tag T / --category C alone: every memory with that tag or category)")
            found = self.synapse.readable_vault()
            if not found.offline:
                try:
                    return shown_once(found.memories.search(rest, tag=args.tag, category=args.category),
                                      self.synapse.fresh)
                except OfflineError as exc:  # the server went away since the vault was opened
                    found = self.synapse.stale_copy(exc)
            if args.tag is not None or args.category is not None:  # the stale copy of an unreachable team vault
                raise UsageError("--tag and --category need the server (the offline copy holds text only)")
            return shown_once(found.search(rest), self.synapse.fresh)
        v = self.vault
        if args.action == "status":  # each listing is shown now: a script's (.ipy) cell displays no result
            return shown_once(v.status(), self.synapse.fresh)
        if args.action == "expiring":  # (review 73: behind 250 agents' memories, the person's came 250th)
            shown = People.of(v.memories.expiring(within=args.within), all_is_zero(args.limit), "memory",
                              "memories")
            listed = RecordList(shown.records)
            listed.note = shown.more or None  # what the limit left out, under the listing
            return shown_once(listed, self.synapse.fresh)
        if args.action == "prune":
            print(v.prune())
            return None
        if not rest:
            return shown_once(v.verify(fix=args.fix), self.synapse.fresh)
        if len(args.rest) != 1:
            raise UsageError("%memory verify takes one memory id (or unique prefix), e.g. %memory verify mem_3f9a, "
                             "or nothing to check file references")
        return self._verify(v, rest, yes=args.yes)

    def _verify(self, v: Vault, ref: str, *, yes: bool) -> Memory | None:
        """``%memory verify ID [--yes]``, as ``synapse-nb memory verify ID`` at a terminal: an agent's unverified
        memory is verified only as shown. Without ``--yes`` it is printed (and kept, per id, in
        ``SynapseMagics.to_verify``); with it, exactly what was printed is verified (``seen=``), and a change since is
        refused and printed (review 73: the magic verified whatever was stored, an agent's edit after the person
        read it too). A person's memory, or one verified already, has no agent's edit to bind against: verified at
        once, as the CLI does."""
        mem = v.memories.get(ref)
        shown = self.synapse.to_verify
        if mem.verified or mem.source != "agent":
            shown.pop(mem.id, None)
            return confirmed("verified", v.memories.verify(mem.id), self.synapse.fresh)
        require_human("verify a memory", v.actor)  # in an agent's kernel: refused before anything is shown
        seen = shown.get(mem.id)
        sid = shown_id(mem.id)
        if seen is None or not yes:
            self._show(mem)
            if yes:  # nothing shown yet in this notebook: nothing the person read to verify
                raise UsageError(f"not verified: %memory verify had not shown you {sid} yet; it reads as printed "
                                 f"above, and %memory verify {sid} --yes verifies it as it reads")
            return None
        try:
            m = v.memories.verify(mem.id, seen=seen)
        except ConflictError:
            self._show(v.memories.get(mem.id))
            raise UsageError(f"not verified: {sid} changed after %memory verify showed it to you; it now reads as "
                             f"printed above, and %memory verify {sid} --yes verifies it as it reads now") from None
        shown.pop(mem.id, None)
        return confirmed("verified", m, self.synapse.fresh)

    def _show(self, mem: Memory) -> None:
        """Print all the person verifies of an agent's memory, as the CLI does, and keep what was printed."""
        self.synapse.to_verify[mem.id] = mem
        sid = shown_id(mem.id)
        print(f"{sid} {shown_memory(mem)}\nnot verified yet: an agent may edit its memory at any time, so it is "
              f"verified only as shown; to verify it as it reads above:\n    %memory verify {sid} --yes")
