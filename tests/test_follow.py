"""Memory follows the code: verify (dangling, renamed, --fix), staleness in recall and status, migration to v2."""

from __future__ import annotations

import sqlite3

import pytest

import synapse_nb as syn
from synapse_nb.follow import paths_in_text
from synapse_nb.gitscope.testing import ScratchRepo


@pytest.fixture()
def repo(tmp_path):
    r = ScratchRepo.init(tmp_path / "proj")
    r.commit_file("src/auth.py", "a\n", "auth")
    r.commit_file("src/pay.py", "p\n", "pay")
    r.commit_file("README.md", "r\n", "readme")
    return r


def _clock_after_commits(repo):
    """A vault clock just after the scratch repo's latest fake commit date (it ticks 60 s per git call)."""
    from datetime import UTC, datetime

    at = datetime.fromtimestamp(1_700_000_000 + repo._tick * 60 + 30, tz=UTC)
    return lambda: at


def _git(repo, *args):
    return repo.git(*args)


def test_paths_in_text():
    assert paths_in_text("Refactor src/auth.py, then README.md; see http://x.org/a and v1.5") == (
        "README.md", "src/auth.py")
    assert paths_in_text("nothing here, 3.14 and e.g. and etc.") == ()
    assert paths_in_text("../../etc/passwd and /etc/shadow") == ()


def test_verify_reports_dangling_and_renamed_and_fix_follows_renames(repo):
    v = syn.open_vault(repo.root, clock=_clock_after_commits(repo))
    ckp = v.checkpoint("auth work", files=["src/auth.py", "src/gone.py"])
    les = v.lessons.create("Reverted pay retries", files=["src/pay.py"])
    _git(repo, "mv", "src/pay.py", "src/payments.py")
    _git(repo, "commit", "-qm", "rename pay")
    report = v.verify()
    assert [(r.id, r.path) for r in report.dangling] == [(ckp.id, "src/gone.py")]
    assert [(r.id, r.path, r.renamed_to) for r in report.renamed] == [(les.id, "src/pay.py", "src/payments.py")]
    assert not report.ok and "src/gone.py" in str(report)
    assert v.lessons.get(les.id).files_affected == ("src/pay.py",)  # report only: nothing changed
    fixed = v.verify(fix=True)
    assert fixed.fixed
    assert v.lessons.get(les.id).files_affected == ("src/payments.py",)
    assert v.flags() == {ckp.id: {"dangling": ["src/gone.py"]}}
    assert ckp.id in v.status().dangling
    assert "files missing at HEAD (names as listed, not anyone's words): \"src/gone.py\"]" in v.recall("auth work").text
    with pytest.raises(syn.PermissionDeniedError):
        v.as_agent().verify(fix=True)


def test_staleness_flags_memories_whose_files_changed_after(repo):
    v = syn.open_vault(repo.root, clock=_clock_after_commits(repo))
    m = v.remember("knowledge", "auth_design", "src/auth.py validates JWT tokens with the shared secret")
    assert "possibly stale" not in v.recall("how does auth validate JWT tokens").text
    sha = repo.commit_file("src/auth.py", "b\n", "change auth")
    text = v.recall("how does auth validate JWT tokens").text
    assert f"possibly stale: its files changed in {sha[:7]}" in text
    assert v.verify().stale == {m.id: (sha,)}
    v.verify(fix=True)
    assert m.id in v.status().possibly_stale


def test_verify_outside_git_says_why(tmp_path):
    v = syn.open_vault(tmp_path)
    with pytest.raises(syn.GitError, match="not inside a git repository"):
        v.verify()


def test_v1_vault_migrates_to_v2_keeping_records(tmp_path):
    from synapse_nb.store import sqlite as store

    path = tmp_path / "old" / "synapse.db"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    for stmt in store._split_sql(store.MIGRATIONS[0]):
        conn.execute(stmt)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at) VALUES "
                 "('note_0123456789ab', 'default', 'n', 't', 'b', 'user', '2026-01-01T00:00:00.000000Z', "
                 "'2026-01-01T00:00:00.000000Z')")
    conn.commit()
    conn.close()
    v = syn.open_vault(path.parent)
    assert v._store.schema_version == store.SCHEMA_VERSION
    assert v.notes.expand("n") == "b"
    assert v.flags() == {}


