"""Rows no write path of ours makes, written with SQL (review 37: an agent's database login on a team vault; an old
local vault, an imported one): a person can still list, review, reject and purge them, and every answer keeps its
shape. The rules of the tolerant read: ``synapse_nb/store/sql/decode.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.mcp.server import build_server

#: column -> a value of it no write makes, per table (JSON of the wrong type, items of the wrong type, not JSON)
BAD: dict[str, dict[str, str]] = {
    "lessons": {"diffstat": "[null, 1, [\"a.py\", \"x\", 1]]", "files_affected": "[\"a.py\", null, {\"a\": 1}, 3]",
                "reverted_commits": "[null, {\"sha\": 3}, \"abc\"]", "revert_commit": "[1]"},
    "checkpoints": {"changed_files": "[\"a.py\", null, {\"a\": 1}]"},
    "memories": {"tags": "{\"a\": 1}"},
    "decisions": {"tags": "\"t\""},  # JSON of another type (SQLite's triggers refuse what is not JSON)
    "episodes": {"refs": "[[\"x\"]]", "seq": "'seven'", "duration_s": "'long'"},
}


def _sql(project: Path, statements: list[str]) -> None:
    db = sqlite3.connect(project / ".synapse" / "synapse.db", isolation_level=None)
    try:
        db.execute("PRAGMA ignore_check_constraints = ON")
        for s in statements:
            db.execute(s)
    finally:
        db.close()


@pytest.fixture()
def project(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    (git_repo / "a.py").write_text("x = 1\n", encoding="utf-8")
    v = syn.open_vault(git_repo)
    v.lessons.create("Reverted x", files=["a.py"], branch="main")
    v.lessons.create("Reverted y", files=["a.py"], branch="main")
    v.checkpoint("work", files=["a.py"])
    v.remember("project", "k", "see a.py", tags=["t"])
    v.decide("use a.py", tags=["t"])
    v.episodes.log("task", outcome="ok", thread="t1")
    v.close()
    _sql(git_repo, [f"UPDATE {table} SET {col} = {val if val.startswith(chr(39)) else repr(val)}"
                    for table, cols in BAD.items() for col, val in cols.items()])
    return git_repo


def _cli(project: Path, *args: str, input: str | None = None) -> str:
    res = CliRunner().invoke(app, ["--vault", str(project), *args], input=input)
    assert "unexpected" not in res.output, (args, res.output)
    assert res.exit_code == 0 or (args[:2] == ("memory", "verify") and res.exit_code == 1), (args, res.output)
    return res.stdout


def test_a_person_lists_reviews_rejects_and_purges_malformed_rows(project: Path) -> None:
    v = syn.open_vault(project)
    try:
        lessons = list(v.lessons.list())
        assert {x.diffstat for x in lessons} == {()}  # the rows that are not (path, added, deleted) are dropped
        assert {x.files_affected for x in lessons} == {("a.py",)}
        assert {x.reverted_commits for x in lessons} == {()} and {x.revert_commit for x in lessons} == {None}
        assert v.checkpoints.list()[0].changed_files == ("a.py",)
        assert v.memories.list()[0].tags == () and v.decisions.list()[0].tags == ()
        ep = v.episodes.list()[0]
        assert (ep.refs, ep.seq, ep.duration_s) == ((), None, None)
        first, second = (x.id for x in lessons)
        mem = v.memories.list()[0].id
    finally:
        v.close()
    for args in (("lessons", "list"), ("lessons", "list", "--json"), ("memory", "status"), ("memory", "verify"),
                 ("memory", "list"), ("checkpoint", "list"), ("checkpoint", "restore"), ("decision", "list"),
                 ("recall", "query", "a.py")):
        _cli(project, *args)
    _cli(project, "lessons", "review", "--yes", input="s\ns\n")
    _cli(project, "lessons", "reject", first, "--yes")
    for rid in (second, mem):
        _cli(project, "memory", "purge", rid, "--yes")
    v = syn.open_vault(project)
    try:
        assert not v.lessons.list() and not v.memories.list()  # one rejected, one purged
    finally:
        v.close()


@pytest.mark.anyio
async def test_mcp_answers_keep_their_schema_on_malformed_rows(project: Path) -> None:
    async with Client(build_server(project)) as client:
        for name, args in (("restore_checkpoint", {}), ("get_status", {}), ("search", {"query": "a.py"}),
                           ("recall", {"query": "a.py work"}), ("get_approved_memory", {})):
            r = await client.call_tool(name, args)
            assert not r.is_error, (name, r.content)
        r = await client.call_tool("restore_checkpoint", {})
        assert r.structured_content is not None and r.structured_content["changed_files"] == ["a.py"]


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


def test_a_stamp_reads_as_itself_only_in_the_form_every_version_wrote() -> None:
    """Every writer wrote ``fmt_ts``'s fixed-width UTC text (the first vault on; imports normalise to it; a team
    server's ``ts`` domain checks it), and decode's own looser pattern read an offset or a short fraction written by
    SQL as a time the sorting columns compare as text. Older versions' stamps, year 9999 included (an import before
    the sane window), still read as themselves, so no approved lesson's expiry turns into 1970."""
    from synapse_nb.store.sql.decode import NO_TIME, opt_stamp, stamp

    for old in ("2026-11-30T21:15:07.123456Z", "9999-12-31T23:59:59.999999Z", "1970-01-01T00:00:00.000000Z"):
        assert stamp(old) == old and opt_stamp(old) == old
    for written_by_sql in ("2026-11-30T21:15:07Z", "2026-11-30T21:15:07.1Z", "2026-11-30T21:15:07.123456+02:00",
                           "2026-11-30T21:15:07.123456", "2026-11-30T21:15:07.123456Z\n"):
        assert stamp(written_by_sql) == NO_TIME
    assert opt_stamp(None) is None


