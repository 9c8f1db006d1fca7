"""A real team's leftovers (a twenty-first pass, after reviews 90 and 91), on the real PostgreSQL.

1. Only the CLI's ``remember`` said that a person's write replaced another person's verified memory ("updated alice's
   memory ...; alice's version is vN: `synapse-nb memory revert ID --to N`"): the Python API, ``%remember``, the
   widgets that change a memory (MemoryBrowser's Revert, ChangeReview's Accept) and the CLI's ``memory revert`` and
   ``memory accept`` said nothing. The write returns it now (``Memory.replaced``, ``Memory.note``), one code path,
   and every surface shows it. (The MCP server acts as the agent only: an agent's change to a person's memory is a
   revision, never a replacement.)
2. ``team status`` listed this machine's feed positions of an earlier ``team join`` (another URL) beside the current
   join's, as if this machine still synced them.
3. A deletion's scrub a team vault left owed (the offline copy's ``copy-scrub.owed``, the index's ``scrub.owed``) ran
   only at the next sync or repair; a person's open runs it now, as a local vault's does.
4. With no ``team.toml``, ``team search-local`` in an agent's shell read the one copy on disk, possibly the person's
   (every mind the person reads).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store.index.scrub import Owed
from synapse_nb.store.postgres import copy
from synapse_nb.team import join, offline_search, open_team_vault, status
from synapse_nb.widgets import ChangeReview, MemoryBrowser

from .conftest import url_as

SECRET = "zebrafinch"


@pytest.fixture()
def people(pg_admin_url: str, project: str) -> dict[str, str]:
    """Two people and alice's agent: name -> URL."""
    out = {}
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for who, group in (("alice", "human"), ("bob", "human"), ("agent_alice", "agent")):
            login = f"{project}_{who}"
            c.execute(f"CREATE ROLE {login} LOGIN IN ROLE {project}_{group}")
            if group == "agent":
                c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (login,))
            out[who] = url_as(pg_admin_url, login) + f"?project={project}"
    return out


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder outside git, the current folder, no SYNAPSE_HOME, no agent's marker."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("CLAUDECODE", raising=False)
    f = tmp_path / "acme"
    f.mkdir()
    monkeypatch.chdir(f)
    return f


def _cli(url: str, *args: str) -> str:
    r = CliRunner().invoke(app, ["--vault", url, *args])
    assert r.exit_code == 0, r.output
    return r.output


def _note(login: str, mid: str, version: int) -> str:
    return (f"replaced {login}'s memory {mid}; {login}'s version is v{version}: `synapse-nb memory revert {mid} --to "
            f"{version}`")


def test_every_surface_says_whose_verified_memory_a_persons_write_replaced(
        people: dict[str, str], project: str, machine: Any, folder: Path) -> None:
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    ali, bo = f"{project}_alice", f"{project}_bob"
    # the Python API: the memory the write returns carries it (replaced: the entry; note: the sentence)
    mem = alice.remember("preference", "review_style", "squash merges only")
    got = bob.remember("preference", "review_style", "rebase main freely")
    assert got.replaced is not None and (got.replaced.login, got.replaced.version) == (ali, 1)
    assert got.note == _note(ali, mem.id, 1)
    assert bob.remember("preference", "review_style", "rebase main, carefully").note is None  # bob's own now
    assert alice.memories.update(mem.id, content="squash, always").note == _note(bo, mem.id, 3)
    assert "note" not in got.to_dict() and "replaced" not in got.to_dict()  # never stored, never in the JSON
    # the CLI's remember, as review 90 made it, and its revert and accept
    out = _cli(people["bob"], "remember", "preference", "review_style", "Rebase main freely")
    assert out.startswith(f"updated {ali}'s memory {mem.id} [user · verified]"), out
    assert f"; {ali}'s version is v4: `synapse-nb memory revert {mem.id} --to 4`" in out
    out = _cli(people["alice"], "memory", "revert", mem.id, "--to", "1", "--yes")
    assert _note(bo, mem.id, 5) in out, out
    # the magic %remember, in bob's notebook
    alice.remember("preference", "deploy_day", "never on fridays")
    c = Config()
    c.HistoryManager.enabled = False
    c.HistoryManager.hist_file = ":memory:"
    c.SynapseMagics.vault_path = people["bob"]
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance(config=c)
    try:
        ip.run_line_magic("load_ext", "synapse_nb")
        with capture_output() as cap:
            m = ip.run_line_magic("remember", "preference deploy_day fridays are fine")
        assert m.note == _note(ali, m.id, 1)
        (shown,) = cap.outputs  # the one confirmation, the note under its line (text and HTML)
        assert shown.data["text/plain"].endswith(f"\n  {m.note}"), shown.data
        assert "synapse-note" in shown.data["text/html"] and "version is v1: `synapse-nb memory revert" in \
            shown.data["text/html"]
    finally:
        ip.run_line_magic("unload_ext", "synapse_nb")
        InteractiveShell.clear_instance()
    # the widgets: bob's Revert of alice's memory, bob's Accept of her agent's revision of it
    oncall = alice.remember("context", "oncall", "bob is on call")
    alice.remember("context", "oncall", "alice is on call")
    w = MemoryBrowser(bob)
    w.select(oncall.id)
    w.revert_version.value = 1
    assert w.revert_selected() is not None
    assert _note(ali, oncall.id, 2).replace("'", "&#x27;") in w.message.value, w.message.value
    alice.remember("context", "oncall", "carol is on call")
    machine("aa", people["agent_alice"], actor="agent").remember("context", "oncall", "dave is on call")
    (rev,) = bob.memories.revisions()
    review = ChangeReview(bob)
    review.revisions.value = rev.id
    accepted = review.decide_revision(True)
    assert accepted.note == _note(ali, oncall.id, 4)
    assert _note(ali, oncall.id, 4).replace("'", "&#x27;") in review.message.value, review.message.value


