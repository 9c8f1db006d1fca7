"""A semantic table that cannot be read (an agent's shell truncated its data files, a full disk, a killed write).

Every recall failed ("failed to load vectors ...; rebuild it from SQLite"), every agent hook's recall with it, and
the advice did nothing: ``index rebuild`` (the CLI never loads the model) and ``index check --repair`` said all was
well and left the table as it was. Now a recall answers from BM25 alone, as with ``recall_semantic`` 0, with one
warning; ``index check`` names the table (exit 1); ``index rebuild`` and ``index check --repair`` remove it and the
next recall with the channel builds it from SQLite. Agents still may not run the upkeep.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from test_recall_semantic import OPEN, Fake
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.errors import IndexError_
from synapse_nb.recall import semantic
from synapse_nb.render import SEMANTIC_OFF_LINE as OFF_LINE
from synapse_nb.render import esc
from synapse_nb.store import embedders, indexer
from synapse_nb.store.embedders import register_embedder
from synapse_nb.store.index.dense import DenseIndex

QUERIES = ["automobile purchase", "Ann sedan", "Bob puppy seaside", "green tea"]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    register_embedder("fake", Fake)


@pytest.fixture
def project(tmp_path: Path, fake: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault with the semantic channel on and its table built, then truncated as an agent's shell does."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    v = syn.open_vault(project)
    for k, t in {"car": "Ann bought a sedan last week", "pets": "Bob walks his puppy every morning",
                 "trip": "Bob went to the seaside in May", "misc": "Ann likes green tea"}.items():
        v.remember("project", f"k_{k}", t)
    v.settings.set("recall_embedder", "fake")
    v.settings.set("recall_semantic", 0.5)
    assert _by_meaning(v)
    v.close()
    _truncate(project)
    return project


def _index(project: Path) -> Path:
    return project / ".synapse" / "index"


def _tables(project: Path) -> list[str]:
    return sorted(p.name for p in _index(project).glob("semantic_*"))


def _truncate(project: Path) -> None:
    files = list(_index(project).glob("semantic_*.lance/data/*.lance"))
    assert files
    for f in files:
        f.write_bytes(f.read_bytes()[:100])


def _by_meaning(v: syn.Vault) -> bool:
    """Whether "automobile purchase" (no word in common with any record) finds the sedan first: the dense channel."""
    got = v.recall("automobile purchase", bars=OPEN).items
    return bool(got) and "sedan" in got[0].line


def _answers(v: syn.Vault) -> list[tuple[Any, ...]]:
    """Each query's answer; without the channel it had on, its text's first line said so (taken off here)."""
    out = []
    for q in QUERIES:
        got = v.recall(q, bars=OPEN)
        text = got.text
        if got.semantic_off is not None:
            assert text.startswith(f"{OFF_LINE}\n\n") and OFF_LINE not in text[len(OFF_LINE):], text
            text = text[len(OFF_LINE) + 2:]
        out.append((got.semantic_off is not None, text, [i.id for i in got.items], [(r.id, float(r.score).hex(), r.kept)
                                                         for r in got.explain()], str(got.explain())))
    return out


def _off(project: Path) -> list[tuple[Any, ...]]:
    """The answers with ``recall_semantic`` 0 (the table is never read)."""
    v = syn.open_vault(project)
    v.settings.set("recall_semantic", 0)
    try:
        return _answers(v)
    finally:
        v.settings.set("recall_semantic", 0.5)
        v.close()


def test_recall_answers_from_bm25_as_with_the_channel_off_and_warns(
        project: Path, caplog: pytest.LogCaptureFixture) -> None:
    off = _off(project)
    v = syn.open_vault(project)
    with caplog.at_level(logging.WARNING, "synapse_nb.recall"):
        got = _answers(v)
    assert got == [(True, *a[1:]) for a in off] and not any(a[0] for a in off)  # the same ranking, said off
    warned = [r.getMessage() for r in caplog.records if r.name == "synapse_nb.recall"]
    assert len(warned) == len(QUERIES), warned  # one a recall
    name = _tables(project)[0].removesuffix(".lance")
    assert all(name in w and "failed to load vectors" in w and "index rebuild" in w for w in warned), warned
    v.close()


def test_the_cli_recall_answers_with_the_same_bytes(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    runner = CliRunner()
    args = ["--vault", str(project), "recall", "query", "--explain", "Ann sedan"]
    v = syn.open_vault(project)
    v.settings.set("recall_semantic", 0)
    off = runner.invoke(app, args)
    v.settings.set("recall_semantic", 0.5)
    v.close()
    assert off.exit_code == 0, off.output
    with caplog.at_level(logging.WARNING, "synapse_nb.recall"):
        got = runner.invoke(app, args)
    assert got.exit_code == 0, (got.stdout, got.stderr)
    # the same bytes but the version: the setting written in between is a write, which moves it (review 84)
    off_text, off_version = off.stdout.rsplit("(read at vault version ", 1)
    got_text, got_version = got.stdout.rsplit("(read at vault version ", 1)
    assert got_text == f"{OFF_LINE}\n\n{off_text}" and "sedan" in got.stdout
    assert int(got_version.rstrip(")\n")) > int(off_version.rstrip(")\n"))
    assert "index rebuild" in caplog.text and "semantic_" in caplog.text


def test_index_check_names_the_table_and_exits_1(project: Path) -> None:
    name = _tables(project)[0].removesuffix(".lance")
    v = syn.open_vault(project)
    rep = v.index.check()
    assert rep.broken == (name,) and not rep.ok
    v.close()
    runner = CliRunner()
    res = runner.invoke(app, ["--vault", str(project), "index", "check"])
    assert res.exit_code == 1 and "index ok" not in res.stdout, res.stdout
    assert name in res.stdout and "index check --repair" in res.stdout
    res = runner.invoke(app, ["--vault", str(project), "index", "check", "--json"])
    out = json.loads(res.stdout)
    assert res.exit_code == 1 and out["broken"] == [name] and out["ok"] is False
    assert {"ok", "built", "repaired", "missing", "stale", "extra"} <= set(out)
    assert _tables(project) == [f"{name}.lance"]  # reported, not removed


@pytest.mark.parametrize("args", [["index", "rebuild"], ["index", "check", "--repair"]])
def test_a_persons_upkeep_removes_the_table_and_the_next_recall_builds_it(
        project: Path, args: list[str], caplog: pytest.LogCaptureFixture) -> None:
    res = CliRunner().invoke(app, ["--vault", str(project), *args])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    assert _tables(project) == []  # the table, its projection and queue files
    v = syn.open_vault(project)
    assert v.index.check().ok
    with caplog.at_level(logging.WARNING, "synapse_nb.recall"):
        assert _by_meaning(v)  # dense hits back
    assert "BM25 alone" not in caplog.text
    assert v.index.dense is not None and v.index.dense.exists() and v.index.check().ok
    v.close()


def test_an_agent_still_may_not_remove_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _tables(project)
    runner = CliRunner()
    for args in (["index", "rebuild"], ["index", "check", "--repair"]):
        monkeypatch.setenv("CLAUDECODE", "1")
        res = runner.invoke(app, ["--vault", str(project), *args])
        monkeypatch.delenv("CLAUDECODE")
        assert res.exit_code == 1 and "person" in res.stderr, res.stderr
        res = runner.invoke(app, ["--vault", str(project), "--actor", "agent", *args])
        assert res.exit_code == 1 and "person" in res.stderr, res.stderr
    agent = syn.open_vault(project).as_agent()
    for attempt in (agent.index.rebuild, lambda: agent.index.check(repair=True)):
        with pytest.raises(syn.PermissionDeniedError):
            attempt()
    assert _tables(project) == before
    assert "sedan" in agent.recall("Ann sedan", bars=OPEN).items[0].line  # the hook's recall answers


def test_a_persons_deletion_removes_it_and_scrubs(project: Path) -> None:
    """A deletion's whole-index scrub read every table and raised lancedb's error after the deletion's commit."""
    v = syn.open_vault(project)
    m = v.remember("knowledge", "gone", "a note to delete")
    v.memories.delete(m.id)
    assert v.index.scrub_behind is None and v.index.scrub_owed_since is None and _tables(project) == []
    v.close()


