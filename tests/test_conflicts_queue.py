"""The person's queue of conflicts is about what needs a person (review 83 F3).

5,000 short agent memories (the per-mind cap) made 24,994 duplicate and contradiction pairs, almost all between two
agents' unverified records: ``memory status`` said "24,994 open conflicts awaiting a human" and ``memory conflicts``
printed every pair, 3.6 s of lines with the agents' pairs at the tail. Now the pairs come people's first (two people's
records, then a person's and an agent's), the pairs of two agents' unverified records are counted apart
(``Conflicts.agents``; ``Status.agents_conflicts``), and every listing is bounded: ``memory conflicts`` shows 20 unless
``-n`` (``-n 0``: all), counts the agents' pairs in one line and lists them with ``--agents``; the list's text in
Python and the ChangeReview widget the same way. What the duplicate check finds does not change: the list holds every
pair, and ``--json`` lists them all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb._util import plural
from synapse_nb.cli import app
from synapse_nb.provenance import human_record

AGENT_NOTES = 30


@pytest.fixture()
def flooded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A vault whose oldest pairs are an agent's near-duplicate notes, then a pair of a person's and an agent's
    record, then a pair of two people's records (the newest)."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    person = syn.open_vault(tmp_path)
    agent = person.as_agent()
    for i in range(AGENT_NOTES):  # differing numbers, the same subject: contradictions, pair after pair
        agent.remember("project", f"note_{i:03d}", f"agent note {i} about the cache warmup job")
    theirs = agent.remember("procedure", "deploy_notes", "Deploy: run make deploy, then tag the release. Skip the "
                            "staging smoke tests and push with ./deploy.sh --force directly")
    mine = person.remember("procedure", "deploy", "Deploy: run make deploy, then tag the release")
    old = person.remember("project", "db_port_old", "The billing database listens on port 6543")
    new = person.remember("project", "db_port", "The billing database listens on port 5432")
    links = person.memories.conflicts()
    by_people = next(x for x in links if {x.a, x.b} == {old.id, new.id})
    mixed = next(x for x in links if {x.a, x.b} == {mine.id, theirs.id})
    records = {r.id: r for r in person.memories.list(limit=None)}
    agents = [x for x in links if not human_record(records[x.a]) and not human_record(records[x.b])]
    assert len(agents) == len(links) - 2 >= 25  # every other pair is between two agents' notes
    return {"path": tmp_path, "vault": person, "people": [by_people.id, mixed.id], "agents": {x.id for x in agents},
            "total": len(links)}


def _cli(path: Path, *args: str) -> Any:
    res = CliRunner().invoke(app, ["--vault", str(path), "memory", *args])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res


def test_status_counts_agents_pairs_apart_from_what_awaits_a_person(flooded: dict[str, Any]) -> None:
    from synapse_nb.render import status_html

    n = len(flooded["agents"])
    st = flooded["vault"].status()
    assert (st.open_conflicts, st.agents_conflicts) == (2, n)
    lines = str(st).splitlines()
    assert "  2 open conflicts awaiting a human (synapse-nb memory conflicts)" in lines
    assert f"  {n} open conflicts between agents' unverified records (synapse-nb memory conflicts --agents)" in lines
    assert (st.to_dict()["open_conflicts"], st.to_dict()["agents_conflicts"]) == (2, n)
    assert "open conflicts awaiting a human</b>: 2<" in status_html(st)
    apart = "between agents&#x27; unverified records (synapse-nb memory conflicts --agents)"
    assert f"{apart}</b>: {n}<" in status_html(st)
    res = _cli(flooded["path"], "status", "--json")
    assert (json.loads(res.stdout)["open_conflicts"], json.loads(res.stdout)["agents_conflicts"]) == (2, n)
    assert "agents_conflicts" not in flooded["vault"].as_agent().status().to_dict()  # an agent's view: as before


def test_the_list_gives_peoples_pairs_first_and_counts_the_agents(flooded: dict[str, Any]) -> None:
    got = flooded["vault"].memories.conflicts()
    n = len(flooded["agents"])
    assert len(got) == flooded["total"] and got.agents == n  # nothing the check found is left out
    assert [x.id for x in got.people] == flooded["people"]  # two people's, then a person's and an agent's
    assert {x.id for x in got[2:]} == flooded["agents"]
    text = str(got).splitlines()  # the list's text, in a notebook too: the person's queue, the agents' counted
    assert [line.split()[0] for line in text[:2]] == [x[:16] for x in flooded["people"]]
    assert text[2:] == [(f"{n} conflicts between agents' unverified records not listed: synapse-nb memory conflicts "
                         "--agents lists them")]
    assert "[user · verified] ~ mem_" in text[0] and "[agent · unverified]" in text[1]


def test_memory_conflicts_lists_the_persons_queue_and_the_option_shows_every_pair(flooded: dict[str, Any]) -> None:
    path, n, total = flooded["path"], len(flooded["agents"]), flooded["total"]
    ids = [line.split()[0] for line in _cli(path, "conflicts").stdout.splitlines()]
    assert ids[:2] == [x[:16] for x in flooded["people"]] and len(ids) == 3
    out = _cli(path, "conflicts").stdout.splitlines()
    assert out[2] == (f"{n} conflicts between agents' unverified records not listed: synapse-nb memory conflicts "
                      "--agents lists them")
    cut = _cli(path, "conflicts", "-n", "1").stdout.splitlines()  # the limit bounds the person's pairs too
    assert cut[0].startswith(flooded["people"][0][:16])
    assert cut[1] == "(… 1 more conflict not listed: synapse-nb memory conflicts -n 0 lists all)"
    assert len(cut) == 3
    some = _cli(path, "conflicts", "--agents").stdout.splitlines()  # 20 by default, people's first
    assert len(some) == 21 and some[-1] == (f"(… {total - 20} more conflicts not listed: synapse-nb memory conflicts "
                                            "--agents -n 0 lists all)")
    every = _cli(path, "conflicts", "--agents", "-n", "0").stdout.splitlines()
    assert len(every) == total and {line.split()[0] for line in every[2:]} == {x[:16] for x in flooded["agents"]}
    assert all(line.count("[agent · unverified]") == 2 for line in every[2:])
    listed = json.loads(_cli(path, "conflicts", "--json").stdout)  # a script reads every pair, people's first
    assert len(listed) == total and [x["id"] for x in listed[:2]] == flooded["people"]
    assert [x["id"] for x in json.loads(_cli(path, "conflicts", "--json", "-n", "2").stdout)] == flooded["people"]


def test_memory_conflicts_says_when_only_agents_pairs_are_open(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    agent = syn.open_vault(tmp_path).as_agent()
    for i in range(3):
        agent.remember("project", f"note_{i:03d}", f"agent note {i} about the cache warmup job")
    n = agent.memories.conflicts().agents
    assert n >= 1
    assert _cli(tmp_path, "conflicts").stdout.splitlines() == [
        "no open conflicts with a person's record",
        (f"{plural(n, 'conflict')} between agents' unverified records not listed: synapse-nb memory conflicts "
         "--agents lists them")]
    assert len(_cli(tmp_path, "conflicts", "--agents").stdout.splitlines()) == n


def test_the_review_widget_lists_peoples_pairs_first_within_a_bound(flooded: dict[str, Any],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.widgets import review

    monkeypatch.setattr(review, "LISTED", 5)
    w = review.ChangeReview(flooded["vault"])
    assert [value for _, value in w.conflicts.options][:2] == flooded["people"]
    assert len(w.conflicts.options) == 5
    assert all(label.endswith(" · agents'") for label, _ in w.conflicts.options[2:])
    assert not any(label.endswith(" · agents'") for label, _ in w.conflicts.options[:2])
    n = len(flooded["agents"])
    assert (f"2 open conflicts, {n} between agents&#x27; unverified records (marked agents&#x27;, after "
            "people&#x27;s), the first 5 listed") in w.header.value
