"""Memories: the seed model (categories, keys, upsert, tags, priority, provenance, expiry), search and recall_text."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0, FakeClock

import synapse_nb as syn
from synapse_nb._util import MAX_TEXT, fmt_ts


# -- categories and keys ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("given", ["project", "PROJECT", "Project", "  pRoJeCt  "])
def test_category_case_insensitive(vault: syn.Vault, given: str) -> None:
    m = vault.remember(given, "status", "ok")
    assert m.category == "project"
    assert vault.memories.get_by_key(given, "status").id == m.id


def test_all_eight_categories(vault: syn.Vault) -> None:
    assert syn.CATEGORIES == ("identity", "preference", "project", "context", "knowledge", "mistake", "procedure",
                              "relationship")
    for c in syn.CATEGORIES:
        vault.remember(c, "k", c)
    assert sorted(m.category for m in vault.memories.list()) == sorted(syn.CATEGORIES)
    assert [m.content for m in vault.memories.list(category="mistake")] == ["mistake"]


@pytest.mark.parametrize("bad", ["projects", "", "misc", None, 3, "proj ect"])
def test_unknown_category_refused(vault: syn.Vault, bad: object) -> None:
    with pytest.raises(syn.ValidationError, match="category") as ei:
        vault.remember(bad, "k", "v")  # type: ignore[arg-type]
    assert "identity" in str(ei.value)  # the message lists what is accepted
    assert vault.memories.count() == 0


@pytest.mark.parametrize("key", ["project_status", "a", "v2", "run_migrations_v3", "  spaced_ok  "])
def test_snake_case_keys_accepted(vault: syn.Vault, key: str) -> None:
    assert vault.remember("project", key, "x").key == key.strip()


def test_bad_keys_refused(vault: syn.Vault) -> None:
    for key in ["ProjectStatus", "project-status", "two__under", "_lead", "trail_", "1abc", "has space", "",
                "é_key", "a\nb", None, 7]:
        with pytest.raises(syn.ValidationError, match="key"):
            vault.remember("project", key, "x")  # type: ignore[arg-type]
    assert vault.memories.count() == 0


def test_content_limits(vault: syn.Vault) -> None:
    for bad in ["", "   ", "\n\t", "a\x00b", "bell\x07", "x" * (MAX_TEXT + 1), "lone \ud800 surrogate", None, 5, b"b"]:
        with pytest.raises(syn.ValidationError, match="content"):
            vault.remember("project", "k", bad)  # type: ignore[arg-type]
    assert vault.memories.count() == 0
    ok = "x" * MAX_TEXT
    assert vault.remember("project", "k", ok).content == ok
    multi = "line one\n\tline two — ünïcödé 🚀"
    assert vault.remember("project", "k2", multi).content == multi


# -- upsert -------------------------------------------------------------------------------------------------------
def test_upsert_keeps_id_and_updates_in_place(vault: syn.Vault, clock: FakeClock) -> None:
    m1 = vault.remember("project", "status", "v1", tags=["a"], priority="high")
    clock.advance(hours=1)
    m2 = vault.remember("PROJECT", "status", "v2")
    assert m2.id == m1.id
    assert m2.content == "v2"
    assert m2.created_at == m1.created_at == fmt_ts(T0)
    assert m2.updated_at == fmt_ts(T0 + timedelta(hours=1))
    assert m2.tags == ("a",) and m2.priority == "high"  # None keeps tags and priority
    m3 = vault.remember("project", "status", "v3", tags=[], priority="low")
    assert m3.id == m1.id and m3.tags == () and m3.priority == "low"
    assert vault.memories.count() == 1
    # same key in another category is another memory
    assert vault.remember("knowledge", "status", "other").id != m1.id
    assert vault.memories.count() == 2


# -- tags -----------------------------------------------------------------------------------------------------------
def test_tags_lowercased_deduplicated_sorted(vault: syn.Vault) -> None:
    m = vault.remember("project", "k", "v", tags=["Deploy", "OPS", "deploy", " ops ", ""])
    assert m.tags == ("deploy", "ops")
    assert vault.remember("project", "k2", "v", tags="B, a ,A").tags == ("a", "b")


@pytest.mark.parametrize("q", ["deploy", "DEPLOY", "Deploy", " deploy "])
def test_by_tag_case_insensitive(vault: syn.Vault, q: str) -> None:
    a = vault.remember("project", "a", "one", tags=["Deploy"])
    vault.remember("project", "b", "two", tags=["other"])
    assert [m.id for m in vault.memories.by_tag(q)] == [a.id]
    assert [m.id for m in vault.memories.search("one", tag=q)] == [a.id]
    assert list(vault.memories.search("two", tag=q)) == []


def test_tags_follow_updates_and_deletes(vault: syn.Vault) -> None:
    m = vault.remember("project", "a", "one", tags=["old"])
    vault.memories.update(m.id, tags=["new"])
    assert list(vault.memories.by_tag("old")) == []
    assert [x.id for x in vault.memories.by_tag("new")] == [m.id]
    vault.memories.delete(m.id)
    assert list(vault.memories.by_tag("new")) == []


def test_bad_tags_refused(vault: syn.Vault) -> None:
    for tags in [3, [1, 2], [None], ["a\nb"], ["x" * 65], [f"t{i}" for i in range(33)], b"ab"]:
        with pytest.raises(syn.ValidationError):
            vault.remember("project", "k", "v", tags=tags)
    assert vault.memories.count() == 0


# -- priority and ordering --------------------------------------------------------------------------------------
def test_priority_then_recency_in_list_and_recall_text(vault: syn.Vault, clock: FakeClock) -> None:
    order = []
    for i, prio in enumerate(["low", "normal", "critical", "high", "normal", "critical", "low"]):
        clock.advance(minutes=1)
        order.append((prio, f"m{i}"))
        vault.remember("knowledge", f"m{i}", f"content {i}", priority=prio.upper() if i % 2 else prio)
    rank = {p: i for i, p in enumerate(syn.PRIORITIES)}
    expected = [k for _, k in sorted(order, key=lambda pk: (rank[pk[0]], -int(pk[1][1:])))]
    assert [m.key for m in vault.memories.list()] == expected == ["m5", "m2", "m3", "m4", "m1", "m6", "m0"]
    lines = vault.memories.recall_text().splitlines()[1:]
    assert [ln.split(": ")[0].split("/")[1] for ln in lines] == expected
    assert lines[0].startswith("- [user · verified] [critical] knowledge/m5")
    # an update makes a memory the most recent in its priority
    clock.advance(minutes=1)
    vault.remember("knowledge", "m2", "touched")
    assert [m.key for m in vault.memories.list()][:2] == ["m2", "m5"]


def test_bad_priority_refused(vault: syn.Vault) -> None:
    with pytest.raises(syn.ValidationError, match="critical"):
        vault.remember("project", "k", "v", priority="urgent")
    with pytest.raises(syn.ValidationError):
        vault.remember("project", "k", "v", priority=1)  # type: ignore[arg-type]
    assert vault.memories.count() == 0


# -- provenance defaults ----------------------------------------------------------------------------------------
def test_user_defaults(vault: syn.Vault) -> None:
    m = vault.remember("project", "k", "v")
    assert (m.source, m.verified, m.confidence, m.priority, m.expires_at) == ("user", True, 1.0, "normal", None)


def test_agent_defaults(agent_vault: syn.Vault) -> None:
    m = agent_vault.remember("project", "k", "v")
    assert (m.source, m.verified, m.confidence) == ("agent", False, 0.7)
    assert agent_vault.remember("project", "k2", "v", confidence=0.25).confidence == 0.25


def test_user_may_record_an_agent_claim(vault: syn.Vault) -> None:
    m = vault.remember("project", "k", "v", source="agent")
    assert (m.source, m.verified, m.confidence) == ("agent", False, 0.7)
    m = vault.remember("project", "k3", "v", verified=False, confidence=0.4)
    assert (m.source, m.verified, m.confidence) == ("user", False, 0.4)


def test_bad_confidence_refused(vault: syn.Vault) -> None:
    for conf in [-0.01, 1.01, float("nan"), float("inf"), "0.5", True, [0.5]]:
        with pytest.raises(syn.ValidationError, match="confidence"):
            vault.remember("project", "k", "v", confidence=conf)  # type: ignore[arg-type]
    assert vault.memories.count() == 0


def test_bad_source_and_verified_refused(vault: syn.Vault) -> None:
    with pytest.raises(syn.ValidationError, match="source"):
        vault.remember("project", "k", "v", source="system")
    with pytest.raises(syn.ValidationError, match="verified"):
        vault.remember("project", "k", "v", verified="yes")  # type: ignore[arg-type]
    assert vault.memories.count() == 0


# -- expiry -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("given", "delta"), [("7d", timedelta(days=7)), ("12h", timedelta(hours=12)),
                                              ("30m", timedelta(minutes=30)), ("2w", timedelta(weeks=2)),
                                              (timedelta(days=3), timedelta(days=3))])
def test_expires_duration(vault: syn.Vault, given: object, delta: timedelta) -> None:
    assert vault.remember("context", "k", "v", expires=given).expires_at == fmt_ts(T0 + delta)


def test_expires_iso(vault: syn.Vault) -> None:
    assert vault.remember("context", "a", "v", expires="2026-03-01T00:00:00Z").expires_at == \
        "2026-03-01T00:00:00.000000Z"
    assert vault.remember("context", "b", "v", expires="2026-03-01T02:00:00+02:00").expires_at == \
        "2026-03-01T00:00:00.000000Z"
    assert vault.remember("context", "c", "v", expires="2026-03-01").expires_at == "2026-03-01T00:00:00.000000Z"


def test_bad_or_past_expiry_refused(vault: syn.Vault) -> None:
    for bad in ["2025-12-31T00:00:00Z", fmt_ts(T0), "0d", "-1d", "tomorrow", "7 parsecs", 12, timedelta(0),
                timedelta(days=-1), "99999999d", ["7d"]]:
        with pytest.raises(syn.ValidationError):
            vault.remember("context", "k", "v", expires=bad)
    assert vault.memories.count() == 0


def test_expired_left_out_but_still_stored(vault: syn.Vault, clock: FakeClock) -> None:
    keep = vault.remember("context", "keep", "permanent fact about deploys", tags=["deploy"])
    gone = vault.remember("context", "gone", "temporary fact about deploys", tags=["deploy"], expires="1h")
    assert {m.key for m in vault.memories.list()} == {"keep", "gone"}
    clock.advance(hours=1)  # expires_at <= now: expired
    assert [m.key for m in vault.memories.list()] == ["keep"]
    assert [m.key for m in vault.memories.search("deploys")] == ["keep"]
    assert [m.key for m in vault.memories.by_tag("deploy")] == ["keep"]
    assert "gone" not in vault.memories.recall_text()
    assert vault.memories.recall_text().startswith("MEMORY (1 entry:")
    # still stored
    assert vault.memories.get(gone.id).key == "gone"
    assert {m.key for m in vault.memories.list(include_expired=True)} == {"keep", "gone"}
    assert [m.key for m in vault.memories.search("temporary", include_expired=True)] == ["gone"]
    assert gone.id in vault.export_jsonl()
    assert vault.status().counts["memories"] == {"total": 2, "verified": 2, "unverified": 0, "expired": 1}
    assert keep.id


def test_expiring_within(vault: syn.Vault, clock: FakeClock) -> None:
    a = vault.remember("context", "a", "v", expires="2d")
    b = vault.remember("context", "b", "v", expires="1d")
    vault.remember("context", "c", "v", expires="10d")
    vault.remember("context", "d", "v")
    assert [m.id for m in vault.memories.expiring()] == [b.id, a.id]  # default 7d, soonest first
    assert [m.id for m in vault.memories.expiring(within="1d")] == [b.id]
    assert [m.id for m in vault.memories.expiring(within=timedelta(hours=1))] == []
    assert len(vault.memories.expiring(within="30d")) == 3
    clock.advance(days=1, seconds=1)  # b expired: no longer "expiring"
    assert [m.id for m in vault.memories.expiring()] == [a.id]
    assert vault.status().expiring_memories == (a.id,)
    with pytest.raises(syn.ValidationError, match="within"):
        vault.memories.expiring(within="soon")


# -- recall_text ------------------------------------------------------------------------------------------------
def test_recall_text_format(vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock) -> None:
    assert vault.memories.recall_text() == "MEMORY (0 entries: 0 verified, 0 unverified)\n(no memories)"
    vault.remember("project", "project_status", "v1.5 deployed", tags=["Deploy", "prod"], priority="high")
    clock.advance(seconds=1)
    agent_vault.remember("knowledge", "guess", "the API might be rate limited")
    from synapse_nb.recall.assembly import AGENT_WORDS

    assert vault.memories.recall_text() == (
        "MEMORY (2 entries: 1 verified, 1 unverified)\n"
        f"{AGENT_WORDS}\n"  # an agent's memory is shown: what such a line is, once
        "- [user · verified] [high] project/project_status: v1.5 deployed #deploy #prod\n"
        "- [agent · unverified] [normal] knowledge/guess: the API might be rate limited"
    )
    assert agent_vault.memories.recall_text() == vault.memories.recall_text()


# -- search -----------------------------------------------------------------------------------------------------
HOSTILE = ['"', "'", '""', '"unbalanced', "AND", "OR", "NOT", "NEAR", "NEAR(deploy prod, 2)", "deploy AND prod",
           "deploy OR nothing", "NOT deploy", "*", "dep*", "^deploy", "content:deploy", "key:deploy", "tags:x",
           "(deploy", "deploy)", "((()))", "{deploy prod}", "-deploy", "+deploy", "deploy:", ":", "日本語", "🚀",
           "🚀 deploy", "", "   ", "\t\n", "\x00", "a\ud800b", "x" * 10_000, " ".join(["w"] * 500),
           "'; DROP TABLE memories; --", "café", "%", "_%", "\\", "NULL", "deploy\x00prod"]


@pytest.fixture()
def searchable(vault: syn.Vault) -> syn.Vault:
    vault.remember("project", "deploy_status", "we deploy to prod with kubectl", tags=["Deploy", "ops"])
    vault.remember("knowledge", "cafe_menu", "the café serves 日本語 coffee 🚀", tags=["food"])
    vault.remember("procedure", "run_tests", "pytest -q before every push", priority="high")
    return vault


def test_search_hostile_text_is_safe(searchable: syn.Vault) -> None:
    searchable.decide("deploy on fridays is banned", tags=["ops"])
    searchable.checkpoint("deploy prod")
    searchable.lessons.create("reverted deploy")
    searchable.episodes.log("deploy_prod")
    searchable.notes.add("deploy_notes", "how to deploy", "kubectl apply")
    before = searchable.export_jsonl()
    for q in HOSTILE:
        res = searchable.memories.search(q)
        assert all(isinstance(m, syn.Memory) for m in res), q
        for mgr in (searchable.decisions, searchable.checkpoints, searchable.lessons, searchable.episodes,
                    searchable.notes, searchable.as_agent().memories, searchable.as_agent().lessons):
            mgr.search(q)
        searchable.decisions.search(q, tag="ops")
        searchable.memories.search(q, tag="ops", category="project")
    assert searchable.export_jsonl() == before


def test_search_operators_are_plain_words(searchable: syn.Vault) -> None:
    s = searchable.memories.search
    assert [m.key for m in s("deploy prod")] == ["deploy_status"]
    assert [m.key for m in s("deploy AND prod")] == []  # "and" is a required word, not an operator
    assert [m.key for m in s("deploy OR coffee")] == []
    assert [m.key for m in s("content:deploy")] == []  # "content" is a word, not a column filter
    assert [m.key for m in s("^deploy")] == ["deploy_status"]
    assert [m.key for m in s("(deploy)")] == ["deploy_status"]
    assert [m.key for m in s('"kubectl"')] == ["deploy_status"]
    assert [m.key for m in s("DEPLOYS")] == ["deploy_status"]  # stemmed, case-insensitive
    assert [m.key for m in s("cafe")] == ["cafe_menu"]  # diacritics folded
    assert [m.key for m in s("café")] == ["cafe_menu"]
    assert [m.key for m in s("日本語")] == ["cafe_menu"]
    assert [m.key for m in s("deploy_status")] == ["deploy_status"]  # keys are searchable
    assert [m.key for m in s("ops")] == ["deploy_status"]  # tags are searchable


@pytest.mark.parametrize("q", ["", "   ", "\t\n", "🚀", "***", "()", '"', "___"], ids=repr)
def test_search_without_words_lists_everything(searchable: syn.Vault, q: str) -> None:
    assert [m.id for m in searchable.memories.search(q)] == [m.id for m in searchable.memories.list()]
    assert len(searchable.memories.search(q)) == 3


def test_search_filters_and_bad_args(searchable: syn.Vault) -> None:
    assert [m.key for m in searchable.memories.search("", category="PROCEDURE")] == ["run_tests"]
    assert [m.key for m in searchable.memories.search("deploy", tag="OPS")] == ["deploy_status"]
    with pytest.raises(syn.ValidationError):
        searchable.memories.search(None)  # type: ignore[arg-type]
    with pytest.raises(syn.ValidationError):
        searchable.memories.search("x", tag="")
    with pytest.raises(syn.ValidationError):
        searchable.memories.search("x", category="nope")
    with pytest.raises(syn.ValidationError):
        searchable.memories.search("deploy", limit=0)


def test_search_is_deterministic(searchable: syn.Vault) -> None:
    for i in range(20):
        searchable.remember("knowledge", f"deploy_note_{i}", f"deploy step {i % 3}")
    first = [m.id for m in searchable.memories.search("deploy")]
    assert len(first) == 21
    assert all([m.id for m in searchable.memories.search("deploy")] == first for _ in range(3))


# -- get / update / delete / verify / ids ---------------------------------------------------------------------
def test_get_update_delete(vault: syn.Vault, clock: FakeClock) -> None:
    m = vault.remember("project", "k", "v", tags=["a"], expires="1d")
    assert vault.memories.get(m.id) == m
    assert vault.memories.get_by_key("project", "k") == m
    clock.advance(minutes=5)
    u = vault.memories.update(m.id, content="v2", tags=["B"], priority="critical", confidence=0.5)
    assert (u.id, u.content, u.tags, u.priority, u.confidence, u.expires_at) == (m.id, "v2", ("b",), "critical",
                                                                                   0.5, m.expires_at)
    assert u.updated_at > m.updated_at and u.created_at == m.created_at
    assert vault.memories.update(m.id, expires="3d").expires_at == fmt_ts(clock() + timedelta(days=3))
    assert vault.memories.update(m.id, expires=None).expires_at is None
    assert vault.memories.update(m.id).content == "v2"  # nothing given: unchanged
    with pytest.raises(syn.ValidationError):
        vault.memories.update(m.id, content="")
    with pytest.raises(syn.ValidationError):
        vault.memories.update(m.id, expires="2020-01-01")
    assert vault.memories.get(m.id).content == "v2"
    gone = vault.memories.delete(m.id[:8])
    assert gone.id == m.id
    with pytest.raises(syn.NotFoundError):
        vault.memories.get(m.id)
    assert vault.memories.count() == 0


def test_verify(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    p = agent_vault.remember("knowledge", "claim", "the agent thinks so")
    assert not p.verified
    v = vault.memories.verify(p.id)
    assert v.verified and v.confidence == 0.7 and v.source == "agent"
    assert vault.memories.verify(p.id, confidence=1.0).confidence == 1.0
    with pytest.raises(syn.ValidationError):
        vault.memories.verify(p.id, confidence=2)
    assert vault.memories.get(p.id).confidence == 1.0


def test_unknown_ids(vault: syn.Vault) -> None:
    vault.remember("project", "k", "v")
    for bad in ["mem_000000000000", "mem_zzz", "nope", "dec_123", "mem_' OR 1=1 --", "%", "x" * 100, "mem_%"]:
        for call in (vault.memories.get, vault.memories.delete, vault.memories.verify,
                     lambda i: vault.memories.update(i, content="x")):
            with pytest.raises(syn.NotFoundError) as ei:
                call(bad)
            assert isinstance(ei.value, KeyError)
    assert vault.memories.count() == 1


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_empty_or_non_text_id_is_validation_error(vault: syn.Vault, bad: object) -> None:
    with pytest.raises(syn.ValidationError):
        vault.memories.get(bad)  # type: ignore[arg-type]


def test_get_by_key_unknown(vault: syn.Vault) -> None:
    with pytest.raises(syn.NotFoundError):
        vault.memories.get_by_key("project", "missing")


def test_prefixes_and_ambiguity(vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    import synapse_nb.kinds.memories as mm

    ids = iter(["mem_abc111111111", "mem_abc222222222", "mem_def333333333"])
    monkeypatch.setattr(mm, "new_id", lambda prefix: next(ids))
    a = vault.remember("project", "a", "1")
    b = vault.remember("project", "b", "2")
    c = vault.remember("project", "c", "3")
    assert vault.memories.get("mem_d").id == c.id
    assert vault.memories.get("mem_abc1").id == a.id
    assert vault.memories.get(" mem_abc2 ").id == b.id
    for prefix in ("mem_", "mem_abc", "m"):
        with pytest.raises(syn.AmbiguousIdError) as ei:
            vault.memories.get(prefix)
        assert isinstance(ei.value, syn.NotFoundError) and isinstance(ei.value, KeyError)
        assert a.id in str(ei.value) and b.id in str(ei.value)
    with pytest.raises(syn.AmbiguousIdError):
        vault.memories.delete("mem_abc")
    assert vault.memories.count() == 3


def test_record_conversions(vault: syn.Vault) -> None:
    m = vault.remember("project", "k", "v <b>", tags=["t"])
    d = m.to_dict()
    assert d["kind"] == "memory" and d["tags"] == ["t"] and d["id"] == m.id
    assert "&lt;b&gt;" in m._repr_html_()
    assert m.id in m._repr_markdown_()
    lst = vault.memories.list()
    assert list(lst.to_pandas()["key"]) == ["k"]
    assert lst.to_polars()["key"].to_list() == ["k"]
    assert m.id in lst._repr_html_()
