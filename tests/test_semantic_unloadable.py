"""Review 68: recall's semantic channel turned on with a model this process cannot load.

Before: ``settings set --yes recall_semantic 0.1`` without the extra (or ``recall_embedder foo``) was stored
silently, then every ``recall`` failed (exit 1) and the agent hook exited 0 with an empty stdout, so the agent got no
memory at all. Now setting an embedder checks its form, turning the channel on without its model here warns and
stores it, and a recall answers from its words alone, saying so on every surface. An evaluation still fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from test_recall_semantic import OPEN, Fake
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.errors import SemanticUnavailableError
from synapse_nb.render import MODEL_OFF, SEMANTIC_NO_MODEL_LINE, SEMANTIC_OFF_LINE, esc
from synapse_nb.settings import ModelNotHere
from synapse_nb.store import embedders
from synapse_nb.store.embedders import register_embedder

ROOT = Path(__file__).resolve().parents[1]
TEXTS = {"car": "Ann bought a sedan last week", "pets": "Bob walks his puppy every morning",
         "misc": "Ann likes green tea"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    p = tmp_path / "project"
    p.mkdir()
    v = syn.open_vault(p)
    for k, t in TEXTS.items():
        v.remember("project", f"k_{k}", t)
    v.close()
    return p


def _missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The extra not installed: loading the model raises as WordLlamaEmbedder does without wordllama."""
    def load(spec: str | None = None) -> Any:
        raise SemanticUnavailableError("the embedder 'wordllama' needs the optional extra: pip install "
                                       "'synapse_nb[semantic]' (then restart Python)")

    monkeypatch.setattr(embedders, "load_embedder", load)


