"""Review 68 F6: a mistyped mind was silent. ``synapse-nb --mind defualt memory list`` printed "no memories yet" and
``--mind defualt remember ...`` made a new mind unnoticed. Now a read in a mind that holds nothing, while the vault's
other minds hold records, says so on stderr (naming the minds and a close one), a write that makes a new mind says
so after it, and stdout (recall's text, ``--json``) is byte for byte what it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.vault.minds import MINDS_SHOWN, empty_mind_line, new_mind_line
from tests.test_magics import TestingShell, _shell

TYPO = "mind 'defualt' holds no records; minds in this vault: default, research (did you mean 'default'?)"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A vault whose minds ``default`` and ``research`` hold records."""
    with syn.open_vault(tmp_path) as v:
        v.remember("procedure", "run_migrations", "alembic upgrade head")
        v.with_mind("research").decide("Use SQLite WAL mode")
    return tmp_path


def _cli(vault: Path, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["--vault", str(vault), *args])
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize("args", [
    ("memory", "list"), ("memory", "list", "--json"), ("memory", "search", "alembic"), ("decision", "list"),
    ("lessons", "list"), ("checkpoint", "list"), ("memory", "status"), ("recall", "run migrations"),
    ("recall", "query", "run migrations", "--json"),
])
def test_a_read_in_a_mind_that_holds_nothing_names_the_vaults_minds(vault: Path, args: tuple[str, ...],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _cli(vault, "--mind", "defualt", *args)
    assert code == 0, err
    assert err.splitlines() == [f"synapse-nb: {TYPO}"]
    # stdout is what the command prints without the check: the mind's own answer, nothing added
    monkeypatch.setattr("synapse_nb.vault.minds.other_minds", lambda v: None)
    assert _cli(vault, "--mind", "defualt", *args) == (0, out, "")


def test_recall_text_is_unchanged_byte_for_byte(vault: Path) -> None:
    code, out, err = _cli(vault, "--mind", "defualt", "recall", "how do we run migrations?")
    assert code == 0 and TYPO in err
    with syn.open_vault(vault, mind="defualt") as v:
        assert out == v.recall("how do we run migrations?").text + "\n"


def test_a_failing_read_still_names_the_minds(vault: Path) -> None:
    code, _, err = _cli(vault, "--mind", "defualt", "checkpoint", "restore")
    assert code == 1
    assert err.splitlines()[0] == f"synapse-nb: {TYPO}" and "no checkpoint yet" in err.splitlines()[1]


def test_nothing_is_said_in_a_mind_with_records_a_vault_with_one_mind_or_a_vault_wide_command(
        vault: Path, tmp_path: Path) -> None:
    assert _cli(vault, "memory", "list")[2] == ""
    assert _cli(vault, "--mind", "research", "memory", "list")[2] == ""  # holds a decision, no memory: a record
    assert _cli(vault, "--mind", "defualt", "settings", "list")[2] == ""
    assert _cli(vault, "--mind", "defualt", "memory", "export")[2] == ""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    syn.open_vault(fresh).close()
    assert _cli(fresh, "--mind", "defualt", "memory", "list") == (0, "no memories yet\n", "")


def test_the_first_write_in_a_new_mind_says_so_once(vault: Path) -> None:
    code, out, err = _cli(vault, "--mind", "defualt", "remember", "knowledge", "a", "b")
    assert code == 0 and out.startswith("remembered mem_")
    assert err.splitlines() == [("synapse-nb: a new mind 'defualt' (this vault's minds were default, research; did "
                                 "you mean 'default'?)")]
    assert _cli(vault, "--mind", "defualt", "remember", "knowledge", "c", "d")[2] == ""  # no longer new
    assert _cli(vault, "--mind", "defualt", "memory", "list")[2] == ""


def test_a_refused_write_makes_no_mind_and_says_none(vault: Path) -> None:
    code, _, err = _cli(vault, "--mind", "ops", "remember", "no-such-category", "a", "b")
    assert code != 0 and "new mind" not in err
    with syn.open_vault(vault) as v:
        assert v.minds() == ("default", "research")


def test_a_write_that_writes_nothing_makes_no_mind(vault: Path) -> None:
    _, _, err = _cli(vault, "--mind", "ops", "lessons", "scan")  # no git here: no revert, nothing written
    assert "new mind" not in err, err


def test_the_store_lists_the_minds_holding_any_kind_of_record(tmp_path: Path) -> None:
    with syn.open_vault(tmp_path) as v:
        assert v.minds() == ()
        v.with_mind("b").checkpoint("doing")
        v.with_mind("a").episodes.log("task", outcome="done")
        v.with_mind("c").notes.add("deploy", "when deploying", "run the checks first")
        v.with_mind("a").decide("twice in a")
        v.with_mind("0").lessons.create("never force-push main")
        assert v.minds() == ("0", "a", "b", "c")


def test_lines_name_at_most_twelve_minds_and_only_close_ones() -> None:
    many = tuple(f"m{i:02d}" for i in range(20))
    line = empty_mind_line("zzz", many)
    assert line.endswith(f"m11 and {20 - MINDS_SHOWN} more") and "did you mean" not in line
    assert new_mind_line("ops", ("default",)) == "a new mind 'ops' (this vault's minds were default)"


# ------------------------------------------------------------------------------------------------ the magics
@pytest.fixture
def ip(vault: Path) -> Iterator[TestingShell]:
    shell = _shell(vault, make_vault=False, mind="defualt")
    yield shell
    shell.run_line_magic("unload_ext", "synapse_nb")
    TestingShell.clear_instance()


def test_the_magics_say_the_same(ip: TestingShell, capfd: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%memory status")
    ip.run_cell("%recall how do we run migrations?")
    err = capfd.readouterr().err
    assert err.count(f"synapse_nb: {TYPO}") == 1, err  # once a handle
    ip.run_cell("%remember knowledge a b")
    assert capfd.readouterr().err.splitlines() == [
        "synapse_nb: a new mind 'defualt' (this vault's minds were default, research; did you mean 'default'?)"]
    ip.run_cell("%remember knowledge c d")
    assert "new mind" not in capfd.readouterr().err
