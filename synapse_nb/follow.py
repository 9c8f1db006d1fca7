"""Memory follows the code: dangling file references, renames, and possibly-stale records.

- :func:`verify` checks every file a lesson, checkpoint, decision or memory refers to at HEAD
  (``synapse_nb.gitscope.check_paths``: one or two git calls for all of them). Renames git knows
  are followed; with ``fix=True`` the file lists of lessons and checkpoints are rewritten to the new
  paths and records with missing files are marked (a ``dangling`` flag, shown by recall and status).
- :func:`stale_commits` says, for records that name files, which commits changed those files after
  the record was last written (one ``git log`` for all of them). Recall and status flag such records
  as *possibly stale* and name the commits.

Paths inside the vault folder (``.synapse/synapse.db``, written into lessons by older versions that let
git track the vault) are left out of both: the vault's own files are never a code reference.

Memories and decisions name files in their text; a word counts as a path when it has a known source-file extension
(``src/auth.py``, ``README.md``, ``pyproject.toml``) or a ``/`` between parts that read as a path (``src/app/db``,
``docs/api_v2``), not between two plain words or units (``m/s``, ``I/O``, ``and/or``, ``TCP/IP``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from synapse_nb import history
from synapse_nb._util import parse_ts, plural, shown_id
from synapse_nb.errors import GitError
from synapse_nb.gitscope._git import run_git
from synapse_nb.models import KIND_BY_NAME, kind_of_id
from synapse_nb.provenance import file_names, human_record, inline, mark
from synapse_nb.store.records import View

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["MOST_LINES", "FileRef", "VerifyReport", "paths_in_text", "stale_commits", "verify"]

_EXT = ("py|pyi|ipynb|js|jsx|ts|tsx|md|rst|txt|toml|json|ya?ml|cfg|ini|sql|sh|rs|go|java|kt|c|h|cc|cpp|hpp|rb|php|"
        "css|scss|html|csv|lock|proto|tf")
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|[\w-][\w.-]*\.(?:{_EXT}))(?![\w/-])")
#: two plain words around one slash (``m/s``, ``I/O``, ``and/or``, ``client/server``): prose, not a path
_PROSE_SLASH = re.compile(r"[^\W_]+/[^\W_]+")


def paths_in_text(text: str) -> tuple[str, ...]:
    """File paths a text mentions (sorted, unique): words with a known source extension, or with a ``/`` that
    is not just two plain words or units (``m/s``, ``I/O``, ``and/or``).

    >>> paths_in_text("Refactor src/auth.py and README.md, see https://x.org/a (v1.5)")
    ('README.md', 'src/auth.py')
    >>> paths_in_text("throughput in m/s, I/O bound, and/or slow; see src/app/db and docs/api_v2")
    ('docs/api_v2', 'src/app/db')
    """
    out = set()
    for m in _PATH.finditer(text):
        p = m.group(1).rstrip(".")
        if "://" in text[max(0, m.start() - 8):m.start() + 3] or p.startswith(("http", "www.")):
            continue
        if _PROSE_SLASH.fullmatch(p):
            continue
        if p and not p.startswith("/") and ".." not in p.split("/"):
            out.add(p)
    return tuple(sorted(out))


@dataclass(frozen=True)
class FileRef:
    """One record's reference to one file, and what became of the file."""

    kind: str
    id: str
    path: str
    state: str  # exists | renamed | missing | outside
    renamed_to: str | None = None
    #: the provenance mark of the record (``[agent · unverified]``): an agent wrote the path, and it reads so
    provenance: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The reference as JSON: the path as one quoted line (an agent's record may name any "path")."""
        return {"kind": self.kind, "id": self.id, "provenance": self.provenance, "path": inline(self.path),
                "state": self.state, "renamed_to": None if self.renamed_to is None else inline(self.renamed_to)}

    def record(self) -> str:
        """``checkpoint ckp_… [agent · unverified]``: the record that names the path, and who wrote it."""
        return f"{self.kind} {shown_id(self.id)}" + (f" {self.provenance}" if self.provenance else "")

    def line(self) -> str:
        """``checkpoint ckp_… [agent · unverified]: "<the path>"``: the path quoted as every reader lists a file name
        (:func:`~synapse_nb.provenance.file_names`; review 71: shown bare, it read on as the report's words)."""
        return f"{self.record()}: {file_names([self.path])}"


#: At most this many lines under a verify report's count line: people's records first, then agents' (review 73)
MOST_LINES = 40
#: An agent's record with several missing (or renamed) files is one line naming this many, counting the rest
AGENT_NAMES = 3
#: At most this many commits named on a possibly stale record's line
MOST_COMMITS = 5
#: Where a report's text cut, its every reference is listed
EVERY_REFERENCE = "synapse-nb memory verify --json (in Python, the report's to_dict()) lists every reference"


@dataclass(frozen=True)
class VerifyReport:
    """What ``vault.verify()`` found (and, with ``fix``, changed).

    Its text lists people's records first (:func:`~synapse_nb.provenance.human_record`), each missing or renamed
    file on its line, then agents' records, one line each whatever the number of its files (the first
    :data:`AGENT_NAMES` named, the rest counted), at most :data:`MOST_LINES` lines in all and the rest counted
    (review 73: an agent's 300 checkpoints of 500 missing files each made 150,000 lines, which a notebook drops, the
    person's own dangling reference among them). ``to_dict`` keeps every reference.
    """

    checked: int
    dangling: tuple[FileRef, ...] = ()
    renamed: tuple[FileRef, ...] = ()
    stale: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fixed: bool = False
    #: the ids of the records reported that no person stands behind (an agent's, unverified): listed after people's,
    #: one line each
    agents: frozenset[str] = frozenset()
    #: the provenance mark of each record reported (:func:`~synapse_nb.provenance.mark`), by id
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.dangling or self.renamed or self.stale)

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "ok": self.ok, "fixed": self.fixed,
                "dangling": [r.to_dict() for r in self.dangling], "renamed": [r.to_dict() for r in self.renamed],
                "stale": {k: list(v) for k, v in sorted(self.stale.items())}}

    def __str__(self) -> str:
        head = (f"verified {plural(self.checked, 'file reference')}: {len(self.dangling):,} dangling, "
                f"{len(self.renamed):,} renamed, {plural(len(self.stale), 'record')} possibly stale"
                + (" (fixed: renames followed, dangling marked)" if self.fixed else ""))
        people: list[str] = []
        agents: list[str] = []
        for what, refs in (("missing", self.dangling), ("renamed", self.renamed)):
            for rid, group in _by_record(refs).items():
                if rid in self.agents:
                    agents.append(_record_line(what, group))
                else:
                    people += [_ref_line(what, r) for r in group]
        for rid, shas in sorted(self.stale.items()):
            named = ", ".join(c[:7] for c in shas[:MOST_COMMITS])
            more = f", … {len(shas) - MOST_COMMITS:,} more" if len(shas) > MOST_COMMITS else ""
            who = " ".join(x for x in (kind_of_id(rid), shown_id(rid), self.marks.get(rid, "")) if x)
            (agents if rid in self.agents else people).append(f"  stale?    {who}: changed since by {named}{more}")
        body = people + agents
        if len(body) <= MOST_LINES:
            return "\n".join([head, *body])
        cut = len(body) - MOST_LINES
        whose = "agents' records" if cut <= len(agents) else f"{min(cut, len(agents)):,} of them agents' records"
        return "\n".join([head, *body[:MOST_LINES],
                          f"  … {plural(cut, 'more line')} not shown ({whose}): {EVERY_REFERENCE}"])

    __repr__ = __str__


