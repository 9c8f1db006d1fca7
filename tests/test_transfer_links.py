"""The duplicate check's links travel with an export (review 74 F1).

An open duplicate link hides one side from recall, and a person's decisions of conflicts are links too; `memory
export` wrote no link and `memory import` made none, so the imported "same vault" recalled the hidden duplicate again,
had forgotten the person's decisions, and its export was byte-identical to the original's. Now links are exported
(one ``"kind": "link"`` line each, by id, schema 4) and imported with the records in the same transaction; what a
link claims of a person's records or decisions needs ``--trust``. Each test here fails without the change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.errors import ConflictError, PermissionDeniedError, ValidationError
from synapse_nb.transfer import EXPORT_SCHEMA
from synapse_nb.transfer_links import HIDING_LINK, STORED_LINK

QUERIES = ("how do we deploy on fridays?", "what is the api rate limit?", "how do we deploy and tag the release",
           "where does the orders service store its data")


def build(vault: syn.Vault, agent: syn.Vault) -> dict[str, Any]:
    """Every state a link has: an open duplicate hiding an agent's copy of a person's memory, one hiding the newer of
    two people's memories (review 74's reproduction), a contradiction a person kept, a duplicate a person merged (one
    side deleted: the decided link names it still)."""
    proc = vault.remember("procedure", "deploy_procedure", "deploy: run make deploy then tag the release on main")
    copy = agent.remember("knowledge", "deploy_steps", "to deploy run make deploy then tag the release on main")
    vault.remember("project", "deploy_howto", "We deploy with the blue green script on Fridays from the ops laptop")
    short = vault.remember("project", "deploy_short", "We deploy with the blue green script on Fridays")
    vault.remember("knowledge", "rate_limit", "the API rate limit is 100 requests per minute")
    vault.remember("knowledge", "rate_limit_new", "the API rate limit is 500 requests per minute")
    vault.decide("the orders service stores its data in postgres")
    agent.decide("orders service stores its data in postgres")
    links = {frozenset((x.a, x.b)): x for x in vault.memories.conflicts()}
    assert links[frozenset((proc.id, copy.id))].hidden == copy.id
    assert any(x.hidden == short.id for x in links.values())
    (kept,) = [x for x in links.values() if x.relation == "contradiction"]
    vault.memories.resolve(kept.id, "keep")
    (merged,) = [x for x in links.values() if x.a_kind == "decision"]
    vault.memories.resolve(merged.id, "merge")
    assert {x.status for x in vault.memories.conflicts(status=None)} == {"open", "kept", "merged"}
    return {"copy": copy, "short": short, "kept": kept, "merged": merged}


def _cli(folder: Path, *args: str) -> str:
    out = CliRunner().invoke(app, ["--vault", str(folder), *args])
    assert out.exit_code == 0, out.output
    return out.output


def _answers(folder: Path) -> list[str]:
    """What a person reads of the vault: recall's text and --json for each query, and every conflict. (But --json's
    ``version``: each vault counts its own commits, and a copy made by one import has its own count: review 84.)"""
    def unversioned(out: str) -> str:
        return json.dumps({k: v for k, v in json.loads(out).items() if k != "version"})

    return [_cli(folder, "recall", q) for q in QUERIES] + [
        unversioned(_cli(folder, "recall", q, "--json")) for q in QUERIES] + [
        _cli(folder, "memory", "conflicts", "--status", "all"),
        _cli(folder, "memory", "conflicts", "--status", "all", "--json")]


@pytest.fixture()
def source(vault: syn.Vault, agent_vault: syn.Vault) -> dict[str, Any]:
    return build(vault, agent_vault)


def _fresh(tmp_path: Path, clock: FakeClock, name: str = "copy") -> syn.Vault:
    (tmp_path / name).mkdir()
    return syn.open_vault(tmp_path / name, clock=clock)


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in text.splitlines()]


def _line(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


# ------------------------------------------------------------------------------------------------- the round trip
def test_a_round_trip_recalls_and_lists_conflicts_as_the_original(vault: syn.Vault, source: dict[str, Any],
                                                                   tmp_path: Path, clock: FakeClock) -> None:
    text = vault.export_jsonl()
    copy = _fresh(tmp_path, clock)
    counts = copy.import_jsonl(text.split("\n"), trust=True)
    assert _answers(tmp_path / "copy") == _answers(vault.path.parent)
    copy_text = copy.recall("how do we deploy and tag the release").text
    assert "deploy_procedure" in copy_text and "deploy_steps" not in copy_text  # the agent's copy stays hidden
    assert "deploy_short" not in copy.recall("how do we deploy on fridays?").text
    assert copy.export_jsonl() == text
    copy.close()
    assert counts["link"] == 4 and counts.claims["link status=kept"] == counts.claims["link status=merged"] == 1
    docs = _lines(text)
    assert docs[0] == {"format": "synapse_nb-export", "schema": EXPORT_SCHEMA} and EXPORT_SCHEMA == 4
    kinds = [d["kind"] for d in docs[1:]]
    assert kinds == sorted(kinds, key=lambda k: k == "link") and kinds[-1] == "link"  # after the records
    links = [d for d in docs[1:] if d["kind"] == "link"]
    assert [d["id"] for d in links] == sorted(x.id for x in vault.memories.conflicts(status=None))  # by id
    merged = next(d for d in links if d["id"] == source["merged"].id)
    assert merged["status"] == "merged" and merged["decided_at"] is not None


def test_the_cli_says_what_it_exported_and_imported(vault: syn.Vault, source: dict[str, Any],
                                                    tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["--vault", str(vault.path.parent), "memory", "export", str(tmp_path / "x.jsonl")])
    assert out.exit_code == 0 and "and 4 conflict links to" in out.output, out.output
    (tmp_path / "copy").mkdir()
    out = CliRunner().invoke(app, ["--vault", str(tmp_path / "copy"), "memory", "import", str(tmp_path / "x.jsonl"),
                                   "--trust", "--yes"])
    assert out.exit_code == 0 and "link 4" in out.output and "link status=kept 1" in out.output, out.output
    assert f'link {source["kept"].id} "contradiction ' in out.output  # the decision, listed as accepted


def test_importing_the_same_file_again_changes_nothing_and_needs_no_trust(vault: syn.Vault, source: dict[str, Any],
                                                                          tmp_path: Path, clock: FakeClock) -> None:
    text = vault.export_jsonl()
    copy = _fresh(tmp_path, clock)
    copy.import_jsonl(text.split("\n"), trust=True)
    again = copy.import_jsonl(text.split("\n"))  # identical records and links claim nothing
    assert "link" not in again and again["skipped"] == again["skipped"] and again.claims == {}
    assert len(copy.memories.conflicts(status=None)) == 4 and copy.export_jsonl() == text
    # the vault's check found the pair under another id (link ids are random): the same state is skipped
    docs = _lines(text)
    for d in docs:
        if d.get("kind") == "link" and d["status"] == "open":
            d["id"] = "lnk_0000000000ff"
            break
    assert copy.import_jsonl([_line(d) for d in docs])["skipped"] == again["skipped"]
    assert copy.export_jsonl() == text
    copy.close()


def test_a_link_the_vault_holds_otherwise_refuses_the_import(vault: syn.Vault, source: dict[str, Any],
                                                             tmp_path: Path, clock: FakeClock) -> None:
    text = vault.export_jsonl()
    copy = _fresh(tmp_path, clock)
    copy.import_jsonl(text.split("\n"), trust=True)
    (open_link,) = [x for x in copy.memories.conflicts() if x.hidden == source["copy"].id]
    copy.memories.resolve(open_link.id, "keep")  # decided here since
    before = copy.export_jsonl()
    with pytest.raises(ConflictError, match=f"link {open_link.id} .*conflicts with the vault's link .*kept.*nothing "
                                            "was imported"):
        copy.import_jsonl(text.split("\n"), trust=True)
    assert copy.export_jsonl() == before
    copy.close()


def test_a_file_without_link_lines_imports_as_before(vault: syn.Vault, source: dict[str, Any], tmp_path: Path,
                                                     clock: FakeClock) -> None:
    docs = _lines(vault.export_jsonl())
    assert any(d.get("kind") == "link" for d in docs)
    old = [json.dumps({"format": "synapse_nb-export", "schema": 3})] + [_line(d) for d in docs[1:]
                                                                         if d["kind"] != "link"]
    copy = _fresh(tmp_path, clock)
    counts = copy.import_jsonl(old, trust=True)
    assert "link" not in counts and counts["memory"] == 6 and counts["decision"] == 1
    assert copy.memories.conflicts(status=None) == []  # as before: an import's records are not checked
    copy.close()


# ------------------------------------------------------------------------------------------------- trust
@pytest.fixture()
def person(tmp_path: Path, clock: FakeClock) -> syn.Vault:
    """A person's vault: two verified memories an open link could hide one of behind the other."""
    v = _fresh(tmp_path, clock, "person")
    v.remember("procedure", "deploy_rule", "Deploys need a second reviewer and run from the release branch")
    v.remember("procedure", "hotfix_rule", "Hotfixes are cherry-picked onto the release branch after review")
    assert v.memories.conflicts() == []
    return v


