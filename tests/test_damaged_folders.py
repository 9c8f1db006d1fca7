"""A symlink, a FIFO or a closed folder where the package keeps a derived folder or its configuration (review 81).

Before: a symlink at ``.synapse/index`` or ``.synapse/cache`` naming a person's folder had the person's ``index check
--repair`` and ``index rebuild`` (and an agent's deletion) delete files in that folder and write LanceDB tables
there. Now such a folder is no index to every reader (recall answers from BM25 alone, saying so) and the person's
upkeep removes the symlink itself and makes an empty folder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import synapse_nb as syn
from tests.test_damaged_files import LESSON, QUERY, build, recall


def _tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (never followed) with its content or what it is."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = (f"-> {os.readlink(p)}" if p.is_symlink() else "dir" if p.is_dir()
                    else p.read_text(encoding="utf-8"))
    return out


def _persons_folder(tmp_path: Path) -> Path:
    pd = tmp_path / "person"
    for sub in ("mail.queue/new", "records.lance", "semantic_2019.lance"):
        (pd / sub).mkdir(parents=True)
    for name, text in {"thesis.md": "person's thesis", "mail.queue/new/m1": "queued mail",
                       "rank-2024.csv": "ranked list", "records.lance/notes.txt": "notes",
                       "semantic_2019.lance/x": "old"}.items():
        (pd / name).write_text(text, encoding="utf-8")
    (pd / "latest.queue").symlink_to("thesis.md")
    return pd


def _link(project: Path, pd: Path) -> None:
    for name in ("index", "cache"):
        folder = project / ".synapse" / name
        if folder.is_symlink():
            folder.unlink()
        elif folder.exists():
            import shutil

            shutil.rmtree(folder)
        folder.symlink_to(pd)


def test_a_symlinked_index_or_cache_folder_is_no_index_and_nothing_in_its_target_is_touched(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = build(git_repo, tmp_path, monkeypatch)
    undamaged = recall(project)
    pd = _persons_folder(tmp_path)
    before = _tree(pd)
    _link(project, pd)
    with syn.open_vault(project, actor="agent") as v:  # an agent's deletion: its scrub, the rank files' removal
        m = v.remember("knowledge", "tmp", "a temporary agent note to delete")
        v.memories.delete(m.id)
    assert _tree(pd) == before
    with syn.open_vault(project) as v:  # every reader: no index, BM25 alone with its one line
        got = v.recall(QUERY)
        assert got.semantic_off is not None and "is not a folder" in got.semantic_off
        assert LESSON in got.text and "migrations" in got.text
    assert _tree(pd) == before
    for upkeep in ("repair", "rebuild", "person-delete"):
        _link(project, pd)
        with syn.open_vault(project) as v:
            if upkeep == "repair":
                v.index.check(repair=True)
            elif upkeep == "rebuild":
                v.index.rebuild()
            else:
                v.memories.delete(v.remember("knowledge", "tmp2", "a temporary note of a person").id)
        assert _tree(pd) == before, upkeep
        for name in ("index", "cache"):
            folder = project / ".synapse" / name
            assert not folder.is_symlink() and (folder.is_dir() or not folder.exists()), (upkeep, name)
    assert recall(project) == undamaged
    assert _tree(pd) == before


def test_a_team_toml_that_is_a_fifo_or_too_large_is_named_at_once_and_kept(git_repo: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a FIFO at ``.synapse/team.toml`` hung every command (recall, the hooks, which then dropped the approved
    lesson, ``index check``), a 2 GB sparse file took 26 s to be refused, even in a local vault. Now each is a one-line
    error naming the file and the remedy, at once, and the file (a person's configuration) is left where it is."""
    from synapse_nb.errors import ConflictError
    from synapse_nb.own_files import damaged_in
    from tests.test_damaged_files import ROOT, cli

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with syn.open_vault(git_repo) as v:
        v.remember("knowledge", "dbport", "The staging database listens on port 6543")
    toml = git_repo / ".synapse" / "team.toml"
    with open(toml, "wb") as fh:
        fh.truncate(2 * 1024**3)  # sparse: no disk used, 26 s to read before
    with pytest.raises(ConflictError) as err:
        syn.open_vault(git_repo)
    assert str(toml) in str(err.value) and "move it aside" in str(err.value) and "\n" not in str(err.value)
    assert damaged_in(git_repo / ".synapse") == [toml] and toml.stat().st_size == 2 * 1024**3
    toml.unlink()
    os.mkfifo(toml)
    for args in (("recall", "staging port"), ("index", "check", "--repair")):  # a hang fails the step (LIMIT_S)
        res = cli(git_repo, *args)
        assert res.returncode != 0 and str(toml) in res.stderr, res.stderr
    assert damaged_in(git_repo / ".synapse") == [toml] and toml.exists()  # named, never removed