@pytest.mark.parametrize("where", ["sync", "check_synced", "search", "speaker_list"])
def test_every_read_of_the_channel_falls_back_to_bm25(
        fake: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        where: str) -> None:
    """The channel's index failing anywhere in a recall: its sync before the snapshot, the check inside it, the
    dense search, the speaker's second query (RankParams.hop_*) -- ranked as with the channel off."""
    from synapse_nb.eval.locomo import Conversation, Turn
    from synapse_nb.eval.retrieval import build_locomo_vault

    said = ["I walk my puppy every morning", "The hound barks at the ocean", "Taxes are due", "I bought a sedan",
            "My dog loves the coast", "Cash only at the market", "Green tea again", "The animals at the farm"]
    turns = tuple(Turn(f"D{1 + i // 4}:{1 + i % 4}", "Bob" if i % 2 else "Ann", t, 1 + i // 4,
                       "1:00 pm on 1 May, 2023", None) for i, t in enumerate(said * 2))
    v, _ = build_locomo_vault(Conversation("c", "Ann", "Bob", turns, ()), tmp_path / "c")
    q = "What animals has Bob walked?"

    def rows() -> list[Any]:
        got = v.recall(q, bars=OPEN)
        return [got.semantic_off, got.text.removeprefix(f"{OFF_LINE}\n\n"),
                *[(r.id, float(r.score).hex(), r.kept) for r in got.explain()]]

    try:
        off = rows()
        v.settings.set("recall_embedder", "fake")
        v.settings.set("recall_semantic", 0.4)
        assert rows() != off  # the channel moves this ranking
        v.remember("knowledge", "new", "a write queued for the table")  # a sync is owed

        def broken(*_: Any, **__: Any) -> Any:
            raise IndexError_("semantic index semantic_0123 at 'x' failed to load vectors (IO); rebuild it")

        target = {"sync": (indexer.VaultIndex, "sync_within"), "check_synced": (semantic.DenseChannel, where),
                  "search": (DenseIndex, "search"), "speaker_list": (semantic.DenseChannel, where)}[where]
        monkeypatch.setattr(*target, broken)
        with caplog.at_level(logging.WARNING, "synapse_nb.recall"):
            got = rows()
        warned = [r for r in caplog.records if r.name == "synapse_nb.recall"]
        assert len(warned) == 1 and "semantic_0123" in warned[0].getMessage()
        v.settings.set("recall_semantic", 0)
        assert got[0] is not None and "semantic_0123" in got[0] and got[1:] == rows()[1:] and rows()[0] is None
    finally:
        v.index.close()
        v.close()