def _by_record(refs: tuple[FileRef, ...]) -> dict[str, list[FileRef]]:
    out: dict[str, list[FileRef]] = {}
    for r in refs:
        out.setdefault(r.id, []).append(r)
    return out


def _ref_line(what: str, r: FileRef) -> str:
    """One reference of a person's record: its file (and where it went) on its line."""
    if what == "renamed":
        return f"  renamed   {r.line()} -> {file_names([r.renamed_to])}"
    return f"  missing   {r.line()}" + (" (outside the repository)" if r.state == "outside" else "")


def _record_line(what: str, refs: list[FileRef]) -> str:
    """An agent's record's references in one line: how many files, the first few (quoted, as every file name is), the
    rest counted."""
    if len(refs) == 1:
        return _ref_line(what, refs[0])
    first = refs[:AGENT_NAMES]
    if what == "renamed":
        named = ", ".join(f"{file_names([r.path])} -> {file_names([r.renamed_to])}" for r in first)
    else:
        named = file_names([r.path for r in first])
    more = f", … {len(refs) - len(first):,} more" if len(refs) > len(first) else ""
    outside = sum(r.state == "outside" for r in refs)
    return (f"  {what:<9} {refs[0].record()}: {len(refs):,} {what} files: {named}{more}"
            + (f" ({outside:,} outside the repository)" if outside else ""))


#: (kind, id, updated_at, paths) of one record that refers to files
Ref = tuple[str, str, str, tuple[str, ...]]


def _refs(ctx: Context) -> list[Ref]:
    """(kind, id, updated_at, paths) for every record of the mind that refers to files."""
    out: list[Ref] = []
    for src in ctx.store.refs.sources(ctx.mind):
        paths = src.files if src.kind in ("lesson", "checkpoint") else paths_in_text(src.text)
        # the vault's own files (``.synapse/synapse.db``) are never a code reference to check
        paths = tuple(p for p in paths if not ctx.git.in_vault(p))
        if paths:
            out.append((src.kind, src.id, src.updated_at, paths))
    return out


