"""Review 85 F2/F3 with a server: the copy keeper rebuilds this machine's offline copy whole whenever the copy it
would sync is gone or not the package's, and never hangs on one.

- a copy a person deleted (or one set aside) left its feed position, so the next sync applied only later changes:
  the new copy held one record of the whole vault and ``team status`` called it fresh;
- a truncated or garbage copy failed every later sync silently, so it never healed;
- a copy whose ``docs`` is an endless view hung the keeper (every online write then waited its 10 s exit flush).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.store.postgres import cachedir
from synapse_nb.store.postgres.copy import COPY_DB, COPY_FEED
from synapse_nb.team import status
from tests.test_offline_copy_damage import _endless


def _ids(folder: Path) -> set[str]:
    con = sqlite3.connect(f"file:{folder / COPY_DB}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("SELECT id FROM docs")}
    finally:
        con.close()


def _vault_with_a_copy(machine: Any, url: str) -> tuple[Any, Path, set[str]]:
    v = machine("m", url)
    with v.transaction():
        ids = {v.remember("knowledge", f"fact_{n}", f"the build step {n} runs the linters").id for n in range(5)}
    assert v._store.keeper.flush() and _ids(Path(v.path)) == ids
    return v, Path(v.path), ids


def _remove_copy(folder: Path) -> None:
    for name in (COPY_DB, f"{COPY_DB}-wal", f"{COPY_DB}-shm"):
        (folder / name).unlink(missing_ok=True)


def test_a_deleted_copy_is_rebuilt_whole_not_from_its_old_feed_position(team_url: str, machine: Any) -> None:
    v, folder, ids = _vault_with_a_copy(machine, team_url)
    _remove_copy(folder)  # a person's rm copy.db: copy-feed.json stays
    assert (folder / COPY_FEED).is_file()
    later = v.remember("knowledge", "later", "written after the copy was deleted")
    assert v._store.keeper.flush() and v._store.keeper.behind is None
    assert _ids(folder) == ids | {later.id}  # every record, not the one written since


@pytest.mark.parametrize("damage", ["garbage", "endless view"])
def test_a_damaged_copy_is_set_aside_and_rebuilt_at_the_next_sync(damage: str, team_url: str, machine: Any,
                                                                  tmp_path: Path) -> None:
    v, folder, ids = _vault_with_a_copy(machine, team_url)
    if damage == "garbage":
        _remove_copy(folder)
        (folder / COPY_DB).write_bytes(os.urandom(8192))
        (folder / COPY_DB).chmod(0o600)
    else:
        _endless(folder)
    later = v.remember("knowledge", "later", "written while the copy was damaged")
    keeper = v._store.keeper
    assert keeper.flush() and keeper.behind is None  # the sync ended, and brought the copy up to the server
    assert _ids(folder) == ids | {later.id}
    aside = [p.name for p in folder.iterdir() if cachedir.ASIDE in p.name]
    assert any(n.startswith(f"{COPY_DB}{cachedir.ASIDE}damaged-") for n in aside), aside
    st = status(team_url, local=tmp_path / "machine_m")
    assert st["copy"] == "ok" and st["copy_age"] is not None, st
    v.purge(later.id)  # what a damaged copy held is in no file of the folder after a purge: the set-aside goes too
    assert not [p.name for p in folder.iterdir() if "damaged" in p.name or "with-copy.db" in p.name]
    assert _ids(folder) == ids
