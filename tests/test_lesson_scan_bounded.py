"""Whether a lesson is in a revert scan's words is decided in a bounded number of template builds (review 75 F2,
reproduced).

An agent login's own SQL on a team vault stored pending lessons whose summaries repeated " and N more" 2,400 times,
with 100 reverted commits and 500 diffstat rows: ``scan_worded`` took every " and N more" as a count and built a
summary for each pair of them (2 x K**2 calls of ``summary_parts``), and the person's ``lessons review`` took 515 s to
show the first lesson. Now a count is read only where git's template puts one, and a summary longer than any scan
writes is not read at all. Counted in calls, never in time.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb._util import MAX_FILES
from synapse_nb.gitscope import reverts
from synapse_nb.gitscope.history import CommitInfo
from synapse_nb.kinds import lesson_scan
from synapse_nb.kinds.lesson_scan import MAX_REVERTED, scan_worded

Git = Callable[..., str]
#: summary_parts calls one decision may make: one of the rows kept and at most four count pairs, for each verb
BOUND = 10


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times ``summary_parts`` is called (scan_worded imports it from reverts when it runs)."""
    made = [0]
    real = reverts.summary_parts

    def counted(*args: Any, **kwargs: Any) -> tuple[str, str]:
        made[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(reverts, "summary_parts", counted)
    yield made


def _fields(summary: str) -> dict[str, Any]:
    """A lesson as the agent's SQL stored it: as many commits and rows as a lesson keeps, a summary of its own."""
    return {"summary": summary, "revert_commit": {"sha": "e59a8b5", "subject": 'Revert "x"'},
            "reverted_commits": [{"sha": f"{i:07x}", "subject": "s"} for i in range(MAX_REVERTED)],
            "diffstat": [[f"f{i}.py", 0, 1] for i in range(MAX_FILES)],
            "files_affected": [f"f{i}.py" for i in range(MAX_FILES)]}


def test_a_summary_repeating_and_n_more_is_decided_in_a_bounded_number_of_builds(calls: list[int]) -> None:
    # short enough to be read (under SUMMARY_MAX): 230 counts took 2 x 231**2 = 106,722 builds before
    short = "Reverted x" + "".join(f" and {i} more" for i in range(230))
    assert len(short) <= reverts.SUMMARY_MAX
    assert scan_worded(_fields(short)) is False
    assert 0 < calls[0] <= BOUND
    # the review's: thousands of counts, 32 KB; longer than any scan writes, so not built at all
    calls[0] = 0
    long = "Reverted x" + "".join(f" and {i} more" for i in range(2400))
    assert scan_worded(_fields(long)) is False
    assert calls[0] == 0


def test_the_longest_summary_a_scan_writes_is_within_the_bound_and_in_its_words() -> None:
    """Every text cut to its most and written in the most characters _quote uses; the largest numbers."""
    worst = "\x01" * 80  # each character written as \\u0001
    reverted = tuple(CommitInfo(f"{i:040x}", worst) for i in range(MAX_REVERTED + 50))
    diffstat = tuple((f"{i:04d}" + worst, 10**9, 10**9) for i in range(MAX_FILES + 50))
    summary = reverts._summary(CommitInfo("f" * 40, worst), reverted, (worst, worst), diffstat, False,
                               count=9_999_999)
    assert len(summary) <= reverts.SUMMARY_MAX
    fields = {"summary": summary, "revert_commit": {"sha": "f" * 40, "subject": worst},
              "reverted_commits": [{"sha": c.sha, "subject": c.subject} for c in reverted[:MAX_REVERTED]],
              "diffstat": [list(row) for row in diffstat[:MAX_FILES]],
              "files_affected": [p for p, _, _ in diffstat[:MAX_FILES]]}
    assert scan_worded(fields) is True
    # the count said is taken as said, but never fewer than the commits the lesson keeps
    assert scan_worded({**fields, "summary": summary.replace(" and 9999997 more", " and 97 more")}) is False


def test_a_real_scans_summary_counting_more_commits_and_files_is_still_its_words(
        git_repo: Path, git: Git, monkeypatch: pytest.MonkeyPatch, calls: list[int]) -> None:
    for var in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "SYNAPSE_ACTOR", "SYNAPSE_HOME"):
        monkeypatch.delenv(var, raising=False)
    n = MAX_FILES + 7
    for i in range(n):
        (git_repo / f"f{i:04d}.txt").write_text(f"{i}\n", encoding="utf-8")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "fixtures and 1 more and 2 more and 3 more and 4 more")  # quoted in the summary
    target = git(git_repo, "rev-parse", "HEAD").strip()
    git(git_repo, "revert", "--no-commit", "HEAD")
    rng = random.Random(75)
    others = "".join(f"This reverts commit {rng.getrandbits(40):010x}.\n" for _ in range(MAX_REVERTED + 30))
    git(git_repo, "commit", "-q", "-m", f"Revert the fixtures\n\nThis reverts commit {target}.\n{others}")
    with syn.open_vault(git_repo) as v:
        (les,) = v.lessons.scan()
        assert len(les.reverted_commits) == MAX_REVERTED and len(les.diffstat) == MAX_FILES
        assert f" and {MAX_REVERTED + 31 - 2} more " in les.summary, les.summary
        assert les.summary.endswith(f" and {n - 3} more files"), les.summary
        calls[0] = 0
        assert scan_worded(les.to_dict()) is True
        assert calls[0] <= BOUND
        assert v.lessons.backing(les).startswith("found by a revert scan;")
        assert v.lessons.waiting_by() == {"git": 1, "agent": 0, "user": 0}
        # a count said anywhere but where the template puts it is not taken
        moved = les.summary.replace(f" and {n - 3} more files", f" and {n - 3} more files and 1 more")
        assert scan_worded({**les.to_dict(), "summary": moved}) is False


def test_counts_are_read_only_where_the_template_says_them() -> None:
    said = lesson_scan._counts_said("Reverted x and 5 more and 6 more", "Reverted x and 98 more", "touched", True,
                                    True)
    assert said == [(0, 0), (7, 0)]  # no files count at the end ("6 more" is not "N more files")
