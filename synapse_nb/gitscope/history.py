"""Reading a repository's history with few git processes: the tips to walk from, one ``git log`` over a window
of commits, which branch reaches each commit (from the parent graph, in Python), diffstats of chosen commits and
commits looked up by id. :mod:`synapse_nb.gitscope.reverts` recognises reverts in what this reads.

Commit times are read as they are between 1970 and 2100 and clamped outside (a crafted commit's date never stops a
scan).

>>> iso_time(0), iso_time(10**30)
('1970-01-01T00:00:00Z', '2100-01-01T00:00:00Z')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from synapse_nb.errors import GitError
from synapse_nb.gitscope._git import run_git
from synapse_nb.gitscope.repo import RepoInfo, head

__all__ = ["LOG_FORMAT", "CommitInfo", "RawCommit", "branch_masks", "branches_of", "decode", "diffstats",
           "existing_commits", "iso_time", "parse_raw_commit", "read_commits", "tips", "walk"]

#: What ``git log`` prints per commit in a walk: sha, parents, author, committer time, subject, body.
#: The fixed fields first (hex, spaces, digits: never a separator), then the committer's words, which may hold any
#: byte but NUL (review 19: an author named "bot\x1fx" before the time made every later scan fail).
LOG_FORMAT = "%H%x1f%P%x1f%ct%x1f%an <%ae>%x1f%s%x1f%B"
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


def tips(repo: RepoInfo) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    """Commit shas to walk from, and which local / remote branch names sit at each."""
    out = run_git(
        repo,
        "for-each-ref",
        "--format=%(objectname)%00%(objecttype)%00%(*objectname)%00%(*objecttype)%00%(refname)",
        "refs/heads",
        "refs/remotes",
        "refs/tags",
    )
    tips: set[str] = set()
    local: dict[str, list[str]] = {}
    remote: dict[str, list[str]] = {}
    for line in decode(out).split("\n"):  # not splitlines: git allows U+2028 and U+0085 in a branch's name (review 31:
        # "main<U+2028>x" was read as the branch main, and its revert approved for every branch)
        parts = line.split("\0")
        if len(parts) != 5:
            continue
        sha, otype, peeled, ptype, ref = parts
        if otype == "tag":
            if ptype != "commit":
                continue
            sha = peeled
        elif otype != "commit":
            continue
        tips.add(sha)
        if ref.startswith("refs/heads/"):
            local.setdefault(sha, []).append(ref[len("refs/heads/") :])
        elif ref.startswith("refs/remotes/") and not ref.endswith("/HEAD"):
            remote.setdefault(sha, []).append(ref[len("refs/remotes/") :])
    state = head(repo)
    if state.commit is not None:
        tips.add(state.commit)
    return sorted(tips), local, remote


def existing_commits(repo: RepoInfo, names: list[str]) -> list[str]:
    """The subset of ``names`` that are commits in the repository (``git log ^missing`` is fatal)."""
    if not names:
        return []
    out = run_git(
        repo,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        input="".join(f"{n}\n" for n in names).encode(),
    )
    kept = []
    for name, line in zip(names, decode(out).split("\n"), strict=False):
        parts = line.split()
        if len(parts) == 2 and parts[1] == "commit":
            kept.append(name)
    return kept


def walk(repo: RepoInfo, tips: list[str], since: list[str], max_commits: int) -> list[RawCommit]:
    stdin = "".join(f"{t}\n" for t in tips) + "".join(f"^{s}\n" for s in since)
    out = run_git(
        repo,
        "log",
        "--stdin",
        "--ignore-missing",
        "--date-order",
        "-z",
        f"--max-count={max_commits}",
        f"--format={LOG_FORMAT}",
        input=stdin.encode(),
    )
    commits: list[RawCommit] = []
    for record in out.split(b"\0"):
        if not record.strip():
            continue
        text = decode(record)
        fixed = text.split("\x1f", 3)
        if len(fixed) < 4 or not _SHA_RE.fullmatch(fixed[0].strip()) or not fixed[2].strip().isdigit():
            if commits:  # a NUL inside the previous commit's message: the rest of its body
                commits[-1] = replace(commits[-1], body=commits[-1].body + "\0" + text)
                continue
            raise GitError(f"unexpected git log output in {repo.work_tree}: {fixed[0][:60]!r}")
        sha, parents, ctime, rest = fixed
        at = rest.find(">\x1f")  # the author ends at its address's ">" (a name may hold the separator)
        author, tail = (rest[:at + 1], rest[at + 2:]) if at >= 0 else rest.partition("\x1f")[::2]
        subject, _, body = tail.partition("\x1f")
        commits.append(RawCommit(sha.strip(), tuple(parents.split()), author, int(ctime), subject, body))
    return commits


def branch_masks(
    commits: list[RawCommit], local: dict[str, list[str]], remote: dict[str, list[str]]
) -> tuple[dict[str, int], list[str], int]:
    """Reachability of every walked commit from each branch tip, as bitsets.

    ``--date-order`` prints no parent before all its children, so one pass in
    output order propagates each commit's branch bits to its parents.
    """
    names = sorted({n for v in local.values() for n in v}) + sorted(
        {f"\0{n}" for v in remote.values() for n in v}
    )
    bit = {name: 1 << i for i, name in enumerate(names)}
    local_mask = sum(bit[n] for n in names if not n.startswith("\0"))
    masks: dict[str, int] = {}
    for c in commits:
        m = masks.get(c.sha, 0)
        for n in local.get(c.sha, ()):
            m |= bit[n]
        for n in remote.get(c.sha, ()):
            m |= bit[f"\0{n}"]
        masks[c.sha] = m
        for p in c.parents:
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


def parse_raw_commit(sha: str, raw: str) -> CommitInfo:
    header, _, message = raw.partition("\n\n")
    author = date = None
    for line in header.split("\n"):
        if line.startswith("author "):
            m = re.match(r"author (.*) (\d+) [+-]\d{4}$", line)
            if m:
                author = m.group(1)
        elif line.startswith("committer "):
            m = re.match(r"committer .* (\d+) [+-]\d{4}$", line)
            if m:
                date = iso_time(int(m.group(1)))
    first_paragraph = message.strip().split("\n\n", 1)[0] if message.strip() else ""
    subject = " ".join(line.strip() for line in first_paragraph.splitlines())
    return CommitInfo(sha, subject, author, date)


def read_commits(repo: RepoInfo, names: list[str]) -> dict[str, tuple[CommitInfo, str]]:
    """Commit info and the raw commit object's text for ids (full or abbreviated) not in a walked window, in one
    ``git cat-file --batch``; ids that name no commit are left out."""
    if not names:
        return {}
    out = run_git(repo, "cat-file", "--batch", input="".join(f"{n}\n" for n in names).encode())
    found: dict[str, tuple[CommitInfo, str]] = {}
    pos = 0
    for name in names:
        end = out.index(b"\n", pos)
        header = decode(out[pos:end]).split()
        pos = end + 1
        if len(header) == 3 and header[2].isdigit():  # "<sha> <type> <size>", else "<name> missing"
            size = int(header[2])
            body = out[pos : pos + size]
            pos += size + 1
            if header[1] == "commit":
                raw = decode(body)
                found[name] = (parse_raw_commit(header[0], raw), raw)
    return found
