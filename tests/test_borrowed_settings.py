"""A borrowed vault's settings (review 66): they only tighten, and no setting of it loads code.

A vault that came with the repository was configured by whoever committed it: its ``recall_embedder`` of the forms
``import:<module>:<factory>`` or ``sentence-transformers:<folder>`` would run code or load files the repository
supplies in the person's process (and in every agent hook), and its quotas, lesson expiry and gate would be the
committer's. Real git clones throughout, as tests/test_borrowed.py builds them.
"""

from __future__ import annotations

import json
import re
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.render import BORROWED_EMBEDDER_LINE, SEMANTIC_OFF_LINE
from synapse_nb.settings import BORROWED_RULE, SETTINGS, EmbedderRefused, ModelNotHere, outside_code
from synapse_nb.store import embedders

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setattr(embedders, "_loaded", {})  # each test loads its own module's embedder


def _evil(folder: Path, name: str) -> Path:
    """A module whose import records itself (the code a cloned repository would run) and whose ``make`` builds a
    valid embedder (so that, honoured, the channel works)."""
    marker = folder / f"{name}.imported"
    (folder / f"{name}.py").write_text(textwrap.dedent(f"""
        import pathlib
        import numpy as np
        pathlib.Path({str(marker)!r}).write_text("imported")

        class Toy:
            name, version, dimension, fingerprint = "toy", "1", 8, "toy-1"

            def embed(self, texts, *, query=False):
                out = np.zeros((len(texts), 8))
                for i, t in enumerate(texts):
                    for w in t.split():
                        out[i, sum(w.encode()) % 8] += 1.0
                return out

        def make():
            return Toy()
    """), encoding="utf-8")
    return marker


def _clone(tmp_path: Path, git: Any, settings: dict[str, Any]) -> Path:
    """Someone sets ``settings`` in their vault (a memory in it), commits the vault; we clone the repository."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    (upstream / "a.py").write_text("x = 1\n", encoding="utf-8")
    git(upstream, "add", "a.py")
    git(upstream, "commit", "-q", "-m", "Initial commit")
    v = syn.open_vault(upstream)
    v.remember("project", "greeting", "hello world is what the service answers")
    with warnings.catch_warnings():  # the committer's model need not be installed here (ModelNotHere)
        warnings.simplefilter("ignore", ModelNotHere)
        v.settings.set_many(settings)
    v.close()
    git(upstream, "add", "-f", ".synapse/synapse.db")
    git(upstream, "commit", "-q", "-m", "Share our memory")
    git(tmp_path, "clone", "-q", str(upstream), "clone")
    return tmp_path / "clone"


@pytest.fixture()
def evil_clone(tmp_path: Path, git: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A clone whose vault names ``import:<a module on sys.path>:make`` with the channel on."""
    mods = tmp_path / "mods"
    mods.mkdir()
    name = f"evil_{abs(hash(str(tmp_path))) % 10**8}"
    marker = _evil(mods, name)
    monkeypatch.syspath_prepend(str(mods))
    project = _clone(tmp_path, git, {"recall_embedder": f"import:{name}:make", "recall_semantic": 0.4})
    return project, marker


def test_a_borrowed_vaults_import_embedder_is_never_imported(evil_clone: tuple[Path, Path]) -> None:
    """Before: the cloned vault's ``import:evil:make`` was imported by the first recall (code from the repository
    ran in the person's process). Now the channel stays off for that recall, and the answer says why, once, in the
    package's words after the BORROWED line. Adopting the vault trusts its lessons and settings, not its code
    (review 69): the spec is loaded once the person sets it here, in their own terminal."""
    project, marker = evil_clone
    v = syn.open_vault(project, create=False)
    assert v.borrowed is not None
    r = v.recall("hello world")
    assert not marker.exists()
    assert r.semantic_off == BORROWED_EMBEDDER_LINE and r.to_dict()["semantic_off"] == BORROWED_EMBEDDER_LINE
    assert r.text.startswith(f"{v.borrowed.line}\n\n{BORROWED_EMBEDDER_LINE}\n\n") and "hello world" in r.text
    assert r.text.count(BORROWED_EMBEDDER_LINE) == 1 and SEMANTIC_OFF_LINE not in r.text
    assert "import:evil" not in BORROWED_EMBEDDER_LINE
    assert "settings set recall_embedder SPEC" in BORROWED_EMBEDDER_LINE
    with pytest.raises(EmbedderRefused, match="settings set recall_embedder SPEC"):
        v.settings.embedder_spec()
    assert v.settings.get("recall_embedder") is None  # read as not set: never the code's spec
    assert v.recall("hello world").semantic_off == BORROWED_EMBEDDER_LINE and not marker.exists()
    v.adopt()  # a person here trusts its lessons and settings: not yet the code its embedder names
    assert v.recall("hello world").semantic_off == BORROWED_EMBEDDER_LINE and not marker.exists()
    v.settings.set("recall_embedder", f"import:{marker.name.removesuffix('.imported')}:make")  # the person, here
    assert v.recall("hello world").semantic_off is None and marker.exists()
    v.close()