def test_the_extra_not_installed_is_no_index_failure(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model not loadable here falls back too (review 68, tests/test_semantic_unloadable.py), with its own
    line: the index's remedy would not help."""
    from synapse_nb.render import MODEL_OFF, SEMANTIC_NO_MODEL_LINE

    def missing(*_: Any, **__: Any) -> Any:
        raise syn.errors.SemanticUnavailableError("install synapse-nb[semantic]")

    monkeypatch.setattr(embedders, "load_embedder", missing)
    v = syn.open_vault(project)
    r = v.recall("Ann sedan")
    assert r.semantic_off == MODEL_OFF + "install synapse-nb[semantic]" and "sedan" in r.text
    assert r.text.startswith(f"{SEMANTIC_NO_MODEL_LINE}\n\n") and OFF_LINE not in r.text
    v.close()


def test_every_surface_says_the_channel_was_off(project: Path) -> None:
    """Review 58: the answer itself said nothing (a warning on stderr only): ``recall --json`` had no key, the
    notebook's display and an agent hook's context no line, and a person's rule found only by meaning silently left
    every later answer. Now ``Recall.semantic_off`` names what failed and the text's first line says so."""
    from synapse_nb.agents.events import parse_event
    from synapse_nb.agents.handlers import OFF_NOTICE, handle

    v = syn.open_vault(project)
    r = v.recall("Ann sedan")
    name = _tables(project)[0].removesuffix(".lance")
    assert r.semantic_off is not None and name in r.semantic_off and "failed to load vectors" in r.semantic_off
    assert r.text.startswith(f"{OFF_LINE}\n\n") and "sedan" in r.text
    assert r.to_dict()["semantic_off"] == r.semantic_off
    assert f"<b>{esc(OFF_LINE)}</b></div>" in r._repr_html_()  # shown, not only in the text one click away
    nothing = v.recall("automobile purchase")  # found only by meaning: "nothing new", said to be without it
    assert nothing.nothing_new and nothing.text.startswith(f"{OFF_LINE}\n\nnothing new for:")
    v.close()

    res = CliRunner().invoke(app, ["--vault", str(project), "recall", "query", "--json", "Ann sedan"])
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and name in out["semantic_off"] and out["text"].startswith(OFF_LINE)

    for prompt, hit in (("Ann sedan", True), ("automobile purchase", False)):  # the agent's context, the person
        got = handle(parse_event("prompt", "", session="s1", text=prompt), vault=str(project), env={})
        assert got.context.startswith(OFF_LINE) and ("sedan" in got.context) is hit, got.context
        assert got.notice == OFF_NOTICE and "index check --repair" in got.notice
        assert name not in got.context  # the package's words only: no path, no error text


def test_a_long_answer_keeps_the_line_under_the_hooks_cut(project: Path) -> None:
    """The hook's 10,000-character cut drops hits from the end: the line comes first and stays whole."""
    from synapse_nb.agents.events import MAX_CONTEXT_CHARS, parse_event
    from synapse_nb.agents.handlers import handle

    v = syn.open_vault(project)
    for i in range(60):
        v.remember("project", f"long_{i}", f"Ann sedan note {i} " + "words of a long record " * 40)
    v.close()
    got = handle(parse_event("prompt", "", session="s2", text="Ann sedan"), vault=str(project), env={})
    assert len(got.context) <= MAX_CONTEXT_CHARS and got.context.startswith(f"{OFF_LINE}\n"), got.context[:300]
    assert got.context.count(OFF_LINE) == 1


def test_the_channel_working_gives_the_same_bytes(project: Path) -> None:
    """With its table readable (after a person's repair) nothing of this is said: no line, ``semantic_off`` None."""
    assert CliRunner().invoke(app, ["--vault", str(project), "index", "check", "--repair"]).exit_code == 0
    v = syn.open_vault(project)
    r = v.recall("automobile purchase", bars=OPEN)
    assert r.semantic_off is None and OFF_LINE not in r.text and "sedan" in r.text
    assert esc(OFF_LINE) not in r._repr_html_() and r.to_dict()["semantic_off"] is None
    v.close()


@pytest.mark.anyio
async def test_the_mcp_recall_says_it(project: Path) -> None:
    from mcp import Client

    from synapse_nb.mcp.server import build_server

    async with Client(build_server(project)) as c:
        r = await c.call_tool("recall", {"query": "Ann sedan", "session_id": "m1"})
    assert not r.is_error and r.content[0].text.startswith(OFF_LINE)
    assert "failed to load vectors" in r.structured_content["semantic_off"]
