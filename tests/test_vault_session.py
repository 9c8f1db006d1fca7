"""VaultSession: the one way every surface opens a vault (read or write, notices as data, taking back a new vault).

The surfaces' own tests (test_cli*, test_mcp*, test_magics, test_agent_hooks, test_vault_creation, tests/team) check
what each one prints; these check the session itself: a read never creates, a first write does and says so once,
the take-back removes only an unused vault the session created, SYNAPSE_READONLY, the borrowed notice, and a team
vault whose server cannot be reached (a refused connection on this machine: no network).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.errors import OfflineError, StoreError, ValidationError, VaultNotFoundError
from synapse_nb.gitscope.vaultdir import GITIGNORE_TEXT
from synapse_nb.vault import Notice, VaultSession


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SYNAPSE_HOME", "SYNAPSE_READONLY"):
        monkeypatch.delenv(name, raising=False)


def _session(path: str | Path, said: list[Notice], **kwargs: Any) -> VaultSession:
    return VaultSession(path, on_notice=said.append, **kwargs)


def _kinds(said: list[Notice]) -> list[str]:
    return [n.kind for n in said]


# ------------------------------------------------------------------------------------------------ read, write
def test_a_read_never_creates_a_vault(tmp_path: Path) -> None:
    said: list[Notice] = []
    s = _session(tmp_path, said)
    for read in (s.read, s.read_or_stale):
        with pytest.raises(VaultNotFoundError, match=r"no vault at .*synapse-nb init"):
            read()
    assert os.listdir(tmp_path) == [] and said == [] and s.current is None


def test_the_first_write_creates_the_vault_and_says_so_once(tmp_path: Path) -> None:
    said: list[Notice] = []
    s = _session(tmp_path, said)
    v = s.write()
    vault = (tmp_path / ".synapse").resolve()
    assert v.path == vault and v.created and (vault / "synapse.db").is_file()
    assert said == [Notice("created", f"created a new vault at {vault}", vault)]
    assert said[0].line("synapse-nb") == f"synapse-nb: created a new vault at {vault}"
    assert s.write() is v and s.read() is v and s.read_or_stale() is v  # one handle, said once
    assert s.notices == tuple(said) and s.notice("created") == said[0] and s.notice("borrowed") is None
    s.close()
    assert s.current is None and s.notices == ()
    again = s.write()  # reopened: it exists now, nothing to say
    assert again is not v and not again.created and len(said) == 1
    s.close()


def test_a_write_never_creates_missing_folders(tmp_path: Path) -> None:
    s = VaultSession(tmp_path / "typo" / "deeper")
    with pytest.raises(VaultNotFoundError, match="does not exist"):
        s.write()
    assert os.listdir(tmp_path) == []


def test_create_false_never_creates_even_for_a_write(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError):
        VaultSession(tmp_path, create=False).write()
    assert os.listdir(tmp_path) == []
    syn.open_vault(tmp_path).close()
    with VaultSession(tmp_path, create=False, actor="agent") as s:
        assert s.write().actor == "agent"


def test_mind_and_actor_are_checked_before_anything_opens(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="actor 'root'"):
        VaultSession(tmp_path, actor="root")
    with pytest.raises(ValidationError, match="mind"):
        VaultSession(tmp_path, mind="no spaces")
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------------ taking back
def test_take_back_removes_an_unused_new_vault(tmp_path: Path) -> None:
    said: list[Notice] = []
    s = _session(tmp_path, said)
    vault = s.write().path
    assert s.take_back() is True
    assert os.listdir(tmp_path) == [] and s.current is None
    assert said[-1] == Notice("removed", f"removed the vault it had just created at {vault} (nothing was written)",
                              vault)
    assert s.notices == ()  # the handle is gone, and its notices with it
    assert s.take_back() is False  # nothing left to take back
    s.write().remember("project", "k", "v")  # the next write creates it again
    assert _kinds(said) == ["created", "removed", "created"]
    assert s.take_back() is False and (vault / "synapse.db").is_file()  # something was written: kept
    s.close()


def test_take_back_never_removes_a_vault_it_did_not_create(tmp_path: Path) -> None:
    syn.open_vault(tmp_path).close()
    s = VaultSession(tmp_path)
    s.write()
    assert s.take_back() is False and (tmp_path / ".synapse" / "synapse.db").is_file()
    s.close()


def test_a_setting_counts_as_a_write(tmp_path: Path) -> None:
    s = VaultSession(tmp_path)
    s.write().settings.set("lesson_expiry_days", 14)
    assert s.take_back() is False and (tmp_path / ".synapse" / "synapse.db").is_file()
    s.close()


def test_take_back_keeps_the_users_own_files(tmp_path: Path) -> None:
    folder = tmp_path / ".synapse"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    (folder / ".gitignore").write_text("*.txt\n", encoding="utf-8")
    said: list[Notice] = []
    s = _session(tmp_path, said)
    s.write()
    assert s.take_back() is False  # the folder stays: it holds the user's files
    assert sorted(os.listdir(folder)) == [".gitignore", "notes.txt"] and "removed" not in _kinds(said)
    assert (folder / ".gitignore").read_text(encoding="utf-8") == "*.txt\n"
    assert s.current is None  # the emptied vault's handle is closed, not kept
    with pytest.raises(VaultNotFoundError):
        s.read()


def test_writing_takes_back_the_vault_a_refused_first_write_created(tmp_path: Path) -> None:
    said: list[Notice] = []
    s = _session(tmp_path, said)
    with pytest.raises(ValidationError), s.writing() as v:
        v.remember("project", "Bad Key", "v")
    assert _kinds(said) == ["created", "removed"] and os.listdir(tmp_path) == []
    with s.writing() as v:
        v.remember("project", "good_key", "v")
    with pytest.raises(ValidationError), s.writing() as v:  # not this call's vault: kept
        v.remember("project", "Bad Key", "v")
    assert _kinds(said) == ["created", "removed", "created"]
    assert [m.key for m in s.read().memories.list()] == ["good_key"]
    s.close()


def test_writing_lets_other_errors_through_untouched(tmp_path: Path) -> None:
    s = VaultSession(tmp_path)
    with pytest.raises(KeyError), s.writing():
        raise KeyError("not a SynapseError: no take-back decision is made on it")
    assert (tmp_path / ".synapse" / "synapse.db").is_file()
    s.close()


# ------------------------------------------------------------------------------------------------ read-only
def test_synapse_readonly_opens_read_only_and_never_creates(tmp_path: Path) -> None:
    said: list[Notice] = []
    env = {"SYNAPSE_READONLY": "1"}
    s = _session(tmp_path, said, environ=env)
    assert s.readonly
    with pytest.raises(VaultNotFoundError):
        s.write()  # a read-only session never creates a vault
    assert os.listdir(tmp_path) == []
    VaultSession(tmp_path).write().remember("project", "k", "v")
    v = s.write()  # the read-only handle: the store refuses the write itself
    with pytest.raises(StoreError, match="read-only"):
        v.remember("project", "k2", "v")
    assert said == [Notice("readonly", "the vault is read-only (SYNAPSE_READONLY=1 in the environment): every "
                                       "write is refused", v.path, {"reason": "SYNAPSE_READONLY=1 in the environment"})]
    assert [m.key for m in s.read().memories.list()] == ["k"]
    s.close()
    assert not VaultSession(tmp_path, environ={"SYNAPSE_READONLY": "0"}).readonly
    assert not VaultSession(tmp_path, environ=env, readonly=False).readonly  # a surface may decide for itself
    assert VaultSession(tmp_path, readonly=True).readonly


# ------------------------------------------------------------------------------------------------ borrowed
def test_a_borrowed_vault_is_a_notice_with_its_details(tmp_path: Path, git: Any) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    syn.open_vault(project).close()
    git(project, "add", "-f", ".synapse/synapse.db")
    git(project, "commit", "-q", "-m", "Share our memory")
    (project / ".git" / "synapse-nb" / "vaults.json").unlink()  # as a clone's: no record of this vault as its own
    said: list[Notice] = []
    with _session(project, said, actor="agent") as s:
        v = s.read()
        assert v.borrowed is not None
        assert said == [Notice("borrowed", v.borrowed.line, v.path, v.borrowed.to_dict())]
        assert s.notice("borrowed") == said[0]
        assert said[0].text.startswith('BORROWED VAULT: ".synapse/synapse.db" came with the repository')


def test_a_given_vault_is_served_as_is_and_never_closed(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    said: list[Notice] = []
    s = VaultSession(vault=v, on_notice=said.append)
    assert s.read() is v and s.write() is v and s.current is v and said == []
    s.close()
    assert s.read() is v and v.memories.count() == 0  # still open
    exc = OfflineError("the server went away")
    with pytest.raises(OfflineError) as caught:
        s.stale_copy(exc)
    assert caught.value is exc  # a given vault has no stale copy to fall back to
    v.close()


# ------------------------------------------------------------------------------------------------ offline
URL = "postgresql://nobody@127.0.0.1:1/synapse?project=acme"  # port 1: refused at once, on this machine


@pytest.fixture()
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's cache folder for the team vault (``.synapse/team/<login>@<server>-<project>/``), holding an
    index copy (its contents are never read here)."""
    pytest.importorskip("psycopg", reason="team vaults need synapse_nb[team]")
    from synapse_nb.vault.locate import team_cache_dir

    monkeypatch.chdir(tmp_path)
    folder = team_cache_dir(tmp_path / ".synapse", URL.split("?")[0], "acme")
    (folder / "index").mkdir(parents=True)
    return folder


