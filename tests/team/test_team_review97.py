"""A team machine's copies and rows (review 97), on the real PostgreSQL.

F3: another machine's purge left its text in this machine's index folder (``.synapse/team/<login>/index/``) through
every open and command: only the index's own sync marked its rewrite owed, and ``memory list``, ``recall``,
``memory search`` and ``index check`` do not sync the index; the offline copy's sync saw the deletion and owed the
index nothing. It marks the index's rewrite owed now, and a person's next open runs it.

F4: ``team search-local`` in an agent's shell compared ``--vault`` with ``team.toml``'s URL as strings: the person's
URL with one more libpq parameter (``&connect_timeout=5``) was another string, the same cache folder, and the agent
read the person's copy (every mind the person reads). What the URL resolves to is compared now.

F5: ``team status`` sorted ``followers`` rows by their names alone: the agent login's rows named after the person's
live cache folder plus a newline were called an earlier join of the person's, and the ``DELETE`` it printed (the
newline trimmed) removed the person's live rows and kept the agent's.
"""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store.index.scrub import Owed
from synapse_nb.store.postgres.migrate import agent_connection_limit
from synapse_nb.team import join, offline_search, open_team_vault, status

from .conftest import url_as

SECRET = "quokkatoken"


@pytest.fixture()
def people(pg_admin_url: str, project: str) -> dict[str, str]:
    """Two people and alice's agent (granted only the mind ``default``): name -> URL."""
    out = {}
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for who, group in (("alice", "human"), ("bob", "human"), ("agent_alice", "agent")):
            login = f"{project}_{who}"
            c.execute(f"CREATE ROLE {login} LOGIN IN ROLE {project}_{group}")
            if group == "agent":  # as `team init --agent LOGIN --mind default` makes it
                c.execute(agent_connection_limit(login))
                c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, 'default')", (login,))
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


def _index_holds(cache: Path, text: str) -> list[str]:
    """The files of the cache folder's index folder that hold ``text``."""
    return sorted(str(p.relative_to(cache)) for p in (cache / "index").rglob("*")
                  if p.is_file() and text.encode() in p.read_bytes())


