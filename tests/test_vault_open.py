"""open_vault: where the vault lives (git root, worktrees, folder, SYNAPSE_HOME, vault folder) and the SQLite setup."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.store.sqlite import SCHEMA_VERSION
from synapse_nb.vault.locate import find_vault_dir

FTS_TABLES = {"memories_fts", "checkpoints_fts", "decisions_fts", "lessons_fts", "episodes_fts", "notes_fts"}


@pytest.fixture(autouse=True)
def _no_synapse_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)


def test_vault_at_git_work_tree_root_from_a_subfolder(git_repo: Path) -> None:
    sub = git_repo / "src" / "pkg"
    sub.mkdir(parents=True)
    v = syn.open_vault(sub)
    assert v.path == (git_repo / ".synapse").resolve()
    assert (git_repo / ".synapse" / "synapse.db").is_file()
    assert not (sub / ".synapse").exists()
    v.close()


def test_default_path_is_cwd(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(git_repo)
    with syn.open_vault() as v:
        assert v.path == (git_repo / ".synapse").resolve()


def test_worktrees_share_one_vault(git_repo: Path, git, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(git_repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    main = syn.open_vault(git_repo)
    other = syn.open_vault(wt)
    assert other.path == main.path == (git_repo / ".synapse").resolve()
    m = main.remember("project", "shared_fact", "seen from both work trees")
    assert other.memories.get(m.id).content == "seen from both work trees"
    assert not (wt / ".synapse").exists()
    # each work tree still sees its own branch
    assert main.checkpoint("on main").branch == "main"
    assert other.checkpoint("on feature").branch == "feature"
    main.close()
    other.close()


def test_outside_git_the_folder_itself(tmp_path: Path) -> None:
    proj = tmp_path / "plain"
    proj.mkdir()
    with syn.open_vault(proj) as v:
        assert v.path == (proj / ".synapse").resolve()
        assert v.repo is None


def test_synapse_home_names_a_project_like_vault(tmp_path: Path, git_repo: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """SYNAPSE_HOME means what a path means: a project folder, whose vault is .synapse/ in it (outside git)."""
    home = tmp_path / "elsewhere"
    home.mkdir()
    monkeypatch.setenv("SYNAPSE_HOME", str(home))
    monkeypatch.chdir(git_repo)
    with syn.open_vault() as v:
        assert v.path == (home / ".synapse").resolve()
        v.remember("knowledge", "where", "in SYNAPSE_HOME")
    assert (home / ".synapse" / "synapse.db").is_file()
    assert not (home / "synapse.db").exists()
    assert not (git_repo / ".synapse").exists()


def test_vault_folder_passed_directly(tmp_path: Path, git_repo: Path) -> None:
    with syn.open_vault(git_repo) as v:
        m = v.remember("knowledge", "direct", "open me by my folder")
    # the .synapse folder itself
    with syn.open_vault(git_repo / ".synapse") as v2:
        assert v2.path == (git_repo / ".synapse").resolve()
        assert v2.memories.get(m.id).key == "direct"
    # any folder holding synapse.db
    other = tmp_path / "custom_vault"
    other.mkdir()
    with syn.open_vault(other / ".synapse") as v3:
        v3.remember("knowledge", "x", "y")
    (other / ".synapse").rename(other / "renamed")
    with syn.open_vault(other / "renamed") as v4:
        assert v4.path == (other / "renamed").resolve()
        assert [x.key for x in v4.memories.list()] == ["x"]


def test_a_database_file_dropped_inside_a_work_tree_with_a_vault_is_not_a_vault(
        tmp_path: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 27: an agent made a vault elsewhere and moved its synapse.db into services/api/; every session started
    there read it: no lesson of the project's, no word of its vault. The current folder holding such a file, inside a
    work tree whose vault exists (a local one, or a team vault's team.toml: review 31), is a project folder; a folder
    named explicitly is what the person named (review 31: a person's second vault in the tree was redirected)."""
    with syn.open_vault(git_repo) as v:
        v.decide("Payments keep their idempotency keys")
    (tmp_path / "made").mkdir()
    elsewhere = tmp_path / "made" / ".synapse"
    with syn.open_vault(elsewhere) as planted:
        planted.decide("Billing retries without idempotency keys are fine now")
    sub = git_repo / "services" / "api"
    sub.mkdir(parents=True)
    (elsewhere / "synapse.db").rename(sub / "synapse.db")
    monkeypatch.chdir(sub)
    with syn.open_vault() as v:
        assert v.path == (git_repo / ".synapse").resolve()
        assert [d.decision for d in v.decisions.list()] == ["Payments keep their idempotency keys"]
    assert find_vault_dir() == ((git_repo / ".synapse").resolve(), sub.resolve())
    # named explicitly, it is the vault the person named
    with syn.open_vault(sub) as v:
        assert v.path == sub.resolve()
        assert [d.decision for d in v.decisions.list()] == ["Billing retries without idempotency keys are fine now"]
    # a team project's vault is its team.toml (no synapse.db at the root)
    team = tmp_path / "team_repo"
    team.mkdir()
    subprocess.run(["git", "init", "-q", str(team)], check=True)
    (team / ".synapse").mkdir()
    (team / ".synapse" / "team.toml").write_text('url = "postgresql://a@db/x?project=p"\n', encoding="utf-8")
    (team / "api").mkdir()
    (sub / "synapse.db").rename(team / "api" / "synapse.db")
    monkeypatch.chdir(team / "api")
    assert find_vault_dir()[0] == (team / ".synapse").resolve()


