"""`team join` keeps the duplicate check's links (review 74 F1): the join copies the local vault through export and
import, which dropped the links, so the team vault recalled the duplicate the local vault hid and had forgotten the
person's decided conflicts. Now the links are copied with the records, in the join's one transaction, on PostgreSQL
as on SQLite; joining again skips them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import synapse_nb as syn
from synapse_nb.team import join

QUERIES = ("how do we deploy on fridays?", "what is the api rate limit?", "how do we deploy and tag the release",
           "where does the orders service store its data")


def _local(folder: Path) -> syn.Vault:
    """A local vault with an open duplicate hiding an agent's copy, one hiding the newer of two people's memories, a
    contradiction a person kept and a duplicate a person merged (one side deleted)."""
    folder.mkdir()
    v = syn.open_vault(folder)
    agent = v.as_agent()
    v.remember("procedure", "deploy_procedure", "deploy: run make deploy then tag the release on main")
    agent.remember("knowledge", "deploy_steps", "to deploy run make deploy then tag the release on main")
    v.remember("project", "deploy_howto", "We deploy with the blue green script on Fridays from the ops laptop")
    v.remember("project", "deploy_short", "We deploy with the blue green script on Fridays")
    v.remember("knowledge", "rate_limit", "the API rate limit is 100 requests per minute")
    v.remember("knowledge", "rate_limit_new", "the API rate limit is 500 requests per minute")
    v.decide("the orders service stores its data in postgres")
    agent.decide("orders service stores its data in postgres")
    links = v.memories.conflicts()
    v.memories.resolve(next(x.id for x in links if x.relation == "contradiction"), "keep")
    v.memories.resolve(next(x.id for x in links if x.a_kind == "decision"), "merge")
    assert sorted(x.status for x in v.memories.conflicts(status=None)) == ["kept", "merged", "open", "open"]
    assert sum(x.hidden is not None for x in v.memories.conflicts()) == 2
    return v


def test_a_join_keeps_the_links_what_recall_leaves_out_and_the_decisions(team_url: str, machine: Any,
                                                                         tmp_path: Path) -> None:
    local = _local(tmp_path / "laptop")
    recalled = [local.recall(q).text for q in QUERIES]
    conflicts = local.memories.conflicts(status=None)
    assert "deploy_steps" not in recalled[2] and "deploy_short" not in recalled[0]
    local.close()
    (tmp_path / "m").mkdir()
    counts = join(team_url, tmp_path / "laptop", local=tmp_path / "m")
    team = machine("a", team_url)
    assert [team.recall(q).text for q in QUERIES] == recalled
    assert team.memories.conflicts(status=None) == conflicts
    assert counts["link"] == 4 and counts.claims["link status=kept"] == counts.claims["link status=merged"] == 1
    again = join(team_url, tmp_path / "laptop", local=tmp_path / "m")  # joining again changes nothing
    assert "link" not in again and again["skipped"] == 7 + 4 and again.claims == {}
    assert team.memories.conflicts(status=None) == conflicts
    # and the team vault's own export carries them back to a local vault
    (tmp_path / "back").mkdir()
    with syn.open_vault(tmp_path / "back") as back:
        assert back.import_jsonl(team.export_jsonl().split("\n"), trust=True)["link"] == 4
        assert back.memories.conflicts(status=None) == conflicts
        assert [back.recall(q).text for q in QUERIES] == recalled
