"""Property-based: random input to every write is either stored correctly or a SynapseError, never anything else,
and a refused write leaves the vault unchanged (export_jsonl() byte-identical).

Deterministic (``derandomize=True``) and bounded (``max_examples`` per write) so the file stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import synapse_nb as syn

# No shrinking: a failure is reported as generated (still reproducible: derandomized), so a core bug costs
# seconds, not minutes of shrinking against a growing vault.
SETTINGS = settings(max_examples=80, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- strategies -------------------------------------------------------------------------------------------------
_chars = st.one_of(
    st.characters(exclude_categories=()),  # everything, incl. control and format characters
    st.characters(categories=["Cs"]),  # lone surrogates
    st.sampled_from(["\x00", "\n", "\r", "\t", "\x1b", "\u2028", "\ufeff", "🚀", "é", "_", " ", '"', "*"]),
)
any_text = st.text(alphabet=_chars, max_size=40)
huge_text = st.sampled_from([32_768, 32_769, 200_000]).map(lambda n: "é" * n)
#: every kind of junk equally likely: text (surrogates, control characters), huge text and wrong types
junk = st.one_of(
    any_text, huge_text, st.none(), st.booleans(), st.integers(), st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.binary(max_size=8), st.lists(any_text, max_size=3),
    st.dictionaries(any_text, any_text, max_size=2), st.just(datetime(2026, 1, 1, tzinfo=UTC)), st.just(object()),
    st.just(("tuple", 1)),
)
plain = st.text(alphabet=st.characters(categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=60).filter(
    lambda s: s.strip())
snake = st.from_regex(r"[a-z][a-z0-9]{0,8}(_[a-z0-9]{1,5}){0,2}", fullmatch=True)


# valid values per argument (the tests replace one argument at a time with junk)
category = st.sampled_from(syn.CATEGORIES).flatmap(lambda c: st.sampled_from([c, c.upper(), f" {c.title()} "]))
key = snake
# a valid tag is one word (no comma, no inner space); "#Deploy" is the tag "deploy"
_tag = st.one_of(plain.map(lambda s: s[:60]).filter(lambda s: "," not in s and len(s.split()) <= 1),
                 st.sampled_from(["Deploy", "#Deploy", " db "]))
tags = st.one_of(st.none(), st.lists(_tag, max_size=4), st.lists(_tag, max_size=3).map(",".join))
files = st.one_of(st.none(), st.lists(plain.filter(lambda s: "\n" not in s), max_size=4))
priority = st.one_of(st.none(), st.sampled_from(["critical", "high", "normal", "low", "HIGH"]))
confidence = st.one_of(st.none(), st.floats(min_value=0, max_value=1))
expires = st.one_of(st.none(), st.sampled_from(["7d", "12h", "2030-01-01T00:00:00Z", "1w"]))


# -- the harness ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pv(tmp_path_factory: pytest.TempPathFactory) -> syn.Vault:
    """One vault for all examples of this module (a vault per example would be too slow)."""
    v = syn.open_vault(Path(tmp_path_factory.mktemp("props")))
    v.remember("project", "existing", "an existing memory to update")
    v.lessons.create("a pending lesson")
    yield v
    v.close()


def check(v: syn.Vault, call: Callable[[], Any], verify: Callable[[Any], None]) -> None:
    before = v.export_jsonl()
    try:
        result = call()
    except syn.SynapseError as exc:
        assert str(exc) and "\n" not in str(exc)
        assert v.export_jsonl() == before, "a refused write changed the vault"
        return
    verify(result)


def _norm_tags(t: Any) -> tuple[str, ...]:
    items = t.split(",") if isinstance(t, str) else list(t)
    return tuple(sorted({x.strip().lstrip("#").strip().lower() for x in items} - {""}))


def _norm_files(f: Any) -> tuple[str, ...]:
    items = f.split(",") if isinstance(f, str) else list(f)
    out: list[str] = []
    for x in items:
        x = x.strip()
        if x and x not in out:
            out.append(x)
    return tuple(out)


# -- one property per write -------------------------------------------------------------------------------------
def draw_args(data: st.DataObject, good: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    """Valid values for every argument except (usually) one, which gets junk; sometimes all junk-prone."""
    bad = data.draw(st.sampled_from([None, "*all*", *good]), label="bad argument")
    out = {}
    for name, strat in good.items():
        if bad == name:
            out[name] = data.draw(junk, label=name)
        elif bad == "*all*":
            out[name] = data.draw(st.one_of(strat, junk), label=name)
        else:
            out[name] = data.draw(strat, label=name)
    return out


@SETTINGS
@given(data=st.data())
def test_remember(pv: syn.Vault, data: st.DataObject) -> None:
    a = draw_args(data, {"category": category, "key": key, "content": plain, "tags": tags, "priority": priority,
                         "source": st.one_of(st.none(), st.sampled_from(["user", "agent"])),
                         "verified": st.one_of(st.none(), st.booleans()), "confidence": confidence,
                         "expires": expires})

    def verify(m: syn.Memory) -> None:
        assert pv.memories.get(m.id) == m
        assert (m.category, m.key, m.content) == (a["category"].strip().lower(), a["key"].strip(), a["content"])
        if a["tags"] is not None:
            assert m.tags == _norm_tags(a["tags"])
        if a["priority"] is not None:
            assert m.priority == a["priority"].lower()
        if a["confidence"] is not None:
            assert m.confidence == float(a["confidence"])
    check(pv, lambda: pv.remember(a["category"], a["key"], a["content"], tags=a["tags"], priority=a["priority"],
                                  source=a["source"], verified=a["verified"], confidence=a["confidence"],
                                  expires=a["expires"]), verify)


@SETTINGS
@given(data=st.data(), agent=st.booleans())
def test_update(pv: syn.Vault, data: st.DataObject, agent: bool) -> None:
    a = draw_args(data, {"content": st.one_of(st.none(), plain), "tags": tags, "priority": priority,
                         "confidence": st.one_of(st.none(), st.floats(0, 0.7)), "expires": expires})
    ag = pv.as_agent()
    # three underscores: a key the `snake` strategy never generates, so a user write cannot take it over
    target = ag.remember("knowledge", "agent_owned_by_it", "the agent's") if agent else pv.memories.get_by_key(
        "project", "existing")
    h = ag if agent else pv

    def verify(m: syn.Memory) -> None:
        assert m.id == target.id and pv.memories.get(m.id) == m
        if a["content"] is not None:
            assert m.content == a["content"]
        if a["tags"] is not None:
            assert m.tags == _norm_tags(a["tags"])
    check(pv, lambda: h.memories.update(target.id, **a), verify)


@SETTINGS
@given(data=st.data())
def test_checkpoint(pv: syn.Vault, data: st.DataObject) -> None:
    a = draw_args(data, {"doing": plain, "files": files, "next_step": st.one_of(st.none(), plain),
                         "blockers": st.one_of(st.none(), plain, st.lists(plain, max_size=3)),
                         "origin": st.sampled_from(["api", "notebook", "cli", "agent", "auto", "watch"])})

    def verify(c: syn.Checkpoint) -> None:
        assert pv.checkpoints.get(c.id) == c
        assert c.doing == a["doing"]
        if a["files"] is not None:
            assert c.changed_files == _norm_files(a["files"])
    check(pv, lambda: pv.checkpoint(a["doing"], files=a["files"], next_step=a["next_step"], blockers=a["blockers"],
                                    origin=a["origin"]), verify)


@SETTINGS
@given(data=st.data())
def test_decide(pv: syn.Vault, data: st.DataObject) -> None:
    a = draw_args(data, {"decision": plain, "rationale": st.one_of(st.none(), plain), "tags": tags})

    def verify(d: syn.Decision) -> None:
        assert pv.decisions.get(d.id) == d
        assert d.decision == a["decision"]
        assert d.tags == (_norm_tags(a["tags"]) if a["tags"] is not None else ())
    check(pv, lambda: pv.decide(a["decision"], rationale=a["rationale"], tags=a["tags"]), verify)


_sha = st.from_regex(r"[0-9a-f]{40}", fullmatch=True)
_commit = st.fixed_dictionaries({"sha": _sha}, optional={"subject": plain, "author": plain})
_commit_junk = st.fixed_dictionaries({"sha": st.one_of(_sha, junk)}, optional={"subject": junk, "date": junk})


@SETTINGS
@given(data=st.data())
def test_lessons_create(pv: syn.Vault, data: st.DataObject) -> None:
    a = draw_args(data, {
        "summary": plain, "files": files, "branch": st.one_of(st.none(), snake),
        "revert_commit": st.one_of(st.none(), _commit, _commit_junk),
        "reverted_commits": st.one_of(st.just(()), st.lists(st.one_of(_commit, _commit_junk), max_size=2)),
        "diffstat": st.one_of(st.just(()), st.lists(st.tuples(plain, st.one_of(st.none(), st.integers(0, 10**6)),
                                                              st.one_of(st.none(), st.integers(0, 10**6))),
                                                    max_size=3)),
    })

    def verify(les: syn.Lesson) -> None:
        assert les.status == "pending" and les.summary == a["summary"]
        assert pv.lessons.get(les.id) == les
    check(pv, lambda: pv.lessons.create(**a), verify)


@SETTINGS
@given(data=st.data(), agent=st.booleans(), use_prefix=st.booleans())
def test_submit_analysis(pv: syn.Vault, data: st.DataObject, agent: bool, use_prefix: bool) -> None:
    les = pv.lessons.pending()[0]
    a = draw_args(data, {"text": plain, "id": st.just(les.id[:10] if use_prefix else les.id)})
    h = pv.as_agent() if agent else pv

    def verify(result: Any) -> None:
        got = pv.lessons.get(les.id)
        assert got.analysis == a["text"] and got.analysis_by == h.actor and got.status == "pending"
        assert result is None if agent else result == got
    check(pv, lambda: h.lessons.submit_analysis(a["id"], a["text"]), verify)


@SETTINGS
@given(data=st.data())
def test_episodes_log(pv: syn.Vault, data: st.DataObject) -> None:
    a = draw_args(data, {"task_key": snake, "status": st.sampled_from(["success", "failure", "unknown", "FAILURE"]),
                         "outcome": st.one_of(st.none(), plain), "refs": files,
                         "duration_s": st.one_of(st.none(), st.floats(min_value=0, max_value=1e9))})

    def verify(e: syn.Episode) -> None:
        assert pv.episodes.get(e.id) == e
        assert e.task_key == a["task_key"].strip() and e.status == a["status"].lower()
    check(pv, lambda: pv.episodes.log(**a), verify)


@SETTINGS
@given(data=st.data())
def test_notes_add(pv: syn.Vault, data: st.DataObject) -> None:
    a = draw_args(data, {"name": snake, "trigger": plain, "body": plain})

    def verify(n: syn.Note) -> None:
        assert pv.notes.get(n.id) == n
        assert (n.name, n.trigger, n.body) == (a["name"].strip(), a["trigger"], a["body"])
        assert pv.notes.expand(n.name) == a["body"]
    check(pv, lambda: pv.notes.add(a["name"], a["trigger"], a["body"]), verify)


def test_integrity_after_the_storm(pv: syn.Vault) -> None:
    assert pv._store.integrity_check() == "ok"
    # every FTS index agrees with its table
    for table in ("memories", "checkpoints", "decisions", "lessons", "episodes", "notes"):
        pv._store.query(f"INSERT INTO {table}_fts({table}_fts, rank) VALUES ('integrity-check', 1)")


# -- the junk matrix: every write x every argument x every kind of junk, deterministically ------------------------
JUNK_VALUES: list[Any] = [
    None, True, 0, -1, 10**400, 1.5, float("nan"), float("inf"), b"bytes", ["a", 1], [None], {"a": 1},
    ("tuple", 1), datetime(2026, 1, 1, tzinfo=UTC), object(), "", "   ", "a\x00b", "\ud800", "x" * 200_000,
    "line\nbreak", [], "🚀", {"sha": "\ud800"}, [{"sha": object()}], [("p", float("inf"), 1)],
]


def _writes(v: syn.Vault) -> dict[str, tuple[Callable[..., Any], dict[str, Any]]]:
    les_id = v.lessons.pending()[0].id
    mem_id = v.memories.get_by_key("project", "existing").id
    return {
        "remember": (v.remember, {"category": "project", "key": "matrix_key", "content": "c", "tags": ["t"],
                                  "priority": "high", "source": "user", "verified": True, "confidence": 0.9,
                                  "expires": "7d"}),
        "update": (v.memories.update, {"id": mem_id, "content": "c", "tags": ["t"], "priority": "low",
                                       "confidence": 0.5, "expires": "7d"}),
        "checkpoint": (v.checkpoint, {"doing": "d", "files": ["a.py"], "next_step": "n", "blockers": "b",
                                      "origin": "api"}),
        "decide": (v.decide, {"decision": "d", "rationale": "r", "tags": ["t"]}),
        "lessons.create": (v.lessons.create, {"summary": "s", "files": ["a.py"], "branch": "main",
                                              "revert_commit": None, "reverted_commits": (), "diffstat": ()}),
        "submit_analysis": (v.lessons.submit_analysis, {"id": les_id, "text": "t"}),
        "episodes.log": (v.episodes.log, {"task_key": "task", "status": "success", "outcome": "o", "refs": ["r"],
                                          "duration_s": 1.0}),
        "notes.add": (v.notes.add, {"name": "matrix_note", "trigger": "t", "body": "b"}),
    }


@pytest.mark.parametrize("write", ["remember", "update", "checkpoint", "decide", "lessons.create",
                                   "submit_analysis", "episodes.log", "notes.add"])
def test_junk_matrix(pv: syn.Vault, write: str) -> None:
    """Each argument in turn gets each junk value: SynapseError with the vault unchanged, or a clean store."""
    fn, good = _writes(pv)[write]
    crashes = []
    for arg in good:
        for value in JUNK_VALUES:
            kwargs = dict(good, **{arg: value})
            before = pv.export_jsonl()
            try:
                fn(**kwargs)
            except syn.SynapseError:
                if pv.export_jsonl() != before:
                    crashes.append(f"{write}({arg}={value!r:.40}): refused but the vault changed")
            except Exception as exc:  # noqa: BLE001 - the point: nothing but SynapseError may escape
                crashes.append(f"{write}({arg}={value!r:.40}): {type(exc).__name__}: {exc}"[:200])
    assert not crashes, "\n".join(crashes)
