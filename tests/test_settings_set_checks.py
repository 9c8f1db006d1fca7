"""Review 68: ``settings set`` checks the name and the value before anything else, takes a negative number as a
value, suggests the nearest name, checks an embedder's form, and warns when the semantic channel is turned on
without its model here."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.settings import ModelNotHere


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    p = tmp_path / "proj"
    p.mkdir()
    syn.open_vault(p).close()
    return p


def _set(project: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--vault", str(project), "settings", "set", *args])


def _stored(project: Path, name: str) -> Any:
    return syn.open_vault(project).settings.get(name)


def test_a_bad_value_is_said_before_the_terminal_check(project: Path) -> None:
    """Without a terminal (CliRunner has none) the range error came only with --yes: "no terminal" first."""
    res = _set(project, "recall_floor", "1.5")
    assert res.exit_code == 1 and "expected a number from 0 to 1, got 1.5" in res.stderr, res.stderr
    assert "terminal" not in res.stderr
    res = _set(project, "recall_embedder", "foo")
    assert res.exit_code == 1 and "unknown embedder 'foo'" in res.stderr and "terminal" not in res.stderr
    res = _set(project, "recall_floor", "0.3")  # a good value still needs a terminal or --yes
    assert res.exit_code == 1 and "no terminal" in res.stderr


def test_a_negative_number_is_a_value(project: Path) -> None:
    """``lesson_expiry_days -3`` said "No such option: -3"; now its range answers, with --yes before or after."""
    for args in (("lesson_expiry_days", "-3"), ("--yes", "lesson_expiry_days", "-3"),
                 ("lesson_expiry_days", "-3", "--yes")):
        res = _set(project, *args)
        assert res.exit_code == 1 and "expected a whole number from 1 to 3650, got -3" in res.stderr, res.stderr
    assert _stored(project, "lesson_expiry_days") == 7
    assert _set(project, "lesson_expiry_days", "9", "--yes").exit_code == 0
    assert _stored(project, "lesson_expiry_days") == 9


def test_an_unknown_name_gets_the_nearest(project: Path) -> None:
    for cmd in (("set", "recal_floor", "0.3", "--yes"), ("get", "recal_floor"), ("reset", "recal_floor", "--yes")):
        res = CliRunner().invoke(app, ["--vault", str(project), "settings", *cmd])
        assert res.exit_code == 1 and "unknown setting 'recal_floor' (did you mean 'recall_floor'?)" in res.stderr
    res = _set(project, "zzz", "1", "--yes")
    assert res.exit_code == 1 and "did you mean" not in res.stderr and "known settings:" in res.stderr


@pytest.mark.parametrize(("spec", "said"), [
    ("foo", "unknown embedder 'foo'"), ("e5small", "did you mean 'e5-small'"), ("imprt:m:f", "did you mean 'import:'"),
    ("import:mod", "expected 'import:<module>:<factory>'"), ("sentence-transformers:", "<local folder>"),
    ("import:synapse_nb.recall:make", "not one of synapse_nb's")])
def test_an_embedder_must_have_a_form_recall_loads(project: Path, spec: str, said: str) -> None:
    res = _set(project, "--yes", "recall_embedder", spec)
    assert res.exit_code == 1 and said in res.stderr, res.stderr
    assert _stored(project, "recall_embedder") is None
    with pytest.raises(syn.ValidationError, match="setting recall_embedder"):
        syn.open_vault(project).settings.set("recall_embedder", spec)


def test_a_form_recall_loads_is_stored_without_loading_it(project: Path, tmp_path: Path) -> None:
    """Nothing is imported at set time (the module may exist only on other machines); a team sets it for them."""
    for spec in ("e5-small", "wordllama", "import:not_here_mod:make", f"sentence-transformers:{tmp_path}"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ModelNotHere)
            assert _set(project, "--yes", "recall_embedder", spec).exit_code == 0
        assert _stored(project, "recall_embedder") == spec
    assert "not_here_mod" not in sys.modules


def test_turning_the_channel_on_without_its_model_here_warns(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored (not refused: other machines may have it), and said on stderr and as a warning in the API."""
    monkeypatch.setitem(sys.modules, "wordllama", None)  # the extra not installed
    res = _set(project, "--yes", "recall_semantic", "0.1")
    assert res.exit_code == 0 and res.stdout.strip() == "recall_semantic = 0.1"
    assert "warning" in res.stderr and "pip install 'synapse_nb[semantic]'" in res.stderr, res.stderr
    assert "words alone" in res.stderr and _stored(project, "recall_semantic") == 0.1
    v = syn.open_vault(project)
    with pytest.warns(ModelNotHere, match=r"'wordllama' needs its optional extra"):
        v.settings.set("recall_semantic", 0.2)
    with pytest.warns(ModelNotHere, match=r"module 'not_here_mod'"):  # naming the model warns too
        v.settings.set_many({"recall_embedder": "import:not_here_mod:make"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelNotHere)
        v.settings.set("recall_semantic", 0)  # off: nothing to say
        v.settings.set("recall_embedder", None)
        v.settings.set("recall_floor", 0.3)
    monkeypatch.delitem(sys.modules, "wordllama")
    res = _set(project, "--yes", "recall_semantic", "0.1")  # installed: no warning
    assert res.exit_code == 0 and "warning" not in res.stderr, res.stderr
