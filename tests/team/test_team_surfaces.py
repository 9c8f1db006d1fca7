"""The notebook surfaces on a team vault, unchanged: the magics (their ``vault_path`` is the URL) and the widgets."""

from __future__ import annotations

from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from synapse_nb.widgets import LessonReview


def test_magics_read_and_write_a_team_vault(team_url: str, machine: Any) -> None:
    other = machine("other", team_url)
    c = Config()
    c.HistoryManager.enabled = False
    c.HistoryManager.hist_file = ":memory:"
    c.SynapseMagics.vault_path = team_url
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance(config=c)
    try:
        ip.run_line_magic("load_ext", "synapse_nb")
        ip.run_line_magic("remember", "knowledge deploy_day deploys run on fridays after the freeze")
        assert [m.key for m in other.memories.list()] == ["deploy_day"]  # on the server, seen by another machine
        c = ip.run_line_magic("checkpoint", 'create --doing "Refactoring JWT auth" --next-step "Run pytest"')
        assert other.checkpoints.get(c.id).doing == "Refactoring JWT auth"
    finally:
        ip.run_line_magic("unload_ext", "synapse_nb")
        InteractiveShell.clear_instance()


def test_widgets_act_on_a_team_vault(team_url: str, machine: Any) -> None:
    a, b = machine("a", team_url), machine("b", team_url)
    les = a.lessons.create("Reverted the retry change")
    a.remember("knowledge", "backups", "pg_dump every night")
    review = LessonReview(b)  # another machine's notebook
    review.approve(les.id, "never retry blindly")
    assert a.lessons.get(les.id).status == "approved"
    assert "never retry blindly" in a.recall("retry").text
