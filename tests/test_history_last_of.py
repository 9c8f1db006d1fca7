"""History's and revisions' reads are built once (a carried weakness of the twentieth pass). Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock

import synapse_nb as syn


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _open(backend: str, request: pytest.FixtureRequest, folder: Path, clock: FakeClock, actor: str) -> syn.Vault:
    folder.mkdir(exist_ok=True)
    if backend == "sqlite":
        return syn.open_vault(folder, clock=clock, actor=actor)
    from synapse_nb.team import open_team_vault

    project = request.getfixturevalue("new_team_project")("lastof")
    return open_team_vault(f"{request.getfixturevalue('pg_admin_url')}?project={project}", local=folder,
                           clock=clock, actor=actor)


def test_a_history_read_is_one_statement_built_once(backend: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                    clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """History's and revisions' reads name the logins (a team vault's) or NULL (a local vault's) in one spelling,
    built when the module is loaded: every read sends the very same statement (it was rebuilt by string replaces on
    each call, history's and revisions' spelled two ways)."""
    from synapse_nb.store.sql.history import HISTORY_OF, REVISIONS_OF_MIND

    v = _open(backend, request, tmp_path / "vault", clock, "user")
    try:
        m = v.remember("knowledge", "a", "some words")
        store: Any = v._store
        sent: list[str] = []
        with monkeypatch.context() as mp:
            query = store.query
            mp.setattr(store, "query", lambda sql, *a, **kw: (sent.append(sql), query(sql, *a, **kw))[1])
            for _ in range(2):
                store.history.of_record(m.id)
                store.revisions.of_mind("default")
        want = [HISTORY_OF.on(store.dialect), REVISIONS_OF_MIND.on(store.dialect)] * 2
        assert sent == want and all(s is w for s, w in zip(sent, want, strict=True))
        assert ("NULL AS login" in want[0]) is (backend == "sqlite") and "@" not in want[0] + want[1]
    finally:
        v.close()
