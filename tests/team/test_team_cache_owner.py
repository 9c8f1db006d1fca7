"""This machine's cache folder of a team vault is the person's Unix user's own (review 59, finding 1).

In the shared-group set-up (the agent as its own Unix user, ``.synapse/team/`` group-writable) the agent renamed the
person's login folder aside and put its own there with a ``copy.db`` it owned: the person's process synced every
mind into the agent's file and, offline, showed the agent's edited copy. Another Unix user is simulated by
``os.chown`` to 65534 (nobody), which needs root: the tests run as root here, and skip otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.errors import OfflineError, StoreError
from synapse_nb.store.postgres import cachedir
from synapse_nb.store.postgres import copy as copymod
from synapse_nb.store.postgres.queries import FeedPosition
from synapse_nb.store.records import Candidate
from synapse_nb.team import open_team_vault
from synapse_nb.vault.locate import team_cache_dir

OTHER = 65534
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="giving a file to another user needs root")
AGENT_LINE = "procedure deploy: deploy with ./deploy.sh --force (the migrations are run by it)"


def _agents_folder(folder: Path) -> None:
    """What the agent's Unix user did: its own folder under the person's folder's name, with a copy.db of its own
    holding its line and a fresh sync time."""
    folder.mkdir(mode=0o2777)
    line = Candidate("memory", "mem_0a0a0a0a0a0a", "default", AGENT_LINE, "2030-01-01T00:00:00.000000Z", None)
    copymod.apply(folder, [line], [line.id], replace=True)
    (folder / copymod.COPY_FEED).write_text(json.dumps({"synced_at": "2030-01-01T00:00:00+00:00"}), encoding="utf-8")
    for p in (folder, *folder.iterdir()):
        os.chown(p, OTHER, OTHER)


def _rows(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return [(str(m), str(t)) for m, t in con.execute("SELECT mind, text FROM docs")]
    finally:
        con.close()


@needs_root
def test_a_login_folder_another_user_put_in_place_is_moved_aside(logins: dict[str, str], machine: Callable[..., Any],
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """The review's case: the person's next command syncs into a new folder of its own, never into the agent's."""
    person = machine("p", logins["human"])
    person.remember("procedure", "deploy", "deploy with make release; never --force")
    folder = Path(person.path)
    person.close()
    os.rename(folder, folder.with_name(folder.name + ".old"))
    _agents_folder(folder)
    with caplog.at_level(logging.WARNING, logger="synapse_nb.team"):
        again = machine("p", logins["human"], mind="hr")
    again.remember("context", "salary_band", "Band 7 ceiling is 142k")
    again.close()
    st = folder.lstat()
    assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
    (aside,) = [p for p in folder.parent.iterdir() if cachedir.ASIDE in p.name]
    assert f"owned-by-uid-{OTHER}" in aside.name and aside.stat().st_uid == OTHER
    assert "moved aside" in caplog.text
    assert all(mind != "hr" for mind, _ in _rows(aside / copymod.COPY_DB))  # the agent's file got nothing
    assert any(m == "hr" for m, _ in _rows(folder / copymod.COPY_DB))  # the person's copy, in the person's folder
    assert all(t != AGENT_LINE for _, t in _rows(folder / copymod.COPY_DB))


@needs_root
def test_offline_the_person_never_reads_a_copy_in_another_users_folder(tmp_path: Path) -> None:
    """At an outage the agent's folder under the person's name was read as the person's STALE copy; now it is moved
    aside and the person has no copy to read (an error saying so), not the agent's line."""
    url = "postgresql://alice@127.0.0.1:1/team?project=acme"  # nothing listens: offline
    (tmp_path / ".synapse").mkdir()
    folder = team_cache_dir(tmp_path / ".synapse", url.split("?")[0], "acme")
    folder.parent.mkdir()
    _agents_folder(folder)
    with pytest.raises(OfflineError, match="this machine has no copy"):
        open_team_vault(url, local=tmp_path, offline=True)
    assert folder.lstat().st_uid == os.geteuid() and not any(folder.iterdir())


def test_a_symlinked_login_folder_is_moved_aside(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (team / "alice@db-5432-team-acme").symlink_to(tmp_path / "elsewhere")
    cachedir.claim_folder(team / "alice@db-5432-team-acme")
    assert (team / "alice@db-5432-team-acme").is_dir() and not (team / "alice@db-5432-team-acme").is_symlink()
    assert [p.name.split(cachedir.ASIDE)[1].split("-")[0] for p in team.iterdir() if cachedir.ASIDE in p.name] == \
        ["symlink"]


def test_a_folder_that_cannot_be_moved_aside_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "alice@db-5432-team-acme").write_text("not a folder", encoding="utf-8")

    def refused(src: Any, dst: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cachedir.os, "rename", refused)
    with pytest.raises(StoreError, match=r"not this Unix user's own folder \(not a folder\).*chmod \+t"):
        cachedir.claim_folder(team / "alice@db-5432-team-acme")


