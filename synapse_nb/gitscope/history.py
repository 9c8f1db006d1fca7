"""Reading a repository's history with few git processes: the tips to walk from, the graph of new commits (``git
rev-list``), the raw commits of a window of them (``git cat-file``), which branch reaches each commit (from the parent
graph, in Python), diffstats of chosen commits and commits looked up by id. :mod:`synapse_nb.gitscope.reverts`
recognises reverts in what this reads.

Commit times are read as they are between 1970 and 2100 and clamped outside (a crafted commit's date never stops a
scan).

>>> iso_time(0), iso_time(10**30)
('1970-01-01T00:00:00Z', '2100-01-01T00:00:00Z')
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from synapse_nb.errors import GitError
from synapse_nb.gitscope._git import run_git
from synapse_nb.gitscope.repo import RepoInfo, head

__all__ = ["REFS_FORMAT", "SNAPSHOT_END", "CommitInfo", "RawCommit", "Snapshot", "branch_masks", "branches_of",
           "decode", "diffstats", "existing_commits", "graph", "iso_time", "may_be_reverts", "parse_snapshot",
           "read_commits", "read_window", "real_shallow", "snapshot", "tips"]

_T = TypeVar("_T")
_SHA_RE = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True)
class CommitInfo:
    """One commit, as much as is known about it.

    Attributes
    ----------
    sha : str
        Full sha when the commit exists in the repository, else the id as written in the revert message.
    subject : str or None
        First paragraph of the message on one line; None when the commit is not in the repository.
    author : str or None
        ``"Name <email>"``.
    date : str or None
        Committer date, ISO 8601 in UTC (``2024-03-01T12:00:00Z``).

    Examples
    --------
    >>> CommitInfo("a1b2c3d4e5", "Fix").short
    'a1b2c3d'
    """

    sha: str
    subject: str | None = None
    author: str | None = None
    date: str | None = None

    @property
    def short(self) -> str:
        """The first 7 characters of the sha."""
        return self.sha[:7]

    @property
    def exists(self) -> bool:
        """True when the commit was found in the repository (its subject is known)."""
        return self.subject is not None



@dataclass
class RawCommit:
    sha: str
    parents: tuple[str, ...]
    author: str
    ctime: int
    subject: str
    body: str

    def info(self) -> CommitInfo:
        return CommitInfo(self.sha, self.subject, self.author, iso_time(self.ctime))


#: The commit times a revert scan reads as they are: 1970 .. 2100 (a crafted commit's date outside them, or one no
#: clock can hold, is clamped to the nearer end, so one odd commit never stops a scan).
_T_MIN, _T_MAX = 0, 4_102_444_800


def iso_time(ts: int) -> str:
    """A commit time as ISO 8601 UTC, clamped to 1970..2100.

    >>> iso_time(0), iso_time(-5), iso_time(10**30)
    ('1970-01-01T00:00:00Z', '1970-01-01T00:00:00Z', '2100-01-01T00:00:00Z')
    """
    return datetime.fromtimestamp(min(max(ts, _T_MIN), _T_MAX), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


#: What :func:`tips` and a hook's :class:`Snapshot` read of the refs: ``git for-each-ref --format`` (fields apart by
#: a space, which no ref name holds). Ids and names only: ``%(objecttype)`` and ``%(*objectname)`` open every ref's
#: object, 385 ms a commit with 20,000 tags in a hook's foreground (found by review); :func:`tips` asks their types
#: later, off the commit's path (an object id never changes meaning).
REFS_FORMAT = "%(objectname) %(refname)"
#: The line a hook's script writes after the refs only when ``git for-each-ref`` succeeded: a snapshot without it is
#: none (:func:`parse_snapshot`). No ref line can be it (each starts with an object id and a space). Review 51: the
#: script dropped the listing's failure, and a snapshot holding HEAD and no refs made a lesson "outside any branch"
#: (in force on every branch once approved), silently; a pipe cut short passed part of the refs as all of them.
SNAPSHOT_END = "END"
_REF_KINDS = ("refs/heads", "refs/remotes", "refs/tags")


@dataclass(frozen=True)
class Snapshot:
    """Where HEAD and the refs were when a git hook started: its scan reads history up to there only, so a commit
    made after it (an agent's, in an agent's environment) is left for the next scan, whose own environment decides
    whose it is (a person's detached hook of an earlier commit, run after the agent's, scanned the agent's revert as
    the person's).

    ``head``: HEAD's commit (None: unborn); ``refs``: ``git for-each-ref --format=REFS_FORMAT`` output."""

    head: str | None
    refs: str
    #: what one scan worked out from the snapshot (the tips, the shallow boundary): a lesson scan's two passes read
    #: it once (the second pass resolved the refs again: one or two ``cat-file`` calls, up to 24 more with a ref
    #: git cannot read)
    _worked_out: dict[str, Any] = dataclass_field(default_factory=dict, compare=False, repr=False)

    def once(self, name: str, compute: Callable[[], _T]) -> _T:
        """``compute()`` the first time ``name`` is asked of this snapshot, the same value after."""
        if name not in self._worked_out:
            self._worked_out[name] = compute()
        return cast(_T, self._worked_out[name])  # what compute() returned for this name


def snapshot(repo: RepoInfo) -> Snapshot:
    """HEAD and the refs now (a hook run by a script that passed none reads them at its start)."""
    return Snapshot(head(repo).commit, decode(run_git(repo, "for-each-ref", f"--format={REFS_FORMAT}", *_REF_KINDS)))


def parse_snapshot(text: str) -> Snapshot | None:
    """The snapshot a hook's script passes on stdin: a line ``HEAD <sha>`` (empty on an unborn branch), the refs in
    :data:`REFS_FORMAT`, then :data:`SNAPSHOT_END` alone on the last line; None when the text is not one (an old
    script passes nothing or no end line; ``git for-each-ref`` failed; the pipe was cut short): the hook then reads
    the refs itself, and a failure there is logged."""
    first, _, rest = text.partition("\n")
    key, _, sha = first.partition(" ")
    if key != "HEAD" or not (sha == "" or _SHA_RE.fullmatch(sha)):
        return None
    body = rest[:-1] if rest.endswith("\n") else rest  # printf's own newline after the listing
    refs, _, end = body.rpartition("\n") if "\n" in body else ("", "", body)
    if end != SNAPSHOT_END:
        return None
    return Snapshot(sha or None, refs)


#: At most this many ``git cat-file`` calls that fail are made to set aside the refs git cannot read, per scan.
MOST_FAILED_READS = 24


def _commits_of(repo: RepoInfo, ids: set[str]) -> dict[str, str]:
    """The commit each object id of ``ids`` is, or an annotated tag leads to (tags peeled); an id of a tree, a blob,
    a missing object, or one git cannot read, is left out.

    One ``git cat-file --batch-check`` of the ids as they are, then one of the tags among them peeled. git stops a
    whole batch at an object of a type it does not know, and an agent makes one with ordinary commands (``git
    hash-object -t foo --literally``, a tag naming it, ``git update-ref``): one such tag made every scan fail, the
    hook's and the person's (review 52). A batch git stops is halved until the ids it cannot read are set aside, at
    most :data:`MOST_FAILED_READS` failed calls a scan; ids still unread then are left out (only tags in practice: a
    branch names a commit, which the first batch reads whole).
    """
    budget = [MOST_FAILED_READS]
    types = _read_types(repo, sorted(ids), "", budget)
    commits = {n: sha for n, (sha, kind) in types.items() if kind == "commit"}
    tags = sorted(n for n, (_, kind) in types.items() if kind == "tag")
    commits.update({n: sha for n, (sha, kind) in _read_types(repo, tags, "^{}", budget).items() if kind == "commit"})
    return commits


def _read_types(repo: RepoInfo, names: list[str], suffix: str, budget: list[int]) -> dict[str, tuple[str, str]]:
    """``(id, type)`` of ``name + suffix`` for each name git reads, by halves when git stops a batch (see above)."""
    if not names:
        return {}
    try:
        out = run_git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)",
                      input="".join(f"{n}{suffix}\n" for n in names).encode())
    except GitError:
        budget[0] -= 1
        if len(names) == 1 or budget[0] <= 0:
            return {}
        half = len(names) // 2
        return _read_types(repo, names[:half], suffix, budget) | _read_types(repo, names[half:], suffix, budget)
    read: dict[str, tuple[str, str]] = {}
    for name, line in zip(names, decode(out).split("\n"), strict=False):
        parts = line.split(" ")
        if len(parts) == 2 and _SHA_RE.fullmatch(parts[0]):
            read[name] = (parts[0], parts[1])
    return read