def test_a_fifo_at_the_team_feed_position_is_no_position(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``team-feed.json`` (the offline copy's place in the change feed) as a FIFO hung ``team status``; now it is no
    position, as a missing file is."""
    from tests.test_damaged_files import ROOT, _run

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    os.mkfifo(tmp_path / "team-feed.json")
    code = ("import sys\nfrom pathlib import Path\nfrom synapse_nb.team import _local_position\n"
            "from synapse_nb.store.postgres.queries import FeedPosition\n"
            "print(_local_position(Path(sys.argv[1])), FeedPosition(Path(sys.argv[1]), 'x').load())\n")
    res = _run([sys.executable, "-c", code, str(tmp_path)], tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == "{} {}", res.stderr


def test_a_fifo_inside_an_index_table_is_an_unreadable_table(git_repo: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a FIFO in a LanceDB table's folder (a semantic table's data, the records table's versions) hung
    recall, the prompt hook (which then gave no approved lesson), ``index check`` and ``index check --repair`` (holding
    the index lock). Now the table is unreadable: recall answers from BM25 alone saying so, the hook names it, and
    the person's repair removes it (the records table is rebuilt)."""
    from synapse_nb.own_files import damaged_in
    from tests.test_damaged_files import cli, hooks

    project = build(git_repo, tmp_path, monkeypatch)
    undamaged = recall(project)
    index = project / ".synapse" / "index"
    (table,) = index.glob("semantic_*.lance")
    fifo = sorted((table / "data").glob("*.lance"))[0]  # a data file LanceDB reads, a FIFO now
    fifo.unlink()
    os.mkfifo(fifo)
    assert damaged_in(project / ".synapse") == [fifo]
    got = recall(project)  # a hang fails the step
    assert "semantic" in got and LESSON in got and "migrations" in got and got != undamaged
    assert LESSON in hooks(project, "fifo")
    res = cli(project, "index", "check")
    assert table.name.removesuffix(".lance") in res.stdout + res.stderr, res
    res = cli(project, "index", "check", "--repair")
    assert res.returncode == 0 and not fifo.is_fifo(), res.stderr
    assert recall(project) == undamaged
    fifo = sorted((index / "records.lance" / "data").glob("*.lance"))[0]
    fifo.unlink()
    os.mkfifo(fifo)
    res = cli(project, "index", "check", "--repair")  # the records table's fragment: rebuilt
    assert res.returncode == 0 and not fifo.is_fifo(), res.stderr
    assert recall(project) == undamaged


def test_an_index_folder_closed_to_its_user_is_named_and_recall_answers_without_it(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``chmod 000 .synapse/index`` had recall, ``index check``, its repair and ``index rebuild`` fail with
    "unexpected error (PermissionError)" and the hooks give no context. Now recall and the hooks answer from the
    vault's words alone with one line naming the folder and the remedy; the upkeep says the same in one line. Run as
    a person is (root's overriding of file permissions dropped)."""
    from tests.test_damaged_files import ROOT, _run, claude, context_of

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with syn.open_vault(git_repo) as v:
        v.settings.set("recall_semantic", 0.4)
        v.remember("knowledge", "dbport", "The staging database listens on port 6543")
        v.recall("staging port")
    index = git_repo / ".synapse" / "index"
    person = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m", "synapse_nb"]
    index.chmod(0)
    try:
        res = _run([*person, "recall", "staging port"], git_repo)
        assert res.returncode == 0 and "6543" in res.stdout and "semantic channel" in res.stdout, res.stderr
        assert f"chmod u+rwx {index}" in res.stderr and "unexpected" not in res.stderr
        res = _run([*person, "hook", "UserPromptSubmit"], git_repo,
                   stdin=__import__("json").dumps(claude("UserPromptSubmit", git_repo, "s", prompt="staging port")))
        assert "6543" in context_of(res) and "unexpected" not in res.stderr, res.stderr
        for upkeep in (("index", "check", "--repair"), ("index", "rebuild")):
            res = _run([*person, *upkeep], git_repo)
            assert res.returncode != 0 and f"chmod u+rwx {index}" in res.stderr, res.stderr
            assert "unexpected" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
    finally:
        index.chmod(0o755)


def test_a_lock_file_swapped_under_a_take_is_busy_not_an_error(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: while another process swapped a FIFO, a symlink or a folder in and out at a lock file, ~1,500 of
    344,052 takes raised FileExistsError, ELOOP or EISDIR. Now they retry until the deadline, then say busy (None).
    The swap is pinned here: a FIFO that the take's removal never gets to (the other process put it back)."""
    from synapse_nb import own_files
    from synapse_nb.locks import take

    lock = tmp_path / "index.lock"
    os.mkfifo(lock)
    monkeypatch.setattr(own_files, "remove", lambda path: False)
    assert take(lock, 0.05) is None


def test_write_atomic_sets_the_mode_on_its_own_file_not_a_symlink_swapped_in(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``os.chmod(tmp, mode)`` followed a symlink put at the temporary name between its writing and the
    chmod, and made the file it named world-readable. Now the mode is set on the descriptor."""
    import tempfile

    from synapse_nb.own_files import write_atomic

    outside = tmp_path / "secret"
    outside.write_text("person's secret", encoding="utf-8")
    outside.chmod(0o600)
    real = tempfile.mkstemp

    def swapped(**kw: str) -> tuple[int, str]:
        fd, name = real(**kw)
        os.unlink(name)
        os.symlink(outside, name)  # what another process does between the creation and the chmod
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", swapped)
    write_atomic(tmp_path / "queue.json", "[]", mode=0o644)
    assert outside.stat().st_mode & 0o777 == 0o600
