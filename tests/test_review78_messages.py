"""Review 78 F6: messages a new user met from a wheel-only install."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from synapse_nb.cli import app


def test_recall_eval_without_the_dataset_says_locomo_is_not_shipped(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNAPSE_DATASETS", str(tmp_path / "none"))  # as from a wheel: no datasets/ folder
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["recall", "eval", "datasets/locomo"])
    assert res.exit_code == 1
    assert res.stderr.startswith("synapse-nb: error: no LoCoMo file: 'datasets/locomo' does not exist here. LoCoMo "
                                 "is not shipped with the package (its licence, CC BY-NC 4.0, is non-commercial): "
                                 "it is in the source repository's datasets/locomo/"), res.stderr
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(app, ["recall", "eval", str(tmp_path / "empty")])
    assert f"the folder '{tmp_path / 'empty'}' holds no locomo10.json" in res.stderr


def test_team_status_names_a_url_that_is_not_one() -> None:
    res = CliRunner().invoke(app, ["team", "status", "notaurl"])
    assert res.exit_code == 2
    assert res.stderr == ("synapse-nb: error: 'notaurl' is not a postgresql:// URL; give "
                          "postgresql://user@host:port/database?project=NAME (postgres:// too)\n")
