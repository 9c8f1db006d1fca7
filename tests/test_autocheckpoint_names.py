"""Automatic checkpoints list every file git reports, whatever its name (review 41): a control character, a line
break or an undecodable byte in one file's name, a name past the path-length cap or more files than a checkpoint
lists stopped every automatic checkpoint (the notebook's and ``synapse-nb watch``'s) as a whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

import synapse_nb as syn
from synapse_nb._util import MAX_FILES, MAX_PATH_CHARS
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.kinds.autocheckpoint import AutoCheckpoint
from tests.conftest import said_watching, wait_for

ESC_NAME = "notes\x1b[8m.md"  # an ordinary file an agent can create in the work tree


def test_the_notebooks_auto_checkpoint_lists_a_name_with_a_control_character(tmp_path: Path) -> None:
    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("a.txt", "a\n", "Add a")
    syn.open_vault(repo.root).close()
    c = Config()
    c.HistoryManager.enabled = False
    c.HistoryManager.hist_file = ":memory:"
    c.SynapseMagics.vault_path = str(repo.root)
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance(config=c)
    ip.run_line_magic("load_ext", "synapse_nb")
    try:
        ip.run_line_magic("checkpoint", "auto on --every 1")
        (repo.root / ESC_NAME).write_text("x")
        (repo.root / "work.py").write_text("x = 1\n")
        with capture_output() as out:
            ip.run_cell("x = 1")
            ip.run_cell("y = 2")
        assert "skipped" not in out.stdout, out.stdout  # was: "auto checkpoint skipped: ... U+001B" on every cell
        with syn.open_vault(repo.root) as v:
            cps = v.checkpoints.list()
            assert len(cps) == 2 and all(cp.origin == "auto" for cp in cps)
            assert cps[0].changed_files == ("notes<U+001B>[8m.md", "work.py")
    finally:
        ip.run_line_magic("unload_ext", "synapse_nb")
        InteractiveShell.clear_instance()


def test_watch_lists_a_name_with_a_control_character(tmp_path: Path) -> None:
    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("a.txt", "a\n", "Add a")
    syn.open_vault(repo.root).close()
    env = {k: v for k, v in os.environ.items() if k != "SYNAPSE_HOME"}
    proc = subprocess.Popen([sys.executable, "-m", "synapse_nb", "watch", "--every", "2"], cwd=repo.root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = ""
    try:
        said = said_watching(proc)
        assert said, "the watcher did not start"  # it watches: the files below are new to it
        for name in ("b\x1b[8m\nc.txt", "d.txt"):
            (repo.root / name).write_text("x\n")
            repo.git("add", name)
        with syn.open_vault(repo.root) as v:
            assert wait_for(lambda: v.checkpoints.count() == 1)
            [c] = v.checkpoints.list()
            assert c.origin == "watch" and c.changed_files == ("b<U+001B>[8m<U+000A>c.txt", "d.txt")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        err = said + err
    assert proc.returncode == 0, err
    assert "checkpoint ckp_" in out


def test_the_caps_cut_and_say_so_instead_of_refusing_the_checkpoint(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    long_name = "deep/" * 300 + "end.py"  # 1,506 characters: past the 1,024 a path may hold
    names = [f"f{i:04}.py" for i in range(MAX_FILES + 100)] + [long_name, "bad\udcffbyte.py"]
    for unit in ("file", "cell"):
        auto = AutoCheckpoint(every=1, enabled=True, unit=unit)  # type: ignore[arg-type]
        if unit == "file":
            assert auto.observe_files(names)
        else:
            assert auto.observe(success=True, changed=names)
        c = auto.save(v.checkpoints)
        assert len(c.changed_files) == MAX_FILES
        assert "; 102 more changed files not listed (at most 500 are)" in c.doing
    auto = AutoCheckpoint(every=1, enabled=True, unit="file")
    assert auto.observe_files([long_name, "bad\udcffbyte.py"])
    c = auto.save(v.checkpoints)
    cut, bad = c.changed_files  # the cut name starts "...", which sorts first
    assert bad == "bad<U+DCFF>byte.py"
    assert len(cut) == MAX_PATH_CHARS and cut.startswith("...") and cut.endswith("deep/end.py")
    assert "not listed" not in c.doing
    v.close()


def test_a_name_with_a_bidi_control_or_a_tab_is_stored_and_shown_escaped(tmp_path: Path) -> None:
    """``a<U+202E>yp.exe`` displays as "aexe.py": the write path dropped the override (``ayp.exe``, a name no file
    has) and one line showed a tab as a space. Each invisible character and tab is stored and shown as its code
    point, as every reader shows them (``provenance.inline``)."""
    v = syn.open_vault(tmp_path)
    auto = AutoCheckpoint(every=1, enabled=True, unit="file")
    assert auto.observe_files(["a\u202eyp.exe", "b\tc.py", "d\u200be.py", "\U0001F468\u200d\U0001F469.md"])
    c = auto.save(v.checkpoints)
    assert c.changed_files == ("a<U+202E>yp.exe", "b<U+0009>c.py", "d<U+200B>e.py", "\U0001F468\u200d\U0001F469.md")
    shown = v.checkpoints.restore(c.id).restore_text()
    assert '"a<U+202E>yp.exe"' in shown and '"b<U+0009>c.py"' in shown and "\u202e" not in shown
    v.close()