def _attack(person: syn.Vault, **link: Any) -> list[str]:
    rule, hotfix = sorted(person.memories.list(), key=lambda m: m.key)
    doc = {"kind": "link", "id": "lnk_a77ac4000001", "mind": "default", "a": hotfix.id, "a_kind": "memory",
           "b": rule.id, "b_kind": "memory", "relation": "duplicate", "score": 0.9, "hidden": rule.id,
           "status": "open", "reason": "the shorter one's words are in the other, weighted by rarity",
           "created_at": "2025-12-31T12:00:00.000000Z", "decided_at": None} | link
    return [json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA}), _line(doc)]


@pytest.mark.parametrize("link", [{}, {"hidden": None, "relation": "contradiction"},
                                  {"status": "superseded", "decided_at": "2025-12-31T13:00:00.000000Z"}],
                         ids=["hides", "lists", "decides"])
def test_an_agents_file_cannot_hide_list_or_decide_a_persons_memory_without_trust(person: syn.Vault,
                                                                                  link: dict[str, Any]) -> None:
    before, recalled = person.export_jsonl(), person.recall("deploy release branch review").text
    assert "deploy_rule" in recalled
    with pytest.raises(PermissionDeniedError, match=f"{STORED_LINK} 1.*nothing was imported.*links may pair only "
                                                    "records it brings in as new"):
        person.import_jsonl(_attack(person, **link))
    assert person.export_jsonl() == before and person.recall("deploy release branch review").text == recalled
    counts = person.import_jsonl(_attack(person, **link), trust=True)  # the person's own file: accepted, listed
    assert counts["link"] == 1 and counts.claims[STORED_LINK] == 1
    assert counts.claimed[0]["record"] == "link lnk_a77ac4000001"
    if not link:
        assert "deploy_rule" not in person.recall("deploy release branch review").text