def stale_commits(ctx: Context, items: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, tuple[str, ...]]:
    """{id: shas} for records whose named files changed in commits made after the record was written.

    ``items`` are (id, updated_at, paths). One ``git log`` over HEAD's history covers them all.
    Outside git, or in a repository without commits, nothing is stale.
    """
    repo = ctx.git.repo
    items = [(rid, ts, tuple(p for p in paths if not ctx.git.in_vault(p))) for rid, ts, paths in items]
    items = [x for x in items if x[2]]  # paths inside the vault folder never make a record stale
    if repo is None or not items:
        return {}
    since = min(parse_ts(x[1]).timestamp() for x in items)
    try:
        raw = run_git(repo, "log", "HEAD", f"--since=@{int(since)}", "--no-renames", "--name-only",
                      "--format=%x00%H %ct", "--", ok_codes=(0, 128))
    except GitError:
        return {}
    commits: list[tuple[str, int, set[str]]] = []
    for block in raw.decode("utf-8", "surrogateescape").split("\0")[1:]:
        head, _, rest = block.partition("\n")
        sha, _, ct = head.partition(" ")
        if sha and ct.strip().isdigit():
            commits.append((sha, int(ct), {ln.strip() for ln in rest.split("\n") if ln.strip()}))
    out: dict[str, tuple[str, ...]] = {}
    for rid, updated_at, paths in items:
        written = parse_ts(updated_at).timestamp()
        wanted = set(paths)
        shas = tuple(sha for sha, ct, files in commits if ct > written and files & wanted)
        if shas:
            out[rid] = shas
    return out


def verify(ctx: Context, *, fix: bool = False) -> VerifyReport:
    """See :meth:`synapse_nb.vault.Vault.verify`."""
    repo = ctx.git.repo
    if repo is None:
        raise GitError(f"{ctx.git.project_dir} is not inside a git repository; verify checks file references "
                       "against git HEAD")
    if fix:
        ctx.require_human("rewrite or mark records (verify --fix)")
    refs = _refs(ctx)
    all_paths = sorted({p for _, _, _, ps in refs for p in ps})
    from synapse_nb.gitscope.verify import check_paths  # loads only when there are paths to check

    status = check_paths(repo, all_paths) if all_paths else {}
    stale = stale_commits(ctx, [(rid, ts, ps) for kind, rid, ts, ps in refs
                                 if KIND_BY_NAME[kind].follows_files])
    # who wrote each record reported: its mark is said before its paths, as everywhere, and people's come first
    off = {(kind, rid) for kind, rid, _, ps in refs
           if rid in stale or any(p in status and status[p].state != "exists" for p in ps)}
    records = ctx.stored(rid for _, rid in off)
    marks = {rid: mark(rec) for rid, rec in records.items()}
    dangling: list[FileRef] = []
    renamed: list[FileRef] = []
    for kind, rid, _, paths in refs:
        for p in paths:
            st = status.get(p)
            if st is None or st.state == "exists":
                continue
            ref = FileRef(kind, rid, p, st.state, st.renamed_to, marks.get(rid, ""))
            (renamed if st.state == "renamed" else dangling).append(ref)
    report = VerifyReport(checked=sum(len(ps) for *_, ps in refs), dangling=tuple(dangling),
                          renamed=tuple(renamed), stale=stale, fixed=fix, marks=marks,
                          agents=frozenset(rid for rid, rec in records.items() if not human_record(rec)))
    if fix:
        _apply_fix(ctx, refs, dangling, renamed, stale)
    return report


def _apply_fix(ctx: Context, refs: list[Ref], dangling: list[FileRef], renamed: list[FileRef],
               stale: dict[str, tuple[str, ...]]) -> None:
    moved: dict[str, dict[str, str]] = {}
    for r in renamed:
        moved.setdefault(r.id, {})[r.path] = r.renamed_to or r.path
    missing: dict[str, list[str]] = {}
    for r in dangling:
        missing.setdefault(r.id, []).append(r.path)
    store = ctx.store
    with store.transaction():
        ts = store.stamp(ctx.now_ts())
        for kind, rid, _, paths in refs:
            if rid in moved and kind in ("lesson", "checkpoint"):
                new: list[str] = []
                for p in paths:
                    q = moved[rid].get(p, p)
                    if q not in new:
                        new.append(q)
                before = store.table(kind).get(View(ctx.mind, ""), rid)  # as stored: its history entry's before
                if kind == "lesson":
                    store.lessons.update(rid, updated_at=ts, files_affected=new)
                else:
                    store.checkpoints.update(rid, updated_at=ts, changed_files=new)
                after = store.table(kind).get(View(ctx.mind, ""), rid)
                if before is not None or after is not None:
                    history.record(ctx, "update", before, after, at=ts)
        store.flags.replace(ctx.mind, missing, stale, ts)
