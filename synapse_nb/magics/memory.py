"""``%remember`` and ``%memory``: write a memory; look after the vault (status, search, expiry, verify)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from synapse_nb.errors import OfflineError
from synapse_nb.magics._base import FamilyMagics, confirmed, usage_errors
from synapse_nb.magics._parse import parse_line, split_line, split_list, split_options
from synapse_nb.models import Memory, RecordList, Status
from synapse_nb.people import People

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.follow import VerifyReport
    from synapse_nb.offline import StaleAnswer

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
    @line_magic
    @usage_errors
    def remember(self, line: str = "") -> Memory:
        """Remember something under CATEGORY/KEY (stored again under the same key, it is updated in place).

        Memories written here are the user's: verified, confidence 1.0. Prints one line (``✔ remembered mem_…
        procedure/run_migrations [user · verified]``; in a notebook the memory in full is one click away) and
        returns the Memory (``m = %remember ...``).

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
    @argument("rest", nargs="*", help="search: the query; verify: a memory id or prefix")
    @argument("--within", default="7d", help="expiring: how far ahead (default 7d)")
    @argument("-n", "--limit", type=int, default=20, help="expiring: at most this many, people's first (0: all)")
    @argument("--tag", help="search: only memories with this tag")
    @argument("--category", help="search: only this category")
    @argument("--fix", action="store_true", help="verify without ID: follow renames, mark dangling/stale records")
    @line_magic
    @usage_errors
    def memory(self, line: str = "") -> Status | RecordList[Memory] | StaleAnswer | VerifyReport | Memory | None:
        """Look after the vault: counts, search, what expires soon, pruning, verifying.

        Examples
        --------
        ::

            %memory status                    # counts per kind, pending lessons, what expires soon
            %memory search migrations --tag db
            %memory expiring --within 14d     # people's first, then agents', 20 at most (-n 0: all)
            %memory prune                     # delete expired memories, mark expired lessons
            %memory verify mem_3f9a           # a human confirms an agent's memory (one line; returns it)
            %memory verify                    # check every file reference against git HEAD
            %memory verify --fix              # follow renames, mark dangling and possibly stale records
        """
        args = parse_line(self.memory.parser, line)
        rest = " ".join(args.rest).strip()
        if args.action == "search":
            found = self.synapse.readable_vault()
            if not found.offline:
                try:
                    return found.memories.search(rest, tag=args.tag, category=args.category)
                except OfflineError as exc:  # the server went away since the vault was opened
                    found = self.synapse.stale_copy(exc)
            if args.tag is not None or args.category is not None:  # the stale copy of an unreachable team vault
                raise UsageError("--tag and --category need the server (the offline copy holds text only)")
            return found.search(rest)
        v = self.vault
        if args.action == "status":
            return v.status()
        if args.action == "expiring":  # (review 73: behind 250 agents' memories, the person's came 250th)
            shown = People.of(v.memories.expiring(within=args.within), args.limit or None, "memory", "memories")
            listed = RecordList(shown.records)
            listed.note = shown.more or None  # what the limit left out, under the listing
            return listed
        if args.action == "prune":
            print(v.prune())
            return None
        if not rest:
            return v.verify(fix=args.fix)
        if len(args.rest) != 1:
            raise UsageError("%memory verify takes one memory id (or unique prefix), e.g. %memory verify mem_3f9a, "
                             "or nothing to check file references")
        return confirmed("verified", v.memories.verify(rest), self.synapse.fresh)
