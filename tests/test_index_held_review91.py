"""Review 91: ``index check`` compared the latest version of the index's tables only, and said "index ok" while an
older version still held a deleted record's row (its text readable with lancedb's ``checkout(version)``). It now
names the records no longer in the store that an older version holds (``held``), until a scrub removes them.
"""

from __future__ import annotations

import synapse_nb as syn


def test_index_check_names_a_deleted_record_an_older_version_still_holds(vault: syn.Vault,
                                                                          agent_vault: syn.Vault) -> None:
    kept = vault.remember("knowledge", "sprint", "the sprint plan is reviewed on mondays")
    mine = agent_vault.remember("knowledge", "deploy_token", "agent saw Xylozorbquent-secret-7731 in the logs")
    vault.index.sync()
    assert vault.index.check().ok
    agent_vault.memories.delete(mine.id)  # an agent's deletion: its whole-index scrub stays owed (an hour)
    vault.index.sync()  # the row is marked deleted: the latest version no longer has it, an older one does
    report = vault.index.check()
    assert report.held == (mine.id,) and not report.ok, report
    assert (report.missing, report.stale, report.extra) == ((), (), ())
    assert vault.index.check(repair=True).held == (mine.id,)  # a person's repair: found, and scrubbed
    after = vault.index.check()
    assert after.ok and after.held == (), after
    assert kept.id in [i.id for i in vault.recall("sprint plan").items]
