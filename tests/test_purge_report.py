"""A purge's report says what it removed (review 38, finding 3).

The record's delete trigger drops its pending revisions and open links; the purge deleted the record first, so
``store.revisions.purge`` and ``store.links.purge`` found nothing left to count and the report said "0 revisions,
0 links" of a pending revision that held a copy of the purged text. The purge now removes (and counts) them before
the record.
"""

from __future__ import annotations

import synapse_nb as syn


def test_a_purge_counts_the_pending_revision_that_held_a_copy_of_the_text(vault: syn.Vault,
                                                                          agent_vault: syn.Vault) -> None:
    m = vault.remember("knowledge", "secret_fact", "zebrafish7731 nests in the quarry pond")
    agent_vault.memories.update(m.id, content="zebrafish7731 nests in the quarry pond, copied")
    (rev,) = vault.memories.revisions()
    assert rev.rid == m.id
    report = vault.purge(m.id)
    assert report.record_deleted and report.revisions_removed == 1
    assert "1 revisions" in str(report)
    assert vault.memories.revisions() == []
    assert "zebrafish7731" not in vault.export_jsonl(history=True)


def test_a_purge_counts_the_open_links_of_the_record(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    fact = vault.decide("Priya adopted a rescue greyhound named Biscuit")
    msg = agent_vault.decide("Priya: Big news, we adopted a rescue greyhound last weekend! His name is Biscuit and "
                             "he already rules the couch, can't complain. The neighbours keep stopping by.")
    linked = [x for x in vault.memories.conflicts() if {x.a, x.b} == {fact.id, msg.id}]
    assert len(linked) == 1 and linked[0].status == "open"
    report = vault.purge(msg.id)
    assert report.record_deleted and report.links_removed == 1
    assert "1 links removed" in str(report)
    assert not [x for x in vault.memories.conflicts() if msg.id in (x.a, x.b)]
