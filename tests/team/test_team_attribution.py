"""Review 90 F1: on a team vault the server records which login made each change (history.login, revisions.login,
migration 11; revisions.decided_login, migration 32), and every surface that shows the actor shows it: two people,
and two people's agents, are told apart. A local vault records no logins: its output is as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app

from .conftest import url_as


@pytest.fixture()
def people(pg_admin_url: str, project: str) -> dict[str, str]:
    """Two people and one agent login of each: name -> (login, URL)."""
    out = {}
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for who, group in (("alice", "human"), ("bob", "human"), ("agent_alice", "agent"), ("agent_bob", "agent")):
            login = f"{project}_{who}"
            c.execute(f"CREATE ROLE {login} LOGIN IN ROLE {project}_{group}")
            if group == "agent":
                c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (login,))
            out[who] = url_as(pg_admin_url, login) + f"?project={project}"
    return out


def _cli(tmp_path: Path, url: str, *args: str, actor: str = "user") -> str:
    r = CliRunner().invoke(app, ["--vault", url, "--actor", actor, *args])
    assert r.exit_code == 0, r.output
    return r.output


def test_history_names_the_login_of_each_change_the_same_on_every_machine(
        people: dict[str, str], project: str, machine: Any) -> None:
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    mem = alice.remember("preference", "review_style", "squash merges only, never rebase main")
    bob.remember("preference", "review_style", "rebase main freely")
    lines = [e.line() for e in alice.memories.history(mem.id)]
    assert f"[user {project}_alice via api]" in lines[0] and f"[user {project}_bob via api]" in lines[1], lines
    assert [e.line() for e in bob.memories.history(mem.id)] == lines  # the server's logins, every machine alike
    assert [e.to_dict()["login"] for e in bob.memories.history(mem.id)] == [f"{project}_alice", f"{project}_bob"]
    # two people's agents: agent_alice's edit of agent_bob's record reads as hers
    ab, aa = machine("ab", people["agent_bob"], actor="agent"), machine("aa", people["agent_alice"], actor="agent")
    ci = ab.remember("knowledge", "ci_runner", "CI runs on bob's self-hosted runner")
    aa.remember("knowledge", "ci_runner", "CI runs on GitHub-hosted runners")
    got = [e.line() for e in bob.memories.history(ci.id)]
    assert f"[agent {project}_agent_bob via api]" in got[0] and f"[agent {project}_agent_alice via api]" in got[1]


def test_a_revision_names_who_proposed_and_who_decided(people: dict[str, str], project: str, machine: Any) -> None:
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    aa = machine("aa", people["agent_alice"], actor="agent")
    mem = alice.remember("preference", "review_style", "squash merges only")
    alice.remember("preference", "deploy_day", "never on fridays")
    aa.remember("preference", "review_style", "always rebase")
    aa.remember("preference", "deploy_day", "fridays are fine")
    first, second = bob.memories.revisions()
    assert f"[agent {project}_agent_alice via api]" in first.line(), first.line()
    assert first.to_dict()["login"] == f"{project}_agent_alice" and "decided_login" not in first.to_dict()
    bob.memories.reject(second.id)
    alice.memories.accept(first.id, force=True)
    done = {r.id: r for r in bob.memories.revisions(status=None)}
    assert f"[agent {project}_agent_alice via api, accepted by {project}_alice]" in done[first.id].line()
    assert f"rejected by {project}_bob]" in done[second.id].line()
    assert done[second.id].to_dict()["decided_login"] == f"{project}_bob"
    # the acceptance is the person's change in the memory's history, with their login
    accept = [e for e in bob.memories.history(mem.id) if e.action == "accept"]
    assert accept and f"[user {project}_alice via api]" in accept[0].line()


def test_a_persons_remember_over_anothers_verified_memory_says_whose_it_was(
        people: dict[str, str], project: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _cli(tmp_path, people["alice"], "remember", "preference", "review_style", "Alice: squash merges only")
    out = _cli(tmp_path, people["bob"], "remember", "preference", "review_style", "Rebase main freely")
    mid = json.loads(_cli(tmp_path, people["bob"], "memory", "list", "--json"))[0]["id"]
    assert out.startswith(f"updated {project}_alice's memory {mid} [user · verified]"), out
    assert f"; {project}_alice's version is v1: `synapse-nb memory revert {mid} --to 1`" in out
    hist = _cli(tmp_path, people["alice"], "memory", "history", mid)
    assert f"[user {project}_bob via cli]" in hist.splitlines()[1], hist
    # their own memory again: no one else's version replaced, nothing said
    out = _cli(tmp_path, people["bob"], "remember", "preference", "review_style", "Rebase main, carefully")
    assert out.startswith(f"updated {mid} [user · verified]") and "version is" not in out, out


def test_export_keeps_the_login_and_an_import_reads_it_as_data_not_as_who(
        people: dict[str, str], project: str, pg_admin_url: str, new_team_project: Any, machine: Any) -> None:
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    mem = alice.remember("context", "oncall", "Alice is on call")
    bob.remember("context", "oncall", "Bob is on call")
    dump = [json.loads(x) for x in bob.export_jsonl(history=True).splitlines()]
    assert [d["login"] for d in dump if d.get("kind") == "history"] == [f"{project}_alice", f"{project}_bob"]
    other = new_team_project("u")
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"GRANT {other}_human TO {project}_bob")
    copy = machine("b2", url_as(pg_admin_url, f"{project}_bob") + f"?project={other}")
    copy.import_jsonl(bob.export_jsonl(history=True).splitlines(), trust=True)
    got = copy.memories.history(mem.id)
    # the import wrote these rows as bob; the changes were alice's and bob's on another vault: no login is shown
    assert [e.login for e in got] == [None, None] and "[user via api]" in got[0].line()
    with psycopg.connect(pg_admin_url) as c:
        rows = c.execute(f"SELECT login, file_login FROM {other}.history ORDER BY version").fetchall()
    assert rows == [(f"{project}_bob", f"{project}_alice"), (f"{project}_bob", f"{project}_bob")]
    bad = [d if d.get("kind") != "history" else {**d, "login": "x\nforged"} for d in dump]
    with pytest.raises(syn.ValidationError, match="login must be"):
        copy.import_jsonl([json.dumps(d) for d in bad], trust=True)


def test_a_local_vault_shows_no_login(tmp_path: Path) -> None:
    """A local vault's history, revisions and their JSON are as before logins were shown (regression guard)."""
    (tmp_path / "v").mkdir()
    v = syn.open_vault(tmp_path / "v")
    mem = v.remember("preference", "style", "squash")
    v.remember("preference", "style", "rebase")
    for e in v.memories.history(mem.id):
        assert "login" not in e.to_dict() and "[user via api]  " in e.line()
    v.as_agent().remember("preference", "style", "agent's")
    (rev,) = v.memories.revisions()
    assert set(rev.to_dict()) == {"id", "rid", "kind", "mind", "status", "fields", "base_digest", "actor", "surface",
                                  "created_at", "decided_at", "readable"}
    assert "] mem_" in rev.line() and "[agent via api] " in rev.line()
    assert v.memories.overwritten(v.remember("preference", "style", "merge")) is None