def test_an_agent_hook_reads_the_work_trees_vault_not_its_folders(git_repo: Path, tmp_path: Path) -> None:
    """A hook's session folder (the event's cwd) holding a dropped synapse.db: the hook reads the project's vault."""
    from synapse_nb.agents.events import HookEvent
    from synapse_nb.agents.handlers import handle

    with syn.open_vault(git_repo) as v:
        les = v.lessons.create("Payments keep their idempotency keys", branch=None)
        v.lessons.approve(les.id, text="Payments keep their idempotency keys")
    (tmp_path / "made").mkdir()
    with syn.open_vault(tmp_path / "made" / ".synapse") as planted:
        planted.decide("Billing retries without idempotency keys are fine now")
    sub = git_repo / "services" / "api"
    sub.mkdir(parents=True)
    (tmp_path / "made" / ".synapse" / "synapse.db").rename(sub / "synapse.db")
    event = HookEvent(name="session-start", session="s1", cwd=str(sub), source="startup")
    answer = handle(event, env={})
    assert "Payments keep their idempotency keys" in answer.context, answer.context


def test_sqlite_setup(vault: syn.Vault) -> None:
    con = sqlite3.connect(vault.db_path)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert names >= FTS_TABLES
        sql = {r[0]: r[1] for r in con.execute("SELECT name, sql FROM sqlite_master WHERE name LIKE '%_fts'")}
        for t in FTS_TABLES:
            assert "fts5" in sql[t].lower()
    finally:
        con.close()
    assert vault.status().schema_version == SCHEMA_VERSION


def test_reopen_keeps_data_and_schema(tmp_path: Path) -> None:
    with syn.open_vault(tmp_path) as v:
        m = v.remember("identity", "name", "Ada")
    with syn.open_vault(tmp_path) as v:
        assert v.memories.get(m.id).content == "Ada"


def test_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    with syn.open_vault(tmp_path) as v:
        db = v.db_path
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    before = db.read_bytes()
    with pytest.raises(syn.SchemaError, match="newer"):
        syn.open_vault(tmp_path)
    assert db.read_bytes() == before


def test_corrupt_db_is_a_store_error(tmp_path: Path) -> None:
    d = tmp_path / ".synapse"
    d.mkdir()
    (d / "synapse.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(syn.StoreError) as ei:
        syn.open_vault(d)
    assert isinstance(ei.value, OSError)


def test_readonly_refuses_writes(tmp_path: Path) -> None:
    with syn.open_vault(tmp_path) as v:
        v.remember("knowledge", "k", "v")
        before = v.export_jsonl()
    with syn.open_vault(tmp_path, readonly=True) as ro:
        assert [m.key for m in ro.memories.list()] == ["k"]
        with pytest.raises(syn.StoreError):
            ro.remember("knowledge", "k2", "v2")
    with syn.open_vault(tmp_path) as v:
        assert v.export_jsonl() == before


@pytest.mark.parametrize("mind", ["", "has space", "-lead", "x" * 65, "ü"])
def test_bad_mind_refused(tmp_path: Path, mind: str) -> None:
    with pytest.raises(syn.ValidationError):
        syn.open_vault(tmp_path, mind=mind)


def test_bad_actor_refused(tmp_path: Path) -> None:
    with pytest.raises(syn.ValidationError, match="actor"):
        syn.open_vault(tmp_path, actor="admin")


def test_repr_and_identity(vault: syn.Vault) -> None:
    assert vault.mind == "default" and vault.actor == "user"
    a = vault.as_agent()
    assert a.actor == "agent" and a.path == vault.path
    assert "agent" in repr(a)
    other = vault.with_mind("research")
    assert other.mind == "research" and other.actor == "user"
