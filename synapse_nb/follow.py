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

Memories and decisions name files in their text; a word counts as a path when it has a ``/`` or a
known source-file extension (``src/auth.py``, ``README.md``, ``pyproject.toml``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from synapse_nb._util import parse_ts, plural
from synapse_nb.errors import GitError

if TYPE_CHECKING:
    from synapse_nb.vault import Vault

__all__ = ["FileRef", "VerifyReport", "paths_in_text", "stale_commits", "verify"]

_EXT = ("py|pyi|ipynb|js|jsx|ts|tsx|md|rst|txt|toml|json|ya?ml|cfg|ini|sql|sh|rs|go|java|kt|c|h|cc|cpp|hpp|rb|php|"
        "css|scss|html|csv|lock|proto|tf")
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|[\w-][\w.-]*\.(?:{_EXT}))(?![\w/-])")


def paths_in_text(text: str) -> tuple[str, ...]:
    """File paths a text mentions (sorted, unique): words with a ``/`` or a known source extension.

    >>> paths_in_text("Refactor src/auth.py and README.md, see https://x.org/a (v1.5)")
    ('README.md', 'src/auth.py')
    """
    out = set()
    for m in _PATH.finditer(text):
        p = m.group(1).rstrip(".")
        if "://" in text[max(0, m.start() - 8):m.start() + 3] or p.startswith(("http", "www.")):
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

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "path": self.path, "state": self.state,
                "renamed_to": self.renamed_to}


@dataclass(frozen=True)
class VerifyReport:
    """What ``vault.verify()`` found (and, with ``fix``, changed)."""

    checked: int
    dangling: tuple[FileRef, ...] = ()
    renamed: tuple[FileRef, ...] = ()
    stale: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fixed: bool = False

    @property
    def ok(self) -> bool:
        return not (self.dangling or self.renamed or self.stale)

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "ok": self.ok, "fixed": self.fixed,
                "dangling": [r.to_dict() for r in self.dangling], "renamed": [r.to_dict() for r in self.renamed],
                "stale": {k: list(v) for k, v in sorted(self.stale.items())}}

    def __str__(self) -> str:
        lines = [f"verified {plural(self.checked, 'file reference')}: {len(self.dangling)} dangling, "
                 f"{len(self.renamed)} renamed, {plural(len(self.stale), 'record')} possibly stale"
                 + (" (fixed: renames followed, dangling marked)" if self.fixed else "")]
        lines += [f"  missing   {r.kind} {r.id}: {r.path}" + (" (outside the repository)" if r.state == "outside"
                                                                else "") for r in self.dangling]
        lines += [f"  renamed   {r.kind} {r.id}: {r.path} -> {r.renamed_to}" for r in self.renamed]
        lines += [f"  stale?    {rid}: changed since by {', '.join(c[:7] for c in shas)}"
                  for rid, shas in sorted(self.stale.items())]
        return "\n".join(lines)

    __repr__ = __str__