def _cli(project: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--vault", str(project), *args])


def _cause(cause: str, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the channel on with a model that cannot be loaded in this process, for ``cause``."""
    v = syn.open_vault(project)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelNotHere)
        if cause == "extra missing":
            _missing(monkeypatch)
        elif cause == "factory fails":
            def boom() -> Any:
                raise RuntimeError("model file truncated")
            register_embedder("boom", boom)
            v.settings.set("recall_embedder", "boom")
        else:  # a name registered in another process (a notebook) read here, where it is not
            register_embedder("elsewhere", Fake)
            v.settings.set("recall_embedder", "elsewhere")
            monkeypatch.setattr(embedders, "_registry", {})
        v.settings.set("recall_semantic", 0.3)
    v.close()


@pytest.mark.parametrize("cause", ["extra missing", "factory fails", "unknown name"])
def test_a_recall_answers_from_its_words_and_says_why(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                      cause: str) -> None:
    _cause(cause, project, monkeypatch)
    v = syn.open_vault(project)
    r = v.recall("Ann sedan", bars=OPEN)
    assert r.semantic_off is not None and r.semantic_off.startswith(MODEL_OFF), r.semantic_off
    assert {"extra missing": "synapse_nb[semantic]", "factory fails": "model file truncated",
            "unknown name": "unknown embedder 'elsewhere'"}[cause] in r.semantic_off
    assert r.text.startswith(f"{SEMANTIC_NO_MODEL_LINE}\n\n") and SEMANTIC_OFF_LINE not in r.text
    assert "sedan" in r.items[0].line and r.to_dict()["semantic_off"] == r.semantic_off
    assert f"<b>{esc(SEMANTIC_NO_MODEL_LINE)}</b></div>" in r._repr_html_()  # the notebook shows it
    body = r.text.removeprefix(f"{SEMANTIC_NO_MODEL_LINE}\n\n")
    v.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelNotHere)
        syn.open_vault(project).settings.set("recall_semantic", 0)
    off = syn.open_vault(project).recall("Ann sedan", bars=OPEN)
    assert off.semantic_off is None and off.text == body  # the same answer as with the channel off


def test_the_cli_recall_answers(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cause("extra missing", project, monkeypatch)
    res = _cli(project, "recall", "query", "--json", "Ann sedan")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert "synapse_nb[semantic]" in out["semantic_off"] and out["text"].startswith(SEMANTIC_NO_MODEL_LINE)
    res = _cli(project, "recall", "query", "Ann sedan")
    assert res.exit_code == 0 and res.stdout.startswith(SEMANTIC_NO_MODEL_LINE) and "sedan" in res.stdout


def test_the_hook_context_carries_the_answer(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.agents.events import parse_event
    from synapse_nb.agents.handlers import MODEL_NOTICE, handle

    _cause("extra missing", project, monkeypatch)
    for prompt, hit in (("Ann sedan", True), ("quantum chromodynamics", False)):
        got = handle(parse_event("prompt", "", session="s1", text=prompt), vault=str(project), env={})
        assert got.context.startswith(SEMANTIC_NO_MODEL_LINE) and ("sedan" in got.context) is hit, got.context
        assert got.notice == MODEL_NOTICE and "pip install" in got.notice
        assert "restart Python" not in got.context  # the package's words only, not the error's


def test_the_hook_process_prints_its_context_without_the_extra(project: Path, tmp_path: Path) -> None:
    """End to end, as Claude Code runs it: ``import wordllama`` fails in each process (a ``sitecustomize`` on its
    path blocks it, as on a machine without the extra): the setting warns, and the hook prints its context."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text("import sys\nsys.modules['wordllama'] = None\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SYNAPSE_HOME", "SYNAPSE_READONLY", "CLAUDECODE")}
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), str(ROOT)])
    base = [sys.executable, "-m", "synapse_nb", "--vault", str(project)]
    set_ = subprocess.run([*base, "settings", "set", "--yes", "recall_semantic", "0.1"], env=env, cwd=project,
                          capture_output=True, text=True, timeout=120, check=False)
    assert set_.returncode == 0 and "warning" in set_.stderr and "synapse_nb[semantic]" in set_.stderr, set_.stderr
    payload = {"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "Ann sedan"}
    res = subprocess.run([sys.executable, "-m", "synapse_nb", "hook", "UserPromptSubmit"], env=env, cwd=project,
                         input=json.dumps(payload), capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    context = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(SEMANTIC_NO_MODEL_LINE) and "sedan" in context, context


def test_an_evaluation_still_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark must not measure words only unsaid: ``recall eval --semantic`` fails before any vault."""
    from synapse_nb.eval.retrieval import locomo_questions

    _missing(monkeypatch)
    with pytest.raises(SemanticUnavailableError, match=r"synapse_nb\[semantic\]"):
        locomo_questions(str(ROOT / "datasets" / "locomo"), conversations=[0], semantic=0.1)
    res = CliRunner().invoke(app, ["recall", "eval", str(ROOT / "datasets" / "locomo"), "--conversations", "1",
                                   "--semantic", "0.1"])
    assert res.exit_code == 1 and "synapse_nb[semantic]" in res.stderr, res.stderr


class _Poisoned(Fake):
    """A bring-your-own model that raises on some text (a bug, or a record it cannot read)."""

    def embed(self, texts: Any, *, query: bool = False) -> Any:
        if not query and any("zqxv" in t for t in texts):
            raise RuntimeError("the model cannot read this text")
        return super().embed(texts, query=query)


def test_a_record_the_model_raises_on_leaves_recall_and_the_hook_answering(project: Path) -> None:
    """Review 69: an agent's record that made the model raise while the sync embedded it failed every recall (the
    RuntimeError went through), and with it every hook. Now the recall answers from its words and says why."""
    from synapse_nb.agents.events import parse_event
    from synapse_nb.agents.handlers import handle

    model = _Poisoned()
    register_embedder("poisoned", lambda: model)
    v = syn.open_vault(project)
    v.settings.set_many({"recall_embedder": "poisoned", "recall_semantic": 0.4})
    assert v.recall("sedan", bars=OPEN).semantic_off is None  # embedded, answering with the channel
    v.as_agent().remember("project", "poison", "zqxv sedan notes")
    r = v.recall("who bought a sedan", bars=OPEN)
    assert r.semantic_off is not None and r.semantic_off.startswith(MODEL_OFF) and "RuntimeError" in r.semantic_off
    assert r.text.startswith(SEMANTIC_NO_MODEL_LINE) and "sedan" in r.text
    got = handle(parse_event("prompt", "", session="s1", text="who bought a sedan"), vault=str(project), env={})
    assert got.context.startswith(SEMANTIC_NO_MODEL_LINE) and "sedan" in got.context
    v.close()


def test_a_question_the_model_raises_on_is_answered_from_words(project: Path) -> None:
    """Second reader of that fix: it caught a model raising on a record only; one raising on the question (an
    agent's prompt in a hook) still failed the recall. Every model call goes through one function now
    (``embedders.embed_quantized``), which turns the model's failure into the channel's "no model"."""
    class OnQuestion(Fake):
        def embed(self, texts: Any, *, query: bool = False) -> Any:
            if query and any("zqxv" in t for t in texts):
                raise ValueError("the model cannot read this question")
            return super().embed(texts, query=query)

    register_embedder("on-question", OnQuestion)
    v = syn.open_vault(project)
    v.settings.set_many({"recall_embedder": "on-question", "recall_semantic": 0.4})
    assert v.recall("sedan", bars=OPEN).semantic_off is None
    r = v.recall("zqxv who bought a sedan", bars=OPEN)
    assert r.semantic_off is not None and "ValueError" in r.semantic_off
    assert r.text.startswith(SEMANTIC_NO_MODEL_LINE) and "sedan" in r.text
    v.close()