def test_an_agents_checkpoint_reads_from_the_agent_whatever_origin_its_row_holds(git_repo: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """An agent's checkpoint comes from the agent or the automatic checkpoint (models.past_agent_limits, as the
    agent's write, an import and a history entry hold it). A row ``source='agent', origin='cli'`` (an agent login's
    SQL on a server before migration 21 held it, an edited file) read back as the person's work at the command line."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    v = syn.open_vault(git_repo)
    try:
        ids = [v.checkpoint(f"work {i}").id for i in range(3)]
    finally:
        v.close()
    _sql(git_repo, [f"UPDATE checkpoints SET source = 'agent', origin = 'cli' WHERE id = '{ids[0]}'",
                    f"UPDATE checkpoints SET source = 'agent', origin = 'auto' WHERE id = '{ids[1]}'",
                    f"UPDATE checkpoints SET origin = 'cli' WHERE id = '{ids[2]}'"])
    v = syn.open_vault(git_repo)
    try:
        got = {c.id: (c.source, c.origin) for c in v.checkpoints.list()}
    finally:
        v.close()
    assert got == {ids[0]: ("agent", "agent"), ids[1]: ("agent", "auto"), ids[2]: ("user", "cli")}


def test_a_stamp_is_ascii_digits_and_the_whole_text() -> None:
    """``_util._TS_TEXT`` used ``\\d``, which takes any Unicode digit, where the team server's ``ts`` domain takes
    [0-9]: "٢٠٢٦-..." read as a stamp sorting after 2100; and ``sane_ts`` used ``.match`` with ``$``, which passes a
    trailing "\\n" (``ts_text``'s fullmatch does not)."""
    from synapse_nb._util import next_stamp, sane_ts, ts_text
    from synapse_nb.store.sql.decode import NO_TIME, stamp

    arabic = "\u0662\u0660\u0662\u0666-12-01T12:00:00.000000Z"
    mixed = "2026-12-01T12:00:00.00000\u0662Z"  # sorts inside the window as text
    assert not ts_text(arabic) and not ts_text(mixed) and stamp(arabic) == stamp(mixed) == NO_TIME
    assert not sane_ts(mixed) and not sane_ts("2026-12-01T12:00:00.000000Z\n")
    assert sane_ts("1970-01-01T00:00:00.000000Z") and not sane_ts("2100-01-01T00:00:00.000000Z")  # [min, max)
    # a clock holding such a value is ignored, not stepped past: it raised a ValidationError on every write
    assert next_stamp(mixed, "2026-12-01T11:00:00.000000Z") == "2026-12-01T11:00:00.000000Z"
