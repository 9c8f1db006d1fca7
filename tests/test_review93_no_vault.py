"""Review 93 F3: on a project with no vault, MCP ``recall``, ``search`` and ``get_status`` answer "nothing stored yet"
(tool errors before, while ``get_approved_memory`` and ``restore_checkpoint`` answered normally), and create
nothing; a folder that does not exist stays an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from synapse_nb.mcp.server import NOTHING_STORED, build_server

pytestmark = pytest.mark.anyio


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    p = tmp_path / "project"
    p.mkdir()
    return p


async def test_the_reading_tools_answer_nothing_stored_yet_on_a_new_project(project: Path) -> None:
    async with Client(build_server(project)) as c:
        for query in ("how do we deploy?", ""):
            r = await c.call_tool("recall", {"query": query, "session_id": "s1"})
            assert not r.is_error and r.content[0].text == NOTHING_STORED
            data = r.structured_content
            assert data["nothing_new"] is True and data["empty_reason"] == "no_vault" and data["items"] == []
        r = await c.call_tool("search", {"query": "deploy"})
        assert not r.is_error and r.content[0].text == NOTHING_STORED
        assert r.structured_content["results"] == [] and r.structured_content["empty_reason"] == "no_vault"
        r = await c.call_tool("get_status", {})
        assert not r.is_error and r.content[0].text.startswith(NOTHING_STORED)
        data: dict[str, Any] = r.structured_content
        assert data["vault"] is False and data["vault_path"] == str((project / ".synapse").resolve())
        assert data["counts"]["memories"]["total"] == 0 and data["counts"]["lessons"] == {"approved": 0}
        assert all(n == 0 for counts in data["counts"].values() for n in counts.values())
    assert list(project.iterdir()) == []  # a read never creates the vault


async def test_a_folder_that_does_not_exist_stays_an_error(tmp_path: Path) -> None:
    """A typo must never read as an empty project."""
    async with Client(build_server(tmp_path / "typo")) as c:
        for name, args in (("recall", {"query": "deploy"}), ("search", {"query": "deploy"}), ("get_status", {}),
                           ("get_approved_memory", {})):
            r = await c.call_tool(name, args)
            assert r.is_error and "does not exist" in r.content[0].text, name
    assert not (tmp_path / "typo").exists()