def test_the_cli_accept_says_it_and_a_persons_own_or_an_agents_write_says_nothing(
        people: dict[str, str], project: str, machine: Any, folder: Path) -> None:
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    mem = alice.remember("procedure", "deploy", "make deploy, then tag")
    agent = machine("aa", people["agent_alice"], actor="agent")
    assert agent.remember("procedure", "deploy", "make deploy-prod, then tag").note is None  # a revision
    (rev,) = bob.memories.revisions()
    out = _cli(people["bob"], "memory", "accept", rev.id, "--yes")
    assert _note(f"{project}_alice", mem.id, 1) in out, out
    assert bob.remember("procedure", "deploy", "make deploy-prod, then tag v2").note is None  # bob's own version


def test_a_local_vault_says_nothing(tmp_path: Path) -> None:
    """A local vault records no logins: no write replaces "another person's" memory there (regression guard)."""
    (tmp_path / "v").mkdir()
    v = syn.open_vault(tmp_path / "v")
    mem = v.remember("preference", "style", "squash")
    assert v.remember("preference", "style", "rebase").note is None
    assert v.memories.revert(mem.id, to=1).note is None
    v.close()


def _synced(url: str, folder: Path) -> Path:
    """A person's recall over ``url`` from ``folder`` (the copy syncs and reports its position), closed: the handle's
    cache folder."""
    v = open_team_vault(url, local=folder)
    try:
        v.recall("fridays")
        return Path(v.path)
    finally:
        v.close()


def test_team_status_shows_only_the_current_joins_machines(
        people: dict[str, str], project: str, pg_admin_url: str, folder: Path) -> None:
    join(people["alice"], local=folder)
    old = _synced(people["alice"], folder)
    moved = people["alice"].replace("@127.0.0.1:", "@localhost:")  # the same server, another URL: another folder
    assert moved != people["alice"]
    join(moved, local=folder)
    new = _synced(moved, folder)
    assert new != old
    with psycopg.connect(pg_admin_url) as c:  # the server keeps the old join's rows (no person may delete one)
        names = [r[0] for r in c.execute(f"SELECT name FROM {project}.followers")]
    assert any(str(old) in n for n in names) and any(str(new) in n for n in names), names
    st = status(moved, local=folder)
    shown = [m["name"] for m in st["machines"]]
    assert shown and all(str(old) not in n for n in shown) and any(str(new) in n for n in shown), shown
    said = st["earlier_joins"]
    assert said.startswith(("1 feed position this machine reported for this folder under an earlier join",
                            "2 feed positions this machine")), said
    assert old.name in said and "DELETE FROM" in said
    statement = said.split("drops them with: ", 1)[1].split("; and the old folders", 1)[0]
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # the administrator's statement, as said
        c.execute(statement)
        names = [r[0] for r in c.execute(f"SELECT name FROM {project}.followers")]
    assert all(str(old) not in n for n in names) and any(str(new) in n for n in names), names
    assert "earlier_joins" not in status(moved, local=folder)