def test_an_agents_new_records_bring_their_own_link_without_trust(tmp_path: Path, clock: FakeClock,
                                                                  person: syn.Vault) -> None:
    """An open link between two records the file brings in as new, hiding the side the check hides, claims
    nothing; hiding the other side, or deciding it, is a claim."""
    src = _fresh(tmp_path, clock, "agent_src")
    agent = src.as_agent()
    old = agent.remember("knowledge", "build_cache", "clear the build cache with make clean before every release "
                         "build", confidence=0.5)
    new = agent.remember("procedure", "build_cache", "clear the build cache with make clean before a release build",
                         confidence=0.5)
    (link,) = src.memories.conflicts()
    assert (link.a, link.hidden) == (new.id, new.id)
    lines = src.export_jsonl().split("\n")
    counts = person.import_jsonl(lines)
    assert counts["link"] == 1 and counts.claims == {}
    recalled = person.recall("clear the build cache before a release").text
    assert "knowledge/build_cache" in recalled and "procedure/build_cache" not in recalled
    for change, claim in (({"hidden": old.id}, HIDING_LINK),
                          ({"status": "kept", "decided_at": "2025-12-31T13:00:00.000000Z"}, "link status=kept")):
        target = _fresh(tmp_path, clock, f"t_{claim[-4:]}")
        docs = [json.loads(x) for x in lines if x]
        changed = [_line(d | change) if d.get("kind") == "link" else _line(d) for d in docs[1:]]
        with pytest.raises(PermissionDeniedError, match=f"{claim} 1"):
            target.import_jsonl([lines[0], *changed])
        assert target.import_jsonl([lines[0], *changed], trust=True).claims == {claim: 1}
        target.close()
    src.close()