def tips(repo: RepoInfo, at: Snapshot | None = None
         ) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    """Commit shas to walk from, and which local / remote branch names sit at each: now, or as ``at`` saw them (worked
    out once a snapshot)."""
    if at is not None:
        return at.once("tips", lambda: _tips(repo, at))
    return _tips(repo, snapshot(repo))


def _tips(repo: RepoInfo, listing: Snapshot) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    refs: list[tuple[str, str]] = []
    for line in listing.refs.split("\n"):  # not splitlines: git allows U+2028 and U+0085 in a branch's name
        # (review 31: "main<U+2028>x" was read as the branch main, and its revert approved for every branch)
        parts = line.split(" ")  # the id first, the name last (a script of the last pass wrote the types between)
        if len(parts) >= 2 and _SHA_RE.fullmatch(parts[0]):
            refs.append((parts[0], parts[-1]))
    commits = _commits_of(repo, {sha for sha, _ in refs})
    tips: set[str] = set()
    local: dict[str, list[str]] = {}
    remote: dict[str, list[str]] = {}
    for sha, ref in refs:
        if sha not in commits:
            continue
        sha = commits[sha]
        tips.add(sha)
        if ref.startswith("refs/heads/"):
            local.setdefault(sha, []).append(ref[len("refs/heads/") :])
        elif ref.startswith("refs/remotes/") and not ref.endswith("/HEAD"):
            remote.setdefault(sha, []).append(ref[len("refs/remotes/") :])
    if listing.head is not None:
        tips.add(listing.head)
    return sorted(tips), local, remote