def test_lessons_in_force_are_scoped_to_current_and_default_branch(repo):
    v = syn.open_vault(repo.root, clock=_clock_after_commits(repo))
    ids = {}
    for name, branch in (("main", "main"), ("feature", "feature"), ("other", "other"), ("none", None)):
        les = v.lessons.create(f"Reverted {name}", branch=branch)
        ids[name] = v.lessons.approve(les.id).id
    on_main = {x.id for x in v.lessons.in_force()}
    assert on_main == {ids["main"], ids["none"]}
    repo.git("checkout", "-q", "-b", "feature")
    assert {x.id for x in v.lessons.in_force()} == {ids["main"], ids["feature"], ids["none"]}
    assert "Reverted feature" in v.recall("anything").text and "Reverted other" not in v.recall("anything").text
    assert {x.id for x in v.lessons.in_force("other")} == {ids["main"], ids["other"], ids["none"]}



def test_nothing_an_agents_shell_does_to_refs_removes_the_trunks_lessons(repo):
    """Review 12: the default branch was origin's HEAD whenever that ref existed, with or without an origin remote:
    an agent's ``git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/feature`` took every lesson a person
    approved on main out of the banner on every other branch (the SessionStart hook, recall, the pack), and deleting
    main would have too. main and master are trunks whatever the refs say; origin's HEAD adds its branch."""
    v = syn.open_vault(repo.root, clock=_clock_after_commits(repo))
    on_main = v.lessons.approve(v.lessons.create("Reverted the payments retry", branch="main").id).id
    on_dev = v.lessons.approve(v.lessons.create("Reverted the dev hack", branch="dev").id).id
    repo.git("checkout", "-q", "-b", "feature")
    assert on_main in {x.id for x in v.lessons.in_force()}
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/feature")
    assert on_main in {x.id for x in v.lessons.in_force()}
    assert "Reverted the payments retry" in v.recall("payments retry").text
    repo.git("branch", "-D", "main")
    assert on_main in {x.id for x in v.lessons.in_force()}
    # a trunk of another name counts through origin's HEAD (which an agent's shell can repoint: docs/architecture.md)
    assert on_dev not in {x.id for x in v.lessons.in_force()}
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/dev")
    assert on_dev in {x.id for x in v.lessons.in_force()}


def test_a_trunk_a_person_names_holds_whatever_the_refs_say(repo):
    """A trunk not named main or master counted only through origin's HEAD, which an agent's shell repoints: setting
    ``trunk_branches`` (human-only) names it: its lessons hold on every branch, a revert on it is scoped to it."""
    v = syn.open_vault(repo.root, clock=_clock_after_commits(repo))
    repo.git("checkout", "-q", "-b", "develop")
    repo.write("src/pay.py", "p\nretry = 3\n")
    repo.git("commit", "-qam", "Add retry to payments")
    repo.git("revert", "--no-edit", "HEAD")
    repo.git("branch", "0")  # an agent's ref at the same commit
    with pytest.raises(syn.PermissionDeniedError):
        v.as_agent().settings.set("trunk_branches", "0")
    with pytest.raises(syn.ValidationError, match="git branch name"):
        v.settings.set("trunk_branches", "develop, bad name?")
    assert v.settings.set("trunk_branches", "develop,release") == ("develop", "release")
    (les,) = v.lessons.scan()
    assert les.branch == "develop"  # not "0", not every branch
    v.lessons.approve(les.id, accept_agent_text=True)
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/feature")
    assert [x.id for x in v.lessons.in_force()] == [les.id]
    again = syn.open_vault(repo.root, clock=_clock_after_commits(repo))
    assert [x.id for x in again.lessons.in_force()] == [les.id]  # read back from the vault
    v.settings.set("trunk_branches", [])
    assert list(v.lessons.in_force()) == []
