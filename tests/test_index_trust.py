"""Review 28: an agent held the vault-wide index lock for most of every hour, and a person's recall waited on it.

- ``index rebuild`` and ``index check --repair`` are a person's maintenance: refused for the agent actor and in an
  agent's environment (7.5 s each at 60,000 records, in a loop, with no quota);
- an agent's deletion of its own record leaves the whole-index rewrite owed (7 to 17 s each at 60,000 records): it
  runs at a person's next deletion or purge, or once the oldest owed one is an hour old; a person's deletion keeps
  issue 30's promise (no text left in the index folder, in the call);
- a recall waits a moment at most for the index lock, then answers from the index as it stands (BM25 reads the
  store, which has every write).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_recall_semantic import OPEN, Fake
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store import embedders, indexer
from synapse_nb.store.embedders import register_embedder
from synapse_nb.store.index import scrub

NEEDLE = b"zebrafish7731"


@pytest.fixture
def sem(vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> syn.Vault:
    """``vault`` with the semantic channel on (a fake embedder) and its table built."""
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    register_embedder("fake", Fake)
    for i in range(20):
        vault.remember("knowledge", f"filler_{i}", f"filler fact {i} about deploys and caches")
    vault.settings.set("recall_embedder", "fake")
    vault.settings.set("recall_semantic", 0.5)
    vault.recall("warm up")
    assert vault.index.dense is not None and vault.index.dense.exists()
    return vault


def _scan(folder: Path, needle: bytes = NEEDLE) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes())


@pytest.fixture
def rewrites(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of every whole-index rewrite (``VaultIndex.forget``) made from now on."""
    calls: list[list[str]] = []
    real = indexer.VaultIndex.forget

    def counted(self: indexer.VaultIndex, ids: Any) -> int:
        calls.append(sorted(ids))
        return real(self, ids)

    monkeypatch.setattr(indexer.VaultIndex, "forget", counted)
    return calls


# ------------------------------------------------------------------------------------------- (1) a person's upkeep
def test_an_agent_may_not_rebuild_or_repair_the_index_and_is_told_who_may(vault: syn.Vault) -> None:
    m = vault.remember("knowledge", "k", "the deploy runs from the release branch")
    vault.index.sync()  # built
    agent = vault.as_agent()
    for attempt in (agent.index.rebuild, lambda: agent.index.check(repair=True)):
        with pytest.raises(syn.PermissionDeniedError, match=r"a person's maintenance.*BM25.*index rebuild"):
            attempt()
    assert agent.index.check().ok  # reading the drift is no upkeep
    agent.index.close()
    shutil.rmtree(agent.index.path)  # a broken index: recall still answers, from the store
    assert m.id in [i.id for i in agent.recall("deploy release branch", bars=OPEN).items]
    assert vault.index.rebuild() >= 1 and vault.index.check(repair=True).ok  # a person's


@pytest.mark.parametrize("args", [["index", "rebuild"], ["index", "check", "--repair"]])
def test_the_cli_refuses_index_upkeep_in_an_agents_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         args: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    syn.open_vault(project).remember("knowledge", "k", "v")
    runner = CliRunner()
    for env, extra in (({"CLAUDECODE": "1"}, []), ({}, ["--actor", "agent"])):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        res = runner.invoke(app, ["--vault", str(project), *extra, *args])
        assert res.exit_code == 1, (res.stdout, res.stderr)
        assert "person" in res.stderr and "index rebuild" in res.stderr and "BM25" in res.stderr
        for name in env:
            monkeypatch.delenv(name)
    assert runner.invoke(app, ["--vault", str(project), *args]).exit_code == 0  # a person, in their terminal


# ------------------------------------------------------------------------------------------- (2) agents' deletions
def test_an_agents_deletion_leaves_the_rewrite_owed_and_recall_never_answers_it(
        sem: syn.Vault, rewrites: list[list[str]]) -> None:
    agent = sem.as_agent()
    m = agent.remember("context", "tmp", "zebrafish7731 nests in the quarry pond")
    sem.recall("zebrafish7731 quarry")  # embedded: the semantic table holds its text
    agent.memories.delete(m.id)
    assert rewrites == [] and sem.index.scrub_owed_since is not None
    for who in (sem, agent):
        assert m.id not in [i.id for i in who.recall("zebrafish7731 quarry pond", bars=OPEN).items]
    assert m.id not in {h.id for h in sem.index.search("zebrafish7731")}
    # what it leaves: its text in the index folder's fragment and version files, until the owed scrub; the marker
    # holds times only
    assert _scan(sem.index.path) and all(m.id.encode() not in p.read_bytes() for p in sem.index.path.glob("scrub*"))
    # a person's next deletion runs it: nothing of either left
    p = sem.remember("knowledge", "mine", "a person's note to delete")
    sem.memories.delete(p.id)
    assert len(rewrites) == 1 and _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None