@pytest.mark.parametrize("position", ["kept", "lost"])
def test_another_machines_purge_leaves_this_machines_index_at_the_persons_next_open(
        people: dict[str, str], tmp_path: Path, position: str) -> None:
    """``lost``: the copy's feed position is gone, so its sync replaces it whole (the deletion is a row the server no
    longer has, not one the feed names)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    b = open_team_vault(people["bob"], local=tmp_path / "b")
    mem = b.remember("knowledge", "db_password", f"the db password is {SECRET}-qq")
    a = open_team_vault(people["alice"], local=tmp_path / "a")
    try:
        cache = Path(a.path)
        a.index.rebuild()  # alice's index folder holds the memory
        assert _index_holds(cache, SECRET)
    finally:
        a.close()
    b.purge(mem.id)
    b.close()
    if position == "lost":
        (cache / "copy-feed.json").unlink()
    # alice's commands that do not sync the index (memory list): her copy applies bob's purge at its sync
    a = open_team_vault(people["alice"], local=tmp_path / "a")
    try:
        assert all(m.id != mem.id for m in a.memories.list())
    finally:
        a.close()
    held = list(cache.glob("copy.db*"))
    assert held and not any(SECRET.encode() in p.read_bytes() for p in held)
    assert Owed(cache / "index").person()  # the index's rewrite is owed, a person's line: the next open runs it
    a = open_team_vault(people["alice"], local=tmp_path / "a")  # alice's next open, nothing else
    try:
        assert not _index_holds(cache, SECRET), _index_holds(cache, SECRET)
        assert not Owed(cache / "index").person() and a.index.scrub_owed_since is None
    finally:
        a.close()


def _carols_salary_in_alices_copy(people: dict[str, str], folder: Path) -> Path:
    """alice joins the folder (her agent's own login named), writes to the mind ``hr`` (her agent is granted only
    ``default``) and her copy syncs every mind she reads: her cache folder."""
    out = CliRunner().invoke(app, ["team", "join", people["alice"], "--agent-url", people["agent_alice"]])
    assert out.exit_code == 0, out.output
    v = syn.open_vault(folder).with_mind("hr")
    try:
        v.remember("context", "salary_band", "HR-ONLY: Carol's salary band is L7")
        v.recall("salary")
        return Path(v.path)
    finally:
        v.close()


def test_search_local_in_an_agents_shell_compares_what_a_url_resolves_to(
        people: dict[str, str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _carols_salary_in_alices_copy(people, folder)
    variant = people["alice"] + "&connect_timeout=5"  # another string, the same server, login and cache folder
    assert "Carol" in offline_search("salary", mind="hr", url=variant)  # the person's shell: her copy
    theirs = syn.open_vault(folder, actor="agent")
    theirs.recall("salary")
    theirs.close()  # the agent login's own copy, its minds only
    monkeypatch.setenv("CLAUDECODE", "1")
    run = CliRunner()
    for url in (variant, people["alice"] + "&application_name=x&sslmode=prefer", people["alice"]):
        out = run.invoke(app, ["--vault", url, "--mind", "hr", "team", "search-local", "salary"])
        assert "Carol" not in out.output, (url, out.output)
        assert out.exit_code == 0 and "(no match in the local copy)" in out.output, out.output  # the agent's copy
    # another login's copy, by any URL, is refused: bob's (a person's) folder here, made by his own open
    bob = open_team_vault(people["bob"], local=folder)
    bob.recall("salary")
    bob.close()
    out = run.invoke(app, ["--vault", people["bob"] + "&connect_timeout=5", "team", "search-local", "salary"])
    assert out.exit_code != 0 and "agent login's own copy" in out.output, out.output
    with pytest.raises(syn.PermissionDeniedError):
        offline_search("salary", mind="hr", url=people["bob"])
    # team.toml deleted (a project file the agent may remove): the folder's pin still says which login is the agent's
    (folder / ".synapse" / "team.toml").unlink()
    with pytest.raises(syn.PermissionDeniedError, match="the folder's pin"):
        offline_search("salary", mind="hr", url=variant)
    out = run.invoke(app, ["--vault", people["agent_alice"] + "&connect_timeout=5", "team", "search-local", "salary"])
    assert out.exit_code == 0 and out.output.startswith("STALE (local copy)"), out.output
    assert mine.name.startswith(f"{people['alice'].split('://')[1].split('@')[0]}@")


def _synced(url: str, folder: Path) -> Path:
    """A person's recall over ``url`` from ``folder`` (the copy syncs and reports its position), closed: the handle's
    cache folder."""
    v = open_team_vault(url, local=folder)
    try:
        v.recall("fridays")
        return Path(v.path)
    finally:
        v.close()


def test_team_status_counts_only_the_folders_own_logins_rows_and_its_delete_names_them_exactly(
        people: dict[str, str], project: str, pg_admin_url: str, folder: Path) -> None:
    alice = f"{project}_alice"
    join(people["alice"], local=folder)
    old = _synced(people["alice"], folder)
    moved = people["alice"].replace("@127.0.0.1:", "@localhost:")  # the same server, another URL: another folder
    join(moved, local=folder)
    live = _synced(moved, folder)
    host = socket.gethostname()
    # the agent login's own SQL: rows named after alice's live folder plus a newline, and one named exactly as her old
    # folder's copy (a row per name and login: the server sets the login, the agent's)
    forged = [f"{host}:{live}#copy\n", f"{host}:{live}\n", f"{host}:{old}#copy"]
    with psycopg.connect(people["agent_alice"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        for name in forged:
            c.execute("INSERT INTO followers(name, cursor_xid, snapshot) SELECT %s, "
                      "pg_snapshot_xmin(pg_current_snapshot()), pg_current_snapshot()", (name,))

    def rows() -> set[tuple[str, str]]:
        with psycopg.connect(pg_admin_url) as c:
            return {(r[0], r[1]) for r in c.execute(f"SELECT name, login FROM {project}.followers")}

    before = rows()
    olds = {(n, lg) for n, lg in before if lg == alice and f"{old}" in n}
    lives = {(n, lg) for n, lg in before if lg == alice and f"{live}" in n}
    assert olds and lives and all(n.isprintable() for n, _ in olds | lives), before
    st = status(moved, local=folder)
    said = st["earlier_joins"]
    assert said.startswith(f"{len(olds)} feed position"), said  # alice's old rows only
    assert live.name not in said.split("drops them with: ")[0], said
    shown = {(m["name"], m["login"]) for m in st["machines"]}
    assert lives <= shown and not shown & {(n, f"{project}_agent_alice") for n in forged}, shown
    apart = st["other_logins_rows"]
    assert apart.startswith("3 feed positions named after this machine's cache folders"), apart
    assert "\\u000a' by E'" in apart and f"E'{project}_agent_alice'" in apart and "\n" not in apart, apart
    statement = said.split("drops them with: ", 1)[1].split("; and the old folders", 1)[0]
    assert "login = E'" in statement, statement
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # the administrator's statement, as said
        c.execute(statement)
    assert rows() == before - olds  # alice's old rows, nothing else: her live ones and the agent's stay
    st = status(moved, local=folder)
    assert "earlier_joins" not in st and st["other_logins_rows"].startswith("3 feed positions"), st