def test_an_unreachable_team_vault_is_its_stale_copy_only_where_a_read_takes_it(machine: Path) -> None:
    said: list[Notice] = []
    s = _session(URL, said, offline=True)
    copy = s.read_or_stale()
    assert copy.offline and copy.readonly and copy.path == machine
    assert _kinds(said) == ["offline"] and said[0].data["location"] == "127.0.0.1:1/synapse?project=acme"
    assert said[0].text.startswith("the team vault server 127.0.0.1:1/synapse?project=acme cannot be reached (")
    for use in (s.read, s.write):  # ordinary reads and every write are refused, saying why
        with pytest.raises(OfflineError, match=r"cannot (read this without the server|write): .*no local fork"):
            use()
    assert _kinds(said) == ["offline"] * 3  # each call tried the server again
    exc = OfflineError("the server went away mid-read")
    assert s.stale_copy(exc).offline  # the server is still away: the copy
    with pytest.raises(OfflineError) as caught:
        VaultSession(URL).stale_copy(exc)  # a session that does not take the copy
    assert caught.value is exc


def test_without_offline_an_unreachable_team_vault_is_an_error(machine: Path) -> None:
    with pytest.raises(OfflineError, match="cannot reach the team vault server"):
        VaultSession(URL).read()


def test_a_machine_without_a_copy_says_so(machine: Path) -> None:
    (machine / "index").rmdir()
    with pytest.raises(OfflineError, match="no copy"):
        VaultSession(URL, offline=True).read_or_stale()


def test_the_widgets_refuse_a_stale_copy_before_drawing(tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from synapse_nb.offline import OfflineVault
    from synapse_nb.widgets import GateExplorer, LessonReview, MemoryBrowser

    copy = OfflineVault(tmp_path, location="db.example/team?project=acme", mind="default", actor="user",
                        reason="connection refused")
    for widget in (LessonReview, MemoryBrowser, GateExplorer):
        with pytest.raises(OfflineError, match=f"cannot show the {widget.__name__} widget: .*no local fork"):
            widget(copy)


def test_the_gitignore_of_a_taken_back_vault_is_ours_only(tmp_path: Path) -> None:
    s = VaultSession(tmp_path)
    vault = s.write().path
    assert (vault / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT
    assert s.take_back() and not vault.exists()