def test_the_owed_rewrite_runs_at_an_agents_deletion_once_the_oldest_is_an_hour_old(
        sem: syn.Vault, rewrites: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    agent = sem.as_agent()
    first = agent.remember("context", "tmp1", "zebrafish7731 one")
    sem.recall("zebrafish7731")
    agent.memories.delete(first.id)
    for i in range(3):  # an agent at its quota: create, delete, again
        agent.memories.delete(agent.remember("context", f"tmp{i + 2}", f"scratch {i}").id)
    assert rewrites == [] and _scan(sem.index.path)
    assert sem.index.scrub_owed_since is not None
    monkeypatch.setattr(scrub, "AGENT_SCRUB_EVERY", 0.0)  # the oldest owed deletion is that old now
    last = agent.remember("context", "tmp9", "scratch last")
    agent.memories.delete(last.id)
    assert len(rewrites) == 1 and _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None
    monkeypatch.setattr(scrub, "AGENT_SCRUB_EVERY", 3600.0)
    agent.memories.delete(agent.remember("context", "tmp10", "scratch after").id)
    assert len(rewrites) == 1  # the next one is owed again, for another hour


def test_a_persons_deletion_and_purge_scrub_in_the_call(sem: syn.Vault, rewrites: list[list[str]]) -> None:
    """Issue 30's promise holds for people: a person's deletion, and a person's purge of what an agent deleted."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")
    sem.memories.delete(m.id)
    assert rewrites == [[m.id]] and _scan(sem.index.path) == []
    agent = sem.as_agent()
    a = agent.remember("context", "tmp", "zebrafish7731 again")
    sem.recall("zebrafish7731")
    agent.memories.delete(a.id)
    assert _scan(sem.index.path)
    sem.purge(a.id)
    assert rewrites[-1] == [a.id] and _scan(sem.index.path) == [] and _scan(sem.path, b"zebrafish7731 again") == []


def test_a_scrub_drops_what_a_semantic_queue_had_not_applied(sem: syn.Vault) -> None:
    """The owed scrub runs in a process without the channel (a person's CLI delete): the semantic table still holds
    the agent's deleted row (its queue names it), and its rewrite keeps only rows of records still in the store
    (the row's vector would stay in the table's files: the queue's later deletion only marks it)."""
    import lancedb

    agent = sem.as_agent()
    a = agent.remember("context", "tmp", "zebrafish7731 in the pond")
    sem.recall("zebrafish7731")  # embedded
    agent.memories.delete(a.id)  # owed; no sync since
    other = syn.open_vault(sem.project_dir)  # the CLI: no embedder loaded
    assert other.index.dense is None
    assert a.id in sem.index.dense.digests()  # type: ignore[union-attr]
    other.memories.delete(other.remember("knowledge", "mine", "a note of mine").id)
    assert _scan(sem.index.path) == []
    name = sem.index.dense.name  # type: ignore[union-attr]
    rows = lancedb.connect(str(sem.index.path)).open_table(name).to_arrow().column("id").to_pylist()
    assert rows and a.id not in rows
    other.close()


# ------------------------------------------------------------------------------------------- (3) a busy index lock
@contextlib.contextmanager
def _held(folder: Path) -> Iterator[threading.Event]:
    """Another process's hold on the index lock (an open file of its own), released when the block ends (or after
    30 s: without the bound, a recall waits for that); the event says it was released."""
    release, was_released = threading.Event(), threading.Event()
    fh = open(folder / "index.lock", "a+")  # noqa: SIM115 - closed by the holder below
    fcntl.flock(fh, fcntl.LOCK_EX)

    def hold() -> None:
        release.wait(30)
        was_released.set()
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    try:
        yield was_released
    finally:
        release.set()
        t.join()


@pytest.fixture
def held(sem: syn.Vault) -> Iterator[threading.Event]:
    with _held(sem.path) as released:
        yield released


def test_a_recall_answers_while_another_process_holds_the_index_lock(sem: syn.Vault,
                                                                   held: threading.Event) -> None:
    d = sem.decide("Release cadence: every second Tuesday, zebrafish7731")
    got = sem.recall("release cadence zebrafish7731", bars=OPEN)
    assert not held.is_set()  # answered while the lock was held
    assert d.id in [i.id for i in got.items]  # BM25 reads the store: the write just made is there
    assert sem.index.dense is not None and d.id not in sem.index.dense.digests()  # the vectors wait for the lock


def test_the_hooks_recall_answers_while_the_index_lock_is_held(sem: syn.Vault, held: threading.Event) -> None:
    d = sem.decide("Release cadence: every second Tuesday")
    got = sem.as_agent().recall("release cadence", bars=OPEN)
    assert not held.is_set() and d.id in [i.id for i in got.items]


def test_a_semantic_table_not_built_yet_waits_for_the_lock_and_bm25_answers(
        vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    register_embedder("fake", Fake)
    m = vault.remember("knowledge", "k", "the quarry pond has zebrafish")
    vault.settings.set("recall_embedder", "fake")
    vault.settings.set("recall_semantic", 0.5)
    with _held(vault.path) as released:
        got = vault.recall("quarry pond zebrafish", bars=OPEN)
        assert not released.is_set()
        assert vault.index.dense is not None and not vault.index.dense.exists()
    assert m.id in [i.id for i in got.items]
    vault.recall("quarry pond zebrafish")
    assert vault.index.dense.exists()


# ---------------------------------------------------------------------- (4) a person's scrub behind a held lock
def _later_delete(v: syn.Vault) -> None:
    v.memories.delete(v.remember("knowledge", "mine", "a note of mine to delete").id)


@pytest.mark.parametrize("later", [_later_delete, lambda v: v.index.check(repair=True), lambda v: v.index.rebuild()],
                         ids=["delete", "check-repair", "rebuild"])
def test_a_persons_deletion_returns_while_the_lock_is_held_and_its_scrub_stays_owed(
        sem: syn.Vault, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, later: Any) -> None:
    """Review 32: another process (an agent's ``flock .synapse/index.lock sleep 60``) held the index lock and a
    person's deletion, committed already, waited for it without limit; killed, it left the text with no scrub owed.
    Now it returns after ``PERSON_LOCK_WAIT`` with the scrub owed and a warning, and a person's next deletion,
    ``index check --repair`` or ``index rebuild`` runs it; a recall does not (it must stay fast)."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")
    monkeypatch.setattr(scrub, "PERSON_LOCK_WAIT", 0.2, raising=False)
    with _held(sem.path) as released, caplog.at_level(logging.WARNING, "synapse_nb.index"):
        sem.memories.delete(m.id)
        assert not released.is_set()  # it returned while the other process still held the lock
    assert sem.index.scrub_owed_since is not None
    assert "still holds the deleted text" in caplog.text and "index check --repair" in caplog.text
    with pytest.raises(syn.NotFoundError):
        sem.memories.get(m.id)
    assert m.id not in [i.id for i in sem.recall("zebrafish7731 quarry", bars=OPEN).items]
    assert _scan(sem.index.path) and sem.index.scrub_owed_since is not None  # the recall left it owed
    later(sem)
    assert _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None


def test_a_persons_scrub_killed_midway_stays_owed(sem: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scrub is marked owed before it waits or rewrites: a person who kills a deletion stuck behind the lock
    (or during its rewrite) leaves it owed, and their next deletion removes the text."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")

    def killed(*_: Any, **__: Any) -> int:
        raise KeyboardInterrupt

    with monkeypatch.context() as mp:
        mp.setattr(indexer.VaultIndex, "_rebuild_locked", killed)
        with pytest.raises(KeyboardInterrupt):
            sem.memories.delete(m.id)
    assert sem.index.scrub_owed_since is not None and _scan(sem.index.path)
    _later_delete(sem)
    assert _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None


# --------------------------------------------------------- (5) saying so, and the remedy behind a held lock (review 34)
def test_a_purge_behind_a_held_lock_says_the_index_was_not_scrubbed(
        sem: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 34: the purge's rewrite stayed owed (another process held the index lock) and its report still said
    "index, FTS and caches scrubbed"; it now says the index was NOT scrubbed, why and how to run the rewrite."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")
    monkeypatch.setattr(scrub, "PERSON_LOCK_WAIT", 0.2, raising=False)
    with _held(sem.path):
        report = sem.purge(m.id)
    said, lock = str(report), str(sem.path / "index.lock")
    assert report.index_owed is not None and _scan(sem.index.path), said
    assert "index NOT scrubbed (owed)" in said and "index, FTS and caches scrubbed" not in said, said
    assert f"fuser {lock}" in said and "index check --repair" in said, said
    assert report.to_dict()["index_owed"] == report.index_owed
    other = sem.remember("knowledge", "other", "another zebrafish7731 to purge")
    again = sem.purge(other.id)  # the lock is free: this purge's rewrite runs, the owed one with it
    assert again.index_owed is None and "index, FTS and caches scrubbed" in str(again)
    assert _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None


@pytest.mark.parametrize("upkeep", [lambda v: v.index.check(repair=True), lambda v: v.index.rebuild()],
                         ids=["check-repair", "rebuild"])
def test_the_remedy_fails_after_a_bounded_wait_naming_the_lock_and_its_holder(
        sem: syn.Vault, monkeypatch: pytest.MonkeyPatch, upkeep: Any) -> None:
    """Review 34: ``index check --repair`` and ``index rebuild`` (what the owed-scrub warning names) waited for the
    index lock without limit; they now wait ``UPKEEP_LOCK_WAIT`` and fail naming the lock file and ``fuser``."""
    monkeypatch.setattr(scrub, "UPKEEP_LOCK_WAIT", 0.2, raising=False)
    with _held(sem.path) as released:
        with pytest.raises(syn.errors.BusyError) as err:
            upkeep(sem)
        assert not released.is_set()  # it gave up while the other process still held the lock
    lock = str(sem.path / "index.lock")
    assert lock in str(err.value) and f"fuser {lock}" in str(err.value), err.value
    upkeep(sem)  # the lock is free: it runs



# ------------------------------------------------------------------------------------------- review 35
def _busy(*_: Any, **__: Any) -> None:
    raise syn.errors.BusyError("could not lock the vault for writing: database is locked")


def test_a_purge_whose_scrub_meets_a_locked_vault_after_its_commit_reports_what_is_owed(
        sem: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 35: an agent looping ``BEGIN IMMEDIATE; sleep 12; COMMIT`` failed the purge's FTS merge after its
    commit: record and history gone, exit 1 "could not lock the vault", no report, and again "not found". The
    purge now returns its report, saying the FTS merge is owed; the index scrub after it still runs."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")
    monkeypatch.setattr(type(sem._store), "scrub", _busy)
    report = sem.purge(m.id)
    said = str(report)
    assert report.record_deleted and report.fts_behind is not None and "FTS NOT merged" in said, said
    assert "database is locked" in said and "index, FTS and caches scrubbed" not in said, said
    assert report.to_dict()["fts_behind"] == report.fts_behind and report.index_owed is None
    with pytest.raises(syn.errors.NotFoundError):  # record and history gone
        sem.purge(m.id)
    assert _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None


def test_an_outbox_acknowledgement_refused_after_the_rewrite_leaves_the_scrub_done(
        sem: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole-index rewrite's outbox acknowledgement (a write to the vault's database) refused by a locked vault
    raised out of the purge after its commit; the rewrite is done (the outbox is applied again later)."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")
    monkeypatch.setattr(type(sem._store.outbox), "ack_through", _busy)
    report = sem.purge(m.id)
    assert report.index_owed is None and report.fts_behind is None, str(report)
    assert _scan(sem.index.path) == [] and sem.index.scrub_owed_since is None
    with pytest.raises(syn.errors.NotFoundError):
        sem.purge(m.id)


def test_a_rewrite_stopped_by_a_locked_vault_leaves_its_scrub_owed(
        sem: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error that stops the rewrite (the store read refused) keeps the owed marker and says so, never raised."""
    m = sem.remember("knowledge", "secret", "zebrafish7731 nests in the quarry")
    sem.recall("zebrafish7731")
    monkeypatch.setattr(indexer.VaultIndex, "_rebuild_locked", _busy)
    report = sem.purge(m.id)
    assert report.index_owed is not None and "index NOT scrubbed (owed)" in str(report), str(report)
    assert sem.index.scrub_owed_since is not None