def _refs(v: Vault) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(kind, id, updated_at, paths) for every record of the mind that refers to files."""
    q = v._store.query
    out: list[tuple[str, str, str, tuple[str, ...]]] = []
    for r in q("SELECT id, updated_at, files_affected FROM lessons WHERE mind = ? ORDER BY id", (v.mind,)):
        out.append(("lesson", r["id"], r["updated_at"], tuple(json.loads(r["files_affected"]))))
    for r in q("SELECT id, updated_at, changed_files FROM checkpoints WHERE mind = ? ORDER BY id", (v.mind,)):
        out.append(("checkpoint", r["id"], r["updated_at"], tuple(json.loads(r["changed_files"]))))
    for r in q("SELECT id, updated_at, decision || ' ' || coalesce(rationale, '') AS t FROM decisions "
               "WHERE mind = ? ORDER BY id", (v.mind,)):
        out.append(("decision", r["id"], r["updated_at"], paths_in_text(r["t"])))
    for r in q("SELECT id, updated_at, content FROM memories WHERE mind = ? ORDER BY id", (v.mind,)):
        out.append(("memory", r["id"], r["updated_at"], paths_in_text(r["content"])))
    # the vault's own files (``.synapse/synapse.db``) are never a code reference to check
    out = [(k, i, ts, tuple(p for p in ps if not v._in_vault(p))) for k, i, ts, ps in out]
    return [x for x in out if x[3]]


def stale_commits(v: Vault, items: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, tuple[str, ...]]:
    """{id: shas} for records whose named files changed in commits made after the record was written.

    ``items`` are (id, updated_at, paths). One ``git log`` over HEAD's history covers them all.
    Outside git, or in a repository without commits, nothing is stale.
    """
    repo = v.repo
    items = [(rid, ts, tuple(p for p in paths if not v._in_vault(p))) for rid, ts, paths in items]
    items = [x for x in items if x[2]]  # paths inside the vault folder never make a record stale
    if repo is None or not items:
        return {}
    from synapse_nb.gitscope._git import run_git

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
            commits.append((sha, int(ct), {ln.strip() for ln in rest.splitlines() if ln.strip()}))
    out: dict[str, tuple[str, ...]] = {}
    for rid, updated_at, paths in items:
        written = parse_ts(updated_at).timestamp()
        wanted = set(paths)
        shas = tuple(sha for sha, ct, files in commits if ct > written and files & wanted)
        if shas:
            out[rid] = shas
    return out


def verify(v: Vault, *, fix: bool = False) -> VerifyReport:
    """See :meth:`synapse_nb.vault.Vault.verify`."""
    from synapse_nb.gitscope.verify import check_paths

    repo = v.repo
    if repo is None:
        raise GitError(f"{v.project_dir} is not inside a git repository; verify checks file references against "
                       "git HEAD")
    refs = _refs(v)
    all_paths = sorted({p for _, _, _, ps in refs for p in ps})
    status = check_paths(repo, all_paths) if all_paths else {}
    dangling: list[FileRef] = []
    renamed: list[FileRef] = []
    for kind, rid, _, paths in refs:
        for p in paths:
            st = status.get(p)
            if st is None or st.state == "exists":
                continue
            ref = FileRef(kind, rid, p, st.state, st.renamed_to)
            (renamed if st.state == "renamed" else dangling).append(ref)
    stale = stale_commits(v, [(rid, ts, ps) for kind, rid, ts, ps in refs if kind in ("memory", "decision")])
    report = VerifyReport(checked=sum(len(ps) for *_, ps in refs), dangling=tuple(dangling),
                          renamed=tuple(renamed), stale=stale, fixed=fix)
    if fix:
        _apply_fix(v, refs, dangling, renamed, stale)
    return report


def _apply_fix(v: Vault, refs: list[Any], dangling: list[FileRef], renamed: list[FileRef],
               stale: dict[str, tuple[str, ...]]) -> None:
    from synapse_nb.errors import PermissionDeniedError

    if v.actor != "user":
        raise PermissionDeniedError("an agent may not rewrite or mark records; a human runs verify --fix")
    moved: dict[str, dict[str, str]] = {}
    for r in renamed:
        moved.setdefault(r.id, {})[r.path] = r.renamed_to or r.path
    missing: dict[str, list[str]] = {}
    for r in dangling:
        missing.setdefault(r.id, []).append(r.path)
    with v._store.transaction() as c:
        ts = v._stamp(c)
        for kind, rid, _, paths in refs:
            if rid in moved and kind in ("lesson", "checkpoint"):
                table, col = ("lessons", "files_affected") if kind == "lesson" else ("checkpoints", "changed_files")
                new = []
                for p in paths:
                    q = moved[rid].get(p, p)
                    if q not in new:
                        new.append(q)
                c.execute(f"UPDATE {table} SET {col} = ?, updated_at = ? WHERE id = ?",
                          (json.dumps(new, ensure_ascii=False, sort_keys=True), ts, rid))
                v._touched(kind, rid)
        c.execute("DELETE FROM flags WHERE mind = ?", (v.mind,))
        rows = [(rid, v.mind, "dangling", json.dumps(sorted(ps)), ts) for rid, ps in sorted(missing.items())]
        rows += [(rid, v.mind, "stale", json.dumps(list(shas)), ts) for rid, shas in sorted(stale.items())]
        c.executemany("INSERT INTO flags(rid, mind, flag, detail, updated_at) VALUES (?,?,?,?,?)", rows)