def test_lessons_list_names_the_login_that_approved_each_lesson(people: dict[str, str], project: str,
                                                                tmp_path: Path, machine: Any) -> None:
    """s21: `lessons list` showed a lesson approved, never by whom. Text and --json name the login of the approval's
    history entry (the server's), the same for every reader; the agent login listing the lessons in force too."""
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    les = alice.lessons.create("Reverted 'retry payments'")
    les = alice.lessons.approve(les.id, text="Never retry payments without an idempotency key")
    mine = bob.lessons.create("pending, nobody decided")
    text = _cli(tmp_path, people["bob"], "lessons", "list").splitlines()
    i = next(n for n, line in enumerate(text) if line.startswith(les.id))
    assert text[i + 1] == f"    approved by {project}_alice, {les.approved_at[:19].replace('T', ' ')} UTC"
    rows = {r["id"]: r for r in json.loads(_cli(tmp_path, people["bob"], "lessons", "list", "--json"))}
    assert rows[les.id]["approval"] == {"by": f"{project}_alice", "login": f"{project}_alice", "at": les.approved_at}
    assert rows[mine.id]["approval"] is None
    agent = json.loads(_cli(tmp_path, people["agent_bob"], "lessons", "list", "--json", actor="agent"))
    assert [r["approval"]["login"] for r in agent] == [f"{project}_alice"]