def test_a_person_who_sets_a_borrowed_vaults_spec_here_gets_it_loaded(evil_clone: tuple[Path, Path]) -> None:
    """Borrowed and not adopted: the person setting the spec in their own terminal is the record that loads it
    (review 69), and every reader agrees (``get``, the settings not in force)."""
    project, marker = evil_clone
    spec = f"import:{marker.name.removesuffix('.imported')}:make"
    v = syn.open_vault(project, create=False)
    assert "recall_embedder" in v.settings.not_in_force()
    v.settings.set("recall_embedder", spec)
    assert v.borrowed is not None and v.settings.embedder_spec() == spec == v.settings.get("recall_embedder")
    assert "recall_embedder" not in v.settings.not_in_force()
    assert v.recall("hello world").semantic_off is None and marker.exists()
    v.close()


def test_a_refused_spec_loads_no_model_at_all(evil_clone: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Second reader of this pass: the refusal set the answer's line but left the channel on, which then loaded the
    default model (on a machine without it every recall in the borrowed vault failed). No model is loaded now."""
    from synapse_nb.errors import SemanticUnavailableError

    asked: list[object] = []

    def no_model(spec: object = None) -> None:
        asked.append(spec)
        raise SemanticUnavailableError("no model here")

    monkeypatch.setattr(embedders, "load_embedder", no_model)
    project, marker = evil_clone
    v = syn.open_vault(project, create=False)
    r = v.recall("hello world")
    assert r.semantic_off == BORROWED_EMBEDDER_LINE and "hello world" in r.text
    assert asked == [] and not marker.exists()
    v.close()


def test_every_surface_says_it_and_none_imports(evil_clone: tuple[Path, Path]) -> None:
    """The CLI (text and --json) and an agent's prompt hook: the line, the person told, nothing imported."""
    from synapse_nb.agents.events import parse_event
    from synapse_nb.agents.handlers import REFUSED_NOTICE, handle

    project, marker = evil_clone
    res = CliRunner().invoke(app, ["--vault", str(project), "recall", "query", "--json", "hello world"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["semantic_off"] == BORROWED_EMBEDDER_LINE and BORROWED_EMBEDDER_LINE in out["text"]
    res = CliRunner().invoke(app, ["--vault", str(project), "recall", "query", "hello world"])
    assert res.exit_code == 0 and BORROWED_EMBEDDER_LINE in res.stdout
    for prompt in ("hello world", "nothing in the vault matches these words"):
        got = handle(parse_event("prompt", "", session="s1", text=prompt), vault=str(project), env={})
        assert BORROWED_EMBEDDER_LINE in got.context and SEMANTIC_OFF_LINE not in got.context, got.context
        assert got.notice == REFUSED_NOTICE
    assert not marker.exists()


@pytest.mark.anyio
async def test_the_mcp_recall_says_it_and_imports_nothing(evil_clone: tuple[Path, Path]) -> None:
    from mcp import Client

    from synapse_nb.mcp.server import build_server

    project, marker = evil_clone
    async with Client(build_server(project)) as c:
        r = await c.call_tool("recall", {"query": "hello world", "session_id": "m1"})
    assert not r.is_error and BORROWED_EMBEDDER_LINE in r.content[0].text
    assert r.structured_content["semantic_off"] == BORROWED_EMBEDDER_LINE and not marker.exists()


def test_a_borrowed_vaults_model_folder_is_never_loaded(tmp_path: Path, git: Any) -> None:
    """``sentence-transformers:<folder the repository supplies>``: refused the same way (before: loaded, or the
    recall failed on it)."""
    project = _clone(tmp_path, git, {"recall_embedder": "sentence-transformers:models/m", "recall_semantic": 0.4})
    (project / "models" / "m").mkdir(parents=True)
    v = syn.open_vault(project, create=False)
    r = v.recall("hello world")
    assert r.semantic_off == BORROWED_EMBEDDER_LINE and "hello world" in r.text
    v.close()


def test_only_specs_naming_code_or_files_are_refused() -> None:
    assert [outside_code(s) for s in ("wordllama", "e5-small", "mine")] == [False, False, False]
    assert all(outside_code(s) for s in ("import:m:f", "sentence-transformers:x", "anything:new"))
    rule = BORROWED_RULE["recall_embedder"]
    assert rule("e5-small", None) == "e5-small" and rule("import:m:f", None) is None


def test_every_embedder_read_goes_through_the_one_check() -> None:
    """No module reads ``recall_embedder`` by ``get`` (which a borrowed vault answers with its default): the
    semantic channel's loaders go through ``Settings.embedder_spec`` (the engine did ``get(EMBEDDER)``)."""
    pat = re.compile(r"\.get(_many)?\(\s*(EMBEDDER|\"recall_embedder\")")
    hits = [str(p.relative_to(ROOT)) for p in (ROOT / "synapse_nb").rglob("*.py") if pat.search(p.read_text())]
    assert hits == []


LAX = {"agent_writes_per_hour": 10_000_000, "agent_memories_per_mind": 100_000_000,
       "agent_records_per_mind": 100_000_000, "agent_records_per_vault": 1_000_000_000,
       "agent_megabytes_per_vault": 10_000_000, "lesson_expiry_days": 3650, "trunk_branches": "develop",
       "scan_window": 10_000_000, "recall_floor": 0.0, "recall_margin": 0.0, "recall_top_k": 1000,
       "recall_budget_tokens": 1_000_000, "mcp_answer_tokens": 1_000_000}


def test_a_borrowed_vaults_settings_only_tighten(tmp_path: Path, git: Any) -> None:
    """Before: a cloned vault's quotas, lesson expiry, trunks and gate were the committer's. Now each setting that
    bounds agents or decides what is in force reads as the stricter of the stored value and the default; a stricter
    stored value and a preference are honoured; status and ``settings list`` say what is not in force; adopting
    puts everything in force."""
    project = _clone(tmp_path, git, {**LAX, "auto_checkpoint_every": 3, "recall_semantic": 0.1})
    v = syn.open_vault(project, create=False)
    got = v.settings.as_dict()
    assert {k: got[k] for k in LAX} == {k: SETTINGS[k][0] for k in LAX}
    assert got["auto_checkpoint_every"] == 3 and got["recall_semantic"] == 0.1  # preferences: honoured
    held = v.settings.not_in_force()
    assert sorted(held) == sorted(LAX) and held["agent_writes_per_hour"] == (10_000_000, 600)
    st = v.status()
    assert any(x.startswith("agent_writes_per_hour: stored \"10000000\", in force 600")
               for x in st.settings_not_in_force)
    assert "settings not in force" in str(st) and st.to_dict()["settings_not_in_force"] == list(
        st.settings_not_in_force)
    assert "settings not in force" in st._repr_html_()
    res = CliRunner().invoke(app, ["--vault", str(project), "settings", "list", "--json"])
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    assert rows["agent_writes_per_hour"]["value"] == 600 and rows["agent_writes_per_hour"]["in_force"] is False
    assert rows["agent_writes_per_hour"]["stored"] == 10_000_000 and "stored" not in rows["auto_checkpoint_every"]
    res = CliRunner().invoke(app, ["--vault", str(project), "settings", "list"])
    assert "settings not in force" in res.stdout and '(stored "10000000": not in force)' in res.stdout
    v.adopt()
    assert {k: v.settings.get(k) for k in LAX} == {k: SETTINGS[k][1](x) for k, x in LAX.items()}
    assert v.settings.not_in_force() == {} and v.status().settings_not_in_force == ()
    v.close()


def test_a_stricter_stored_value_stays_in_force(tmp_path: Path, git: Any) -> None:
    project = _clone(tmp_path, git, {"agent_writes_per_hour": 5, "lesson_expiry_days": 2, "recall_floor": 0.5})
    v = syn.open_vault(project, create=False)
    assert v.settings.get_many(["agent_writes_per_hour", "lesson_expiry_days", "recall_floor"]) == {
        "agent_writes_per_hour": 5, "lesson_expiry_days": 2, "recall_floor": 0.5}
    assert v.settings.not_in_force() == {}
    v.close()


def test_a_local_approval_lasts_the_default_expiry_not_the_committers(tmp_path: Path, git: Any) -> None:
    """A lesson a person here approves in a borrowed vault whose committer set ``lesson_expiry_days`` 3650: in
    force 7 days (the default), not ten years."""
    from synapse_nb._util import parse_ts

    project = _clone(tmp_path, git, {"lesson_expiry_days": 3650})
    v = syn.open_vault(project, create=False)
    les = v.lessons.create("Reverted 'retry payments'", files=["pay.py"], branch="main")
    approved = v.lessons.approve(les.id, text="Retry payments only with an idempotency key")
    assert approved.expires_at is not None
    days = (parse_ts(approved.expires_at) - parse_ts(approved.approved_at or approved.updated_at)).days
    assert days == 7
    v.close()


def test_agents_write_under_the_default_quota_not_the_committers(tmp_path: Path, git: Any) -> None:
    """The committer raised ``agent_writes_per_hour`` to ten million: agents here are held to the default, 600 an
    hour (before: the committer's), as the quota check reads the settings reader; a lowered one is in force."""
    project = _clone(tmp_path, git, {"agent_writes_per_hour": 10_000_000})
    v = syn.open_vault(project, create=False)
    agent = v.as_agent()
    for i in range(600):
        agent.remember("project", f"a{i}", f"agent note {i}")
    with pytest.raises(syn.errors.QuotaExceededError, match="agent_writes_per_hour"):
        agent.remember("project", "one_more", "one write too many")
    v.close()
    (tmp_path / "low").mkdir()
    project = _clone(tmp_path / "low", git, {"agent_records_per_mind": 2})
    v = syn.open_vault(project, create=False)
    agent = v.as_agent()
    agent.remember("project", "a1", "first agent note")
    agent.remember("project", "a2", "second agent note")
    with pytest.raises(syn.errors.QuotaExceededError, match="agent_records_per_mind"):
        agent.remember("project", "a3", "third agent note")
    v.close()