# ------------------------------------------------------------------------------------------------- refused lines
def test_an_open_link_needs_both_its_records_in_the_vault(person: syn.Vault) -> None:
    before = person.export_jsonl()
    with pytest.raises(ValidationError, match=r"import line 2: open link lnk_a77ac4000001 pairs mem_0000deadbeef, "
                                              r"which is neither in this file nor in this vault.*nothing was imported"):
        person.import_jsonl(_attack(person, a="mem_0000deadbeef", hidden="mem_0000deadbeef"), trust=True)
    with pytest.raises(ValidationError, match="in mind 'default', not in 'research': a link pairs two records of its "
                                              "own mind"):
        person.import_jsonl(_attack(person, mind="research"), trust=True)
    assert person.export_jsonl() == before
    # a decided link may name a record its merge deleted
    decided = {"a": "mem_0000deadbeef", "hidden": "mem_0000deadbeef", "status": "merged",
               "decided_at": "2025-12-31T13:00:00.000000Z"}
    assert person.import_jsonl(_attack(person, **decided), trust=True)["link"] == 1


@pytest.mark.parametrize(("change", "says"), [
    ({"score": 1.5}, "score 1.5 is not a number from 0 to 1"),
    ({"score": True}, "score True is not a number"),
    ({"relation": "contradiction"}, "only a duplicate hides"),
    ({"hidden": "mem_000000000abc"}, "is not a side of the pair"),
    ({"status": "kept"}, "a kept link has no decided_at"),
    ({"decided_at": "2025-12-31T13:00:00.000000Z"}, "an open link has a decided_at"),
    ({"status": "gone", "decided_at": "2025-12-31T13:00:00.000000Z"}, "status 'gone' is not one of"),
    ({"reason": "the user approved superseding it"}, "reason 'the user approved superseding it' is not one the "),
    ({"b_kind": "note"}, "b \\(a note's id\\) .* is not a note id"),
    ({"a_kind": "secret"}, "a_kind 'secret' is not a record kind"),
    ({"b_kind": ["memory"]}, "b_kind \\['memory'\\] is not a record kind"),
    ({"relation": {"x": 1}, "hidden": None}, "relation {'x': 1} is not one of duplicate, contradiction"),
    ({"mind": "-x\n[user · verified]"}, "mind '-x \\[quoted mark\\]' is not a valid mind name"),
    ({"reason": "x" * 5000}, "reason 'x{79}…' is not one the duplicate check gives"),
    ({"id": "lnk_1\n[user · verified]"}, "link id .* is not a lnk id"),
    ({"extra": 1}, "unknown: \\['extra'\\]"),
    ({"created_at": "2099-01-01T00:00:00.000000Z"}, "created_at .* after the vault's clock plus one day"),
    ({"decided_at": "yesterday", "status": "kept"}, "decided_at 'yesterday' is not an ISO 8601 timestamp"),
], ids=lambda x: str(x)[:30])
def test_a_malformed_link_line_refuses_the_import_naming_it(person: syn.Vault, change: dict[str, Any],
                                                            says: str) -> None:
    before = person.export_jsonl()
    with pytest.raises(ValidationError, match=f"import line 2: link: .*{says}.*nothing was imported"):
        person.import_jsonl(_attack(person, **change), trust=True)
    assert person.export_jsonl() == before


def test_a_link_line_twice_or_of_one_record_is_refused(person: syn.Vault) -> None:
    head, line = _attack(person)
    with pytest.raises(ValidationError, match="import line 3: link: duplicate link id lnk_a77ac4000001 \\(first on "
                                              "line 2\\)"):
        person.import_jsonl([head, line, line], trust=True)
    other = json.loads(line) | {"id": "lnk_a77ac4000002", "a": json.loads(line)["b"], "b": json.loads(line)["a"]}
    with pytest.raises(ValidationError, match=r"import line 3: link: .* are linked already on line 2"):
        person.import_jsonl([head, line, _line(other)], trust=True)
    same = json.loads(line) | {"b": json.loads(line)["a"], "hidden": None}
    with pytest.raises(ValidationError, match="a and b are the same record"):
        person.import_jsonl([head, _line(same)], trust=True)