def existing_commits(repo: RepoInfo, names: list[str]) -> list[str]:
    """The subset of ``names`` that are commits in the repository (``git log ^missing`` is fatal), read as
    :func:`_commits_of` reads the refs (an object git cannot read is left out, not a failure)."""
    read = _read_types(repo, names, "", [MOST_FAILED_READS])
    return [n for n in names if read.get(n, ("", ""))[1] == "commit"]


def real_shallow(repo: RepoInfo) -> list[str]:
    """The commits of ``<git-dir>/shallow`` whose parents are not all in the object store: the boundary of a real
    shallow clone. A line that names a commit whose parents are here (an agent's ``git fetch --depth=1`` in a full
    clone, or one line appended to the file) is no boundary: the scan reads through it (review 45: it hid a pulled
    revert behind the tip, and the scan saved the tip as its place)."""
    path = repo.common_dir / "shallow"
    try:
        names = [n for n in decode(path.read_bytes()).split() if _SHA_RE.fullmatch(n)]
    except OSError:
        return []
    if not names:
        return []
    parents = {sha: c.parents for sha, c in read_commits(repo, names).items()}
    wanted = sorted({p for ps in parents.values() for p in ps})
    present = set(existing_commits(repo, wanted))
    return sorted(n for n in names if n in parents and not set(parents[n]) <= present)


#: What ``git rev-list --grep`` picks as commits that may be reverts (a superset of what the scan recognises, matched
#: in C over the whole new range: review 45), case-insensitively.
_MAY_BE_REVERT = ("--grep=This reverts commit", "--grep=^Revert ", "--grep=^Reapply ")


def may_be_reverts(repo: RepoInfo, tips: list[str], since: list[str], *, shallow_file: str | None = None
                   ) -> list[str]:
    """The commits reachable from ``tips`` and not from ``since`` whose message may make them reverts, asked of git
    (one walk, no commit read in Python): the scan reads every one, whatever window it reads besides."""
    stdin = "".join(f"{t}\n" for t in tips) + "".join(f"^{s}\n" for s in since)
    out = run_git(repo, "rev-list", "--stdin", "--ignore-missing", "--regexp-ignore-case", *_MAY_BE_REVERT,
                  input=stdin.encode(), shallow_file=shallow_file or os.devnull)
    return [i for i in decode(out).split() if _SHA_RE.fullmatch(i)]