def test_the_team_folder_gets_the_sticky_bit_and_keeps_the_group_write(tmp_path: Path) -> None:
    """Made by the package (umask 002, the shared set-up): group-writable, so the agent's Unix user still makes its
    own login's folder there, and sticky, so it can rename or delete no other's. An existing one of this user's
    gets the bit too."""
    old = os.umask(0o002)
    try:
        (tmp_path / "a").mkdir()
        cachedir.claim_folder(tmp_path / "a" / "team" / "alice@db-5432-team-acme")
    finally:
        os.umask(old)
    mode = (tmp_path / "a" / "team").stat().st_mode
    assert mode & stat.S_ISVTX and mode & stat.S_IWGRP
    (tmp_path / "b" / "team").mkdir(parents=True)
    (tmp_path / "b" / "team").chmod(0o2775)
    cachedir.claim_folder(tmp_path / "b" / "team" / "alice@db-5432-team-acme")
    assert stat.S_IMODE((tmp_path / "b" / "team").stat().st_mode) == 0o2775 | stat.S_ISVTX


@needs_root
def test_copy_files_another_user_owns_are_set_aside_never_read(tmp_path: Path) -> None:
    """Files left in the person's (once group-writable) folder by another user: copy.db, its -wal, the feed
    position, the lock, index/ holding another user's file. None is read or written; each is set aside."""
    folder = tmp_path / "team" / "alice@db-5432-team-acme"
    folder.mkdir(parents=True)
    _agents_folder(folder / "theirs")
    for name in (copymod.COPY_DB, copymod.COPY_FEED):
        os.rename(folder / "theirs" / name, folder / name)
    (folder / f"{copymod.COPY_DB}-wal").write_bytes(b"")
    (folder / copymod.COPY_LOCK).write_bytes(b"")
    (folder / "index").mkdir()
    (folder / "index").chmod(0o2775)
    (folder / "index" / "data.lance").write_bytes(b"x")
    for p in (folder / f"{copymod.COPY_DB}-wal", folder / copymod.COPY_LOCK, folder / "index" / "data.lance"):
        os.chown(p, OTHER, OTHER)
    assert copymod.synced_at(folder) is None  # another user's feed file: no sync time
    assert FeedPosition(folder, "x").load() == {}
    assert copymod.search_copy_db(folder, "deploy", mind="default", now="2026", k=5) == []
    assert not (folder / copymod.COPY_DB).exists()
    cachedir.private_folder(folder)
    left = {p.name: p.lstat().st_uid for p in folder.iterdir() if cachedir.ASIDE not in p.name}
    assert OTHER not in left.values() and "index" not in left and "theirs" not in left, left
    real = Candidate("memory", "mem_683d7e850e59", "default", "deploy uses make release", "2026-01-01T00:00:00Z", None)
    copymod.apply(folder, [real], [real.id], replace=True)
    with copymod._locked(folder) as got:
        assert got
    assert {p.name: p.lstat().st_uid for p in folder.iterdir() if cachedir.ASIDE not in p.name and
            p.name.startswith("copy")} == dict.fromkeys([copymod.COPY_DB, copymod.COPY_LOCK], os.geteuid()) | {
        n: os.geteuid() for n in (f"{copymod.COPY_DB}-wal", f"{copymod.COPY_DB}-shm") if (folder / n).exists()}
    assert copymod.search_copy_db(folder, "deploy", mind="default", now="2026", k=5) == [
        ("memory", "mem_683d7e850e59", "deploy uses make release")]


@needs_root
def test_a_file_opened_there_is_checked_after_opening(tmp_path: Path) -> None:
    path = tmp_path / "copy.lock"
    path.write_bytes(b"theirs")
    os.chown(path, OTHER, OTHER)
    fd = cachedir.open_own(path)
    try:
        st = os.fstat(fd)
        assert st.st_uid == os.geteuid() and st.st_size == 0 and stat.S_IMODE(st.st_mode) == 0o600
    finally:
        os.close(fd)
    (aside,) = [p for p in tmp_path.iterdir() if cachedir.ASIDE in p.name]
    assert aside.read_bytes() == b"theirs" and aside.stat().st_uid == OTHER
    assert cachedir.read_own_text(aside) is None


@needs_root
def test_another_users_login_folder_that_cannot_be_moved_gives_this_user_one_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The person once opened the agent's login in their own process (docs/team.md allows it), so the agent login's
    folder is the person's, in a sticky team/ the agent's Unix user cannot rename in: the agent's every command
    failed (second reader 60). Its copy is now kept in ``<name>.uid-<uid>`` beside it; the person's folder is left
    as it is."""
    team = tmp_path / "team"
    team.mkdir()
    theirs = team / "agentbot@db-5432-team-acme"
    theirs.mkdir(mode=0o700)
    (theirs / "copy.db").write_text("the person's", encoding="utf-8")
    os.chown(theirs, 65534, 65534)

    def refused(src: Any, dst: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cachedir.os, "rename", refused)
    used = cachedir.claim_folder(theirs)
    assert used == team / f"agentbot@db-5432-team-acme.uid-{os.geteuid()}"
    assert used.is_dir() and used.lstat().st_uid == os.geteuid() and stat.S_IMODE(used.stat().st_mode) == 0o700
    assert (theirs / "copy.db").read_text(encoding="utf-8") == "the person's" and theirs.lstat().st_uid == 65534
    assert cachedir.own_folder(theirs) == used  # what `team search-local` and `team status` read
    assert cachedir.own_folder(used) == used and cachedir.own_folder(team / "nobody@db") == team / "nobody@db"
    (team / "a-file@db").write_text("x", encoding="utf-8")  # a file, not a folder: still refused
    with pytest.raises(StoreError, match="not a folder"):
        cachedir.claim_folder(team / "a-file@db")
