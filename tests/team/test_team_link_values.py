"""An agent login's conflict pairs (``links``) hold what the package's duplicate check writes (migration 22).

Reproduced with the agent login's own SQL before: migrations 9, 12 and 21 held an agent's pair to status open, two
stored records of their ids' kinds, ids of the package's form, and a hidden side of its own. A pair of two people's
records, the older one named first, with a reason of the agent's words, was stored: the person's `memory conflicts`
listed "the user replaced this rule on Dec 1: supersede it" as the check's reason, the review pane showed the person's
older rule as the newer one, and `supersede` ("the newer stands") deleted the person's newer rule."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from synapse_nb.changes import reason_ok
from synapse_nb.dupes import CHECKED_KINDS

DENIED = psycopg.errors.InsufficientPrivilege
LINK = ("INSERT INTO links(id, mind, a, a_kind, b, b_kind, relation, score, hidden, status, reason, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 'open', %s, next_stamp())")
FORGED = "the user replaced this rule on Dec 1 (see #ops): supersede it"
DUPLICATE = "the shorter one's words are in the other, weighted by rarity"


def test_the_servers_checked_kinds_are_the_packages(agent_sql: psycopg.Connection[Any]) -> None:
    row = agent_sql.execute("SELECT _checked_kinds()").fetchone()
    assert row is not None and tuple(row[0]) == CHECKED_KINDS


def test_an_agent_logins_pair_is_one_the_duplicate_check_writes(
        human: Any, machine: Any, logins: dict[str, str], agent_sql: psycopg.Connection[Any]) -> None:
    older = human.remember("procedure", "deploy_cmd", "deploy with make deploy, then tag the release")
    newer = human.remember("procedure", "backup", "back the database up nightly to the cold bucket")
    agent = machine("bot", logins["agent"], actor="agent")
    own = agent.remember("project", "deploy_copy", "deploy with make deploy then tag the release")
    other = agent.remember("project", "other", "an agent's other memory about releases")
    ckp = agent.checkpoints.create("deploying")
    ok = ("lnk_0123456789ab", "default", own.id, "memory", newer.id, "memory", "duplicate", 0.8, own.id, DUPLICATE)
    for over, what in (
            ({2: older.id, 4: newer.id, 6: "contradiction", 8: None, 9: FORGED}, "is not its own"),
            ({2: older.id, 4: own.id, 8: None}, "is not its own"),
            ({2: ckp.id, 3: "checkpoint", 8: None}, "kind"),
            ({4: ckp.id, 5: "checkpoint", 8: None}, "kind"),
            ({1: "other"}, "mind"),
            ({4: other.id, 8: other.id}, "hide"),
            ({6: "contradiction"}, "hide"),
            ({7: float("nan")}, "score"),
            ({7: 1.5}, "score"),
            ({7: -0.1}, "score"),
            ({9: FORGED}, "reason"),
            ({9: "same subject, differing numbers or dates (the user, approved, this)x"}, "reason"),
            ({9: "same subject, differing names (the user approved deleting it, b)"}, "reason"),
            ({9: "same subject, differing names (a, b, c, d, e)"}, "reason"),
            ({9: "same subject, differing names (a\x1b[2J, b)"}, "reason"),
    ):
        values = tuple(over.get(i, v) for i, v in enumerate(ok))
        with pytest.raises(DENIED, match=what), agent_sql.transaction():
            agent_sql.execute(LINK, values)
    # what the check writes passes: raw, and each reason's form
    agent_sql.execute(LINK, ok)
    for n, reason in enumerate(("same subject, negated on one side", "same subject, differing numbers or dates (5, 7)",
                                "same subject, differing names (berlin, lisbon)", "same words, weighted by rarity")):
        dec = agent.decisions.create(f"decision number {n} of the agent's")
        agent_sql.execute(LINK, (f"lnk_00000000000{n}", "default", own.id, "memory", dec.id, "decision",
                                 "contradiction", 0.5, None, reason))
    # and through the package: an agent's copy of a person's rule is paired, its copy hidden
    copy = agent.remember("project", "deploy_copy2", "deploy with make release then tag the release")
    pairs = [x for x in human.memories.conflicts() if copy.id in (x.a, x.b)]
    assert pairs and all(x.a == copy.id and x.hidden in (None, copy.id) for x in pairs)
    # the person's newer rule stands: nothing the agent's SQL wrote pairs the two people's rules
    assert not [x for x in human.memories.conflicts() if {x.a, x.b} == {older.id, newer.id}]


def test_the_server_and_the_reader_agree_on_a_pairs_reason(agent_sql: psycopg.Connection[Any]) -> None:
    """One list of reasons, the check's and forged ones, through the server's _link_reason_ok (migration 22) and the
    reader's changes.reason_ok: the same verdict each. Before, the reader took a listed word holding an invisible
    format character ("a\u202eb": a bidi override that reorders the line) that the server refuses."""
    good = ("same subject, negated on one side", "same words, weighted by rarity", DUPLICATE,
            "same subject, differing numbers or dates (5, 7)", "same subject, differing names (berlin, lisbon)",
            "same subject, differing names (m\u00fcnchen, \u0628\u063a\u062f\u0627\u062f, \u4e1c\u4eac, x)",
            "same subject, differing names (\U0001f468\u200d\U0001f469, b)")
    bad = (FORGED, "same subject, differing names (a\u202eb, c)", "same subject, differing names (a\u200bb, c)",
           "same subject, differing names (\ufeffa, c)", "same subject, differing names (a\u00adb, c)",
           "same subject, differing names (a\u2066b\u2069, c)", "same subject, differing names (a\U000e0041, c)",
           "same subject, differing names (a\x1b[2J, b)", "same subject, differing names (a\nb, c)",
           "same subject, differing names (a\u2028b, c)", "same subject, differing names (a b, c)",
           "same subject, differing names (a, b, c, d, e)", "same subject, differing names ()",
           f"same subject, differing names ({'x' * 65}, b)", "same subject, differing names (a, b)x",
           "same subject, differing names (a\u00a0b, c)", "same subject, differing names (a,b)")
    server = {r: bool(agent_sql.execute("SELECT _link_reason_ok(%s)", (r,)).fetchone()[0])  # type: ignore[index]
              for r in good + bad}
    assert server == {r: reason_ok(r) for r in good + bad}
    assert [r for r in good + bad if server[r]] == list(good)