def graph(repo: RepoInfo, tips: list[str], since: list[str], *, shallow_file: str | None = None,
          limit: int | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Every commit reachable from ``tips`` and not from ``since``, with its parents, children before parents
    (``git rev-list --topo-order --parents``: ids only, so no committer's words can bend the parse).
    With ``limit``: the first ``limit`` git's walk meets, newest commit date first, read without walking the rest
    (``--topo-order`` walks it all: review 45's 150,000 commits took seconds), in no guaranteed order: sort them with
    :func:`synapse_nb.gitscope.window.merge`.
    ``shallow_file``: the shallow boundary git honours (:func:`real_shallow`'s commits), else none."""
    stdin = "".join(f"{t}\n" for t in tips) + "".join(f"^{s}\n" for s in since)
    order = ("--topo-order",) if limit is None else (f"--max-count={limit}",)
    out = run_git(repo, "rev-list", "--stdin", "--ignore-missing", *order, "--parents",
                  input=stdin.encode(), shallow_file=shallow_file or os.devnull)
    nodes: list[tuple[str, tuple[str, ...]]] = []
    for line in decode(out).split("\n"):
        ids = line.split()
        if ids and all(_SHA_RE.fullmatch(i) for i in ids):
            nodes.append((ids[0], tuple(ids[1:])))
    return nodes


def read_window(repo: RepoInfo, shas: list[str]) -> tuple[list[RawCommit], int]:
    """The commits ``shas`` names, read as git stored them (one ``git cat-file --batch``: :func:`_cat_commits`), in
    that order, and how many could not be read (left out, never merged into another: review 42)."""
    read = _cat_commits(repo, shas)
    commits = [c for c in read if c is not None]
    return commits, len(read) - len(commits)


def read_commits(repo: RepoInfo, names: list[str]) -> dict[str, RawCommit]:
    """The commits ids (full or abbreviated) name, by the id as given, in one ``git cat-file --batch``
    (:func:`_cat_commits`); an id that names no commit, or one that cannot be read, is left out, and so is one git
    resolved to a commit whose id it does not start: git reads a ref before an abbreviated id, so a branch an agent
    named ``ce7e972`` stood in for the person's commit ``ce7e972...`` (review 50)."""
    return {name: c for name, c in zip(names, _cat_commits(repo, names), strict=True)
            if c is not None and c.sha.startswith(name.strip().lower())}


def _cat_commits(repo: RepoInfo, names: list[str]) -> list[RawCommit | None]:
    """The commit each of ``names`` names, read as git stored it (one ``git cat-file --batch``), one entry a name:
    None for a name that names no commit or a commit that cannot be read (one an agent crafted never stops a scan).

    The raw object, not ``git log --format``: git re-encodes a commit whose ``encoding`` header names another charset
    (``git -c i18n.commitEncoding=IBM037 commit``), whole format and all, and one such commit on an agent's branch
    made every later scan fail (review 42). A message is read as UTF-8, else in the charset its header names.
    """
    if not names:
        return []
    out = run_git(repo, "cat-file", "--batch", input="".join(f"{n}\n" for n in names).encode())
    read: list[RawCommit | None] = []
    pos = 0
    for _ in names:
        end = out.find(b"\n", pos)
        header = decode(out[pos:end]).split() if end >= 0 else []
        if len(header) != 3 or not header[2].isdigit():  # "<name> missing", "<name> ambiguous"
            read.append(None)
            pos = end + 1 if end >= 0 else len(out)
            continue
        size = int(header[2])
        body, pos = out[end + 1 : end + 1 + size], end + 2 + size
        try:
            read.append(_raw_commit(header[0], body) if header[1] == "commit" else None)
        except Exception:  # noqa: BLE001 - one commit an agent crafted is skipped and counted, never stops a scan
            read.append(None)
    return read


#: Codecs Python registers as text encodings that are no charset a commit may be written in: ``idna`` and ``punycode``
#: raise on ``errors="replace"`` and ``undefined`` on everything (review 45: one agent commit with ``encoding idna``
#: made every scan fail).
_NOT_A_CHARSET = frozenset({"idna", "punycode", "undefined", "raw-unicode-escape", "unicode-escape"})


def _message_text(data: bytes, charset: str | None) -> str:
    """A message as UTF-8, else in the charset its ``encoding`` header names when that is a real text encoding, else
    UTF-8 with replacement characters: never an exception, whatever the header says."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if charset:
        try:
            info = codecs.lookup(charset)
            if getattr(info, "_is_text_encoding", True) and info.name not in _NOT_A_CHARSET:
                return data.decode(info.name, "replace")
        except (LookupError, UnicodeError, ValueError, TypeError):
            pass
    return decode(data)


def _raw_commit(sha: str, data: bytes) -> RawCommit | None:
    """One commit object parsed; None when it has no readable committer line."""
    head_bytes, _, message = data.partition(b"\n\n")
    message = message.split(b"\0", 1)[0]  # git shows a message up to its first NUL, and so does the scan
    parents: list[str] = []
    author, ctime, charset = "", None, None
    for line in decode(head_bytes).split("\n"):
        key, _, value = line.partition(" ")
        if key == "parent" and _SHA_RE.fullmatch(value):
            parents.append(value)
        elif key == "author":
            m = re.fullmatch(r"(.*) -?\d+ [+-]\d{4}", value)
            author = m.group(1) if m else value
        elif key == "committer":
            m = re.fullmatch(r".* (-?\d+) [+-]\d{4}", value)
            ctime = int(m.group(1)) if m else None
        elif key == "encoding":
            charset = value.strip()
    if ctime is None:
        return None
    body = _message_text(message, charset)
    first_paragraph = body.strip().split("\n\n", 1)[0]
    subject = " ".join(line.strip() for line in first_paragraph.splitlines())
    return RawCommit(sha, tuple(parents), author, ctime, subject, body)


def branch_masks(
    nodes: list[tuple[str, tuple[str, ...]]], local: dict[str, list[str]], remote: dict[str, list[str]]
) -> tuple[dict[str, int], list[str], int]:
    """Reachability of every commit of :func:`graph` from each branch tip, as bitsets.

    ``--topo-order`` prints no parent before all its children, so one pass in
    output order propagates each commit's branch bits to its parents.
    """
    names = sorted({n for v in local.values() for n in v}) + sorted(
        {f"\0{n}" for v in remote.values() for n in v}
    )
    bit = {name: 1 << i for i, name in enumerate(names)}
    local_mask = sum(bit[n] for n in names if not n.startswith("\0"))
    masks: dict[str, int] = {}
    for sha, parents in nodes:
        m = masks.get(sha, 0)
        for n in local.get(sha, ()):
            m |= bit[n]
        for n in remote.get(sha, ()):
            m |= bit[f"\0{n}"]
        masks[sha] = m
        for p in parents:
            masks[p] = masks.get(p, 0) | m
    return masks, names, local_mask


def branches_of(mask: int, names: list[str], local_mask: int) -> tuple[str, ...]:
    chosen = mask & local_mask if mask & local_mask else mask
    return tuple(sorted(n.lstrip("\0") for i, n in enumerate(names) if chosen >> i & 1))


def diffstats(repo: RepoInfo, shas: list[str]) -> dict[str, list[tuple[str, int | None, int | None]]]:
    if not shas:
        return {}
    out = run_git(
        repo,
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "-z",
        "--numstat",
        "--no-renames",
        "--format=%x1e%H",
        input="".join(f"{s}\n" for s in shas).encode(),
    )
    stats: dict[str, list[tuple[str, int | None, int | None]]] = {}
    for chunk in out.split(b"\x1e"):
        if not chunk.strip():
            continue
        fields = chunk.split(b"\0")
        sha = decode(fields[0]).strip()
        rows: list[tuple[str, int | None, int | None]] = []
        for field in fields[1:]:
            text = decode(field).lstrip("\n")
            if not text:
                continue
            added, _, rest = text.partition("\t")
            deleted, _, path = rest.partition("\t")
            rows.append((path, int(added) if added.isdigit() else None, int(deleted) if deleted.isdigit() else None))
        stats[sha] = sorted(rows, key=lambda r: r[0])
    return stats
