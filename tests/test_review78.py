"""Review 78, a demanding new user's findings beyond the typed API (``tests/test_typed_api.py``):

- ``recall_top_k 0`` was accepted and emptied every recall with no word why (a stored 0 now reads as the default);
- a magic's ``--limit 0`` was refused with Python's "None" while the CLI and ``%memory expiring -n 0`` took it as all;
- ``%config SynapseMagics.default_budget = -3`` (``mind = ''``, a ``vault_path`` that does not exist) was taken, and
  the next magic failed naming something the user never typed;
- ``ipython script.ipy`` printed ``%recall`` only: the listings of ``%checkpoint list`` and ``%memory search`` were
  returned, and a script's one silent cell displays no result;
- terminal IPython printed an empty ``Out[n]:`` after ``%remember`` and ``%recall``;
- ``%%episode Bad Key`` said "unrecognized arguments: Key".
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output
from traitlets import TraitError

import synapse_nb as syn
import synapse_nb.settings as settings_mod
from synapse_nb.magics import _INSTANCES
from synapse_nb.recall import Bars
from synapse_nb.settings import SettingIgnored
from tests.test_magics import TestingShell, _shell, _usage

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ip(tmp_path: Path) -> Iterator[TestingShell]:
    shell = _shell(tmp_path / "proj")
    yield shell
    shell.run_line_magic("unload_ext", "synapse_nb")
    TestingShell.clear_instance()


# -- recall_top_k ---------------------------------------------------------------------------------------------
def test_recall_top_k_0_is_refused_and_a_stored_0_reads_as_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_mod, "_SAID", set())
    v = syn.open_vault(tmp_path)
    v.remember("procedure", "deploy_steps", "we deploy with make deploy")
    with pytest.raises(syn.ValidationError, match="recall_top_k: expected a whole number from 1 to 1000, got 0"):
        v.settings.set("recall_top_k", 0)
    with sqlite3.connect(v.db_path) as c:  # a vault an older version let set it
        c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('setting:recall_top_k', '0')")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        r = v.recall("how do we deploy")
    assert [i.id for i in r.items] and r.bars.top_k == 5
    assert any(issubclass(w.category, SettingIgnored) and "recall_top_k" in str(w.message) for w in said)
    v.close()


def test_a_recall_with_top_k_0_says_why_it_is_empty(vault: syn.Vault) -> None:
    vault.remember("procedure", "deploy_steps", "we deploy with make deploy")
    r = vault.recall("how do we deploy", bars=Bars(top_k=0))
    assert r.nothing_new and "top_k is 0: no hit of any kind is kept" in r.text


# -- the magics -------------------------------------------------------------------------------------------------
def test_a_magics_limit_0_is_all_as_at_the_cli(ip: TestingShell) -> None:
    v = _INSTANCES[id(ip)].writable_vault()
    for i in range(22):
        v.checkpoint(f"step {i}")
    with capture_output():
        assert len(ip.run_line_magic("checkpoint", "list --limit 0")) == 22
        assert len(ip.run_line_magic("checkpoint", "list")) == 20
        assert len(ip.run_line_magic("checkpoint", "list -n 3")) == 3
    msg = _usage(ip, "%checkpoint list --limit -1")
    assert msg == "--limit must be 0 (all) or a whole number from 1 to 1,000,000,000, got -1"
    assert "None" not in _usage(ip, "%memory expiring -n -1")


@pytest.mark.parametrize(("name", "value", "said", "good"), [
    ("default_budget", -3, "default_budget: -3 is not accepted; use a whole number of tokens from 0 to 1,000,000", 0),
    ("mind", "", "mind '' is not accepted; use 1-64 letters", "research"),
    ("vault_path", "/nonexistent/x", "vault_path: no folder '/nonexistent/x'; give an existing project or vault",
     None),
    ("session", " ", "session: ' ' is not accepted; use a name of 1-200 printable characters, or None", "review-1"),
])
def test_config_refuses_a_bad_setting_at_once_and_keeps_the_old_value(
        ip: TestingShell, name: str, value: object, said: str, good: object) -> None:
    synapse = _INSTANCES[id(ip)]
    before = getattr(synapse, name)
    with pytest.raises(TraitError) as info:
        setattr(synapse, name, value)
    assert str(info.value).startswith(said)
    assert getattr(synapse, name) == before
    ip.run_cell(f"%config SynapseMagics.{name} = {value!r}")  # through %config: said, and the old value kept
    assert getattr(synapse, name) == before
    with capture_output():
        ip.run_line_magic("recall", "anything")  # the next magic works
    setattr(synapse, name, good)  # what is accepted is taken
    assert getattr(synapse, name) == good


def test_an_episodes_task_key_of_two_words_says_what_a_key_is(ip: TestingShell) -> None:
    msg = _usage(ip, "%%episode Bad Key\nx = 1\n")
    assert msg == ("%%episode takes one task key, a snake_case word (lower-case letters, digits and single "
                   "underscores, e.g. train_baseline), got 'Bad Key'")


def test_a_shown_result_leaves_no_empty_out_prompt(ip: TestingShell) -> None:
    with capture_output() as cap:  # as a person types the lines: each result goes to the shell's display hook
        for line in ("%remember project project_status v1.5 deployed", "%recall project status", "1 + 1"):
            ip.run_cell(line, store_history=True)
    shown = [o.data.get("text/plain", "") for o in cap.outputs]
    assert any("remembered" in x for x in shown) and any("project/project_status" in x for x in shown)
    # before: "Out[1]: Out[2]: Out[3]: 2"
    assert cap.stdout.count("Out[") == 1 and cap.stdout.endswith("]: 2\n"), cap.stdout


def test_an_ipython_script_prints_every_listing(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    v = syn.open_vault(project)
    v.remember("project", "deploy_steps", "we deploy with make deploy")
    v.checkpoint("deploying the importer")
    v.close()
    script = project / "s.ipy"
    script.write_text("%load_ext synapse_nb\n%checkpoint list --limit 0\n%memory search deploy\n"
                      "%memory expiring -n 0\n%memory status\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "IPYTHONDIR": str(tmp_path / "ipython"), "SYNAPSE_HOME": str(project)}
    out = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor", str(script)],
                         cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("ckp_") and "deploying the importer" in line for line in lines), out.stdout
    assert any(line.startswith("mem_") and "project/deploy_steps" in line for line in lines), out.stdout
    assert "(no records)" in lines and any(line.startswith("vault ") for line in lines), out.stdout
