"""Review 68 F1: a terminal IPython (or ``ipython script.ipy``), which shows only text/plain, shows what the magics
return as text: a recall's text, a listing's lines, a widget's name and the command to use there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from synapse_nb.models import RecordList
from tests.test_magics import TestingShell, _shell, _vault


@pytest.fixture
def ip(tmp_path: Path) -> Iterator[TestingShell]:
    shell = _shell(tmp_path / "proj")
    yield shell
    shell.run_line_magic("unload_ext", "synapse_nb")
    TestingShell.clear_instance()


def _plain(ip: TestingShell, obj: object) -> str:
    text: str = ip.display_formatter.formatters["text/plain"](obj)  # what a terminal shows
    return text


def test_recall_shows_its_text_as_plain_text_and_keeps_a_short_repr(ip: TestingShell) -> None:
    ip.run_cell("%remember procedure dataset_location the dataset is in /data/raw --tags data")
    with capture_output() as shown:
        r = ip.run_line_magic("recall", "where is the dataset")
    assert [o.data["text/plain"] for o in shown.outputs] == [r.text]
    assert "the dataset is in /data/raw" in r.text and _plain(ip, r) == r.text
    assert repr(r) == "<Recall 'where is the dataset': 1 item, 0 lessons>"  # the debugging form, unchanged
    assert "<" in r._repr_html_()


def test_a_listing_shows_one_line_per_record_and_its_note(ip: TestingShell) -> None:
    ip.run_cell('%checkpoint create --doing "cleaning the survey"')
    listed = ip.run_line_magic("checkpoint", "list")
    (ckp,) = listed
    shown = _plain(ip, listed)
    assert shown.startswith(ckp.id) and shown.endswith("  [user] [no branch@-------] cleaning the survey")
    assert repr(listed).startswith("RecordList([")
    empty: RecordList[object] = RecordList()  # type: ignore[type-var]
    empty.note = "not inside a git repository"
    assert _plain(ip, empty) == "(no records)\nnote: not inside a git repository"


def test_the_lessons_widget_says_what_it_is_and_what_a_terminal_uses(ip: TestingShell) -> None:
    _vault(ip)
    w = ip.run_line_magic("lessons", "")
    data = ip.display_formatter.format(w)[0]
    assert data["text/plain"] == ("Lessons from reverts: a widget, shown by Jupyter (Lab, Notebook, VS Code), not by a "
                                  "terminal; at a terminal use synapse-nb lessons review")
    assert "application/vnd.jupyter.widget-view+json" in data  # Jupyter still shows the widget