def test_a_persons_open_runs_the_scrubs_a_team_vault_left_owed(
        people: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = open_team_vault(people["alice"], local=tmp_path / "a")
    mem = a.remember("context", "salary", f"Carol's salary band is L7 {SECRET}")
    a.index.search(SECRET)  # the index is built
    cache = _synced(people["alice"], tmp_path / "a")
    a.close()
    b = open_team_vault(people["bob"], local=tmp_path / "b")
    b.memories.delete(mem.id)
    b.close()
    # alice's next sync applies bob's deletion, but its scrub is kept from finishing (another process's open read)
    with monkeypatch.context() as m:
        m.setattr(copy, "scrub", copy.reader_note)
        _synced(people["alice"], tmp_path / "a")

    def held() -> list[str]:
        return [p.name for p in cache.glob("copy.db*") if p.is_file() and SECRET.encode() in p.read_bytes()]

    assert copy.scrub_owed(cache) and held(), held()
    Owed(cache / "index").mark(person=True)  # a person's purge killed after its commit
    v = open_team_vault(people["alice"], local=tmp_path / "a")  # the person's open, nothing else
    try:
        assert not copy.scrub_owed(cache) and not held(), held()
        assert not Owed(cache / "index").person() and v.index.scrub_owed_since is None
    finally:
        v.close()


def test_a_persons_open_says_so_when_the_copys_owed_scrub_cannot_finish(
        people: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = _synced(people["alice"], tmp_path)
    os.close(copy.open_own(cache / copy.COPY_SCRUB))  # owed
    with copy._locked(cache):  # another process holds the copy's lock past the open's wait
        v = open_team_vault(people["alice"], local=tmp_path)
        v.close()
        # a person at the command line reads it on stderr (the pool's log, `synapse_nb.team`, reaches no one)
        r = subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", people["alice"], "remember", "context",
                            "oncall", "alice is on call"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={k: x for k, x in os.environ.items() if k != "SYNAPSE_HOME"})
    assert r.returncode == 0, r.stderr
    assert "did not finish at this open" in r.stderr and str(cache / copy.COPY_LOCK) in r.stderr, r.stderr
    assert copy.scrub_owed(cache)
    assert any("did not finish at this open" in rec.getMessage() and copy.COPY_LOCK in rec.getMessage()
               for rec in caplog.records), caplog.text
    # an agent's open (the person's login acting as the agent: the same copy) leaves it to the next sync, as a local
    # vault's open leaves an agent's owed index rewrite
    v = open_team_vault(people["alice"], local=tmp_path, actor="agent")
    try:
        assert copy.scrub_owed(cache)
    finally:
        v.close()
    v = open_team_vault(people["alice"], local=tmp_path)
    try:
        assert not copy.scrub_owed(cache)
    finally:
        v.close()


def test_search_local_in_an_agents_shell_without_team_toml_refuses_the_copy_on_disk(
        people: dict[str, str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = open_team_vault(people["alice"], local=folder)  # by URL (SYNAPSE_HOME in the person's shell): no team.toml
    v.with_mind("hr").remember("context", "salary_band", "Secret: Carol's salary band is L7")
    _synced(people["alice"], folder)
    v.close()
    assert not (folder / ".synapse" / "team.toml").exists()
    assert "Carol" in offline_search("salary", mind="hr", local=folder)  # the person's shell: their one copy
    monkeypatch.setenv("CLAUDECODE", "1")
    out = CliRunner().invoke(app, ["--mind", "hr", "team", "search-local", "salary"])
    assert out.exit_code != 0 and "Carol" not in out.output, out.output
    assert "agent login's own copy" in out.output and "--vault URL" in out.output, out.output
    with pytest.raises(syn.PermissionDeniedError):
        offline_search("salary", mind="hr", local=folder)
    # named: the agent login's own copy (none yet here), never the person's
    out = CliRunner().invoke(app, ["--vault", people["agent_alice"], "--mind", "hr", "team", "search-local", "salary"])
    assert "Carol" not in out.output, out.output
