"""What ``settings list`` / ``settings get`` say a setting does (its ``about``, the third field of ``SETTINGS``) is what
the code does (review 93 F4: ``agent_writes_per_hour`` was said to count "per mind" while the quota, its refusal and
docs/agents.md count every mind of the vault together; ``auto_checkpoint_every`` named "the two above", which in the
sorted listing are other settings). Each test drives the behaviour, then holds the description to the words of it."""

from __future__ import annotations

import pytest

import synapse_nb as syn
from synapse_nb.errors import QuotaExceededError
from synapse_nb.kinds.autocheckpoint import FALLBACK_SETTING, SETTING_OF_UNIT, AutoCheckpoint
from synapse_nb.settings import SETTINGS


def about(name: str) -> str:
    return SETTINGS[name][2]


def test_the_hourly_write_quota_is_said_to_count_every_mind_as_it_does(vault: syn.Vault) -> None:
    vault.settings.set("agent_writes_per_hour", 3)
    alpha, beta = vault.with_mind("alpha").as_agent(), vault.with_mind("beta").as_agent()
    alpha.checkpoint("alpha one")
    alpha.checkpoint("alpha two")
    beta.checkpoint("beta one")  # the third write, in another mind
    with pytest.raises(QuotaExceededError) as refused:  # counted per mind, beta would have two left
        beta.checkpoint("beta two")
    assert "every mind" in str(refused.value)
    assert "every mind" in about("agent_writes_per_hour")  # the listing says what the refusal says
    assert "per mind" not in about("agent_writes_per_hour")


def test_the_memory_quota_is_said_to_count_verified_memories_as_it_does(vault: syn.Vault) -> None:
    vault.settings.set("agent_memories_per_mind", 1)
    agent = vault.as_agent()
    vault.memories.verify(agent.remember("knowledge", "cache_ttl", "cache entries live 5 minutes").id)
    with pytest.raises(QuotaExceededError):  # a memory a person verified still counts
        agent.remember("knowledge", "api_port", "the API listens on 8080")
    assert "verified or not" in about("agent_memories_per_mind")


def test_the_fallback_checkpoint_pace_names_the_settings_it_stands_in_for(vault: syn.Vault) -> None:
    vault.settings.set(FALLBACK_SETTING, 4)
    for unit, name in SETTING_OF_UNIT.items():
        assert vault.settings.get(name) is None
        assert AutoCheckpoint.every_from(vault.settings.get, unit) == 4  # not set: the fallback's value
        assert name in about(FALLBACK_SETTING)  # named: the listing is sorted, nothing is "above" it
    assert "above" not in about(FALLBACK_SETTING)
