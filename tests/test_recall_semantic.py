"""Recall's optional semantic channel (synapse_nb/recall/semantic.py, extra ``synapse_nb[semantic]``)."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import synapse_nb as syn
from synapse_nb.recall import Bars, semantic

ROOT = Path(__file__).resolve().parents[1]
OPEN = Bars(floor=0, margin=0, top_k=10, budget_tokens=10**9)
TEXTS = {"pets": "Ann has a dog and two cats at home", "taxes": "Ann filed her tax return at home",
         "car": "Ann home garage repairs were expensive"}


def _seed(v: syn.Vault) -> dict[str, str]:
    return {v.remember("project", f"ann_{k}", t).id: k for k, t in TEXTS.items()}


def _order(v: syn.Vault, names: dict[str, str], query: str = "Ann animals home") -> list[str]:
    return [names[i.id] for i in v.recall(query, bars=OPEN).items]


def test_off_by_default_and_the_setting_turns_it_on(vault: syn.Vault) -> None:
    names = _seed(vault)
    assert vault.settings.get("recall_semantic") == 0.0
    off = _order(vault, names)
    assert off[0] != "pets"  # lexically the three tie on "ann" and "home": no notion of animals
    vault.settings.set("recall_semantic", 0.3)
    assert _order(vault, names)[0] == "pets"  # a dog and cats are animals
    vault.settings.set("recall_semantic", 0)
    assert _order(vault, names) == off  # off again: exactly the lexical ranking


def test_the_setting_is_validated(vault: syn.Vault) -> None:
    for bad in (-0.1, 1.5, "much", True):
        with pytest.raises(syn.ValidationError, match="from 0 to 1"):
            vault.settings.set("recall_semantic", bad)


def test_turned_on_without_the_extra_says_what_to_install(vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(vault)
    monkeypatch.setattr(semantic, "_model", None)
    monkeypatch.setitem(sys.modules, "wordllama", None)  # import wordllama -> ImportError
    vault.settings.set("recall_semantic", 0.3)
    with pytest.raises(syn.SemanticUnavailableError, match=r"pip install 'synapse_nb\[semantic\]'") as e:
        vault.recall("Ann animals home")
    assert isinstance(e.value, syn.SynapseError) and isinstance(e.value, ImportError)
    vault.settings.set("recall_semantic", 0)
    assert vault.recall("Ann animals home", bars=OPEN).items  # off: no model needed


def test_loads_strictly_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(semantic, "_model", None)
    monkeypatch.setattr(semantic, "_cache", None)
    info = semantic.describe()
    assert info["name"] == "wordllama l2_supercat 256" and info["version"].startswith("0.")
    assert len(info["weights_sha256"]) == 64 and int(info["weights_sha256"], 16) > 0


def test_importing_wordllama_leaves_the_users_logging_alone() -> None:
    code = ("import logging, sys\nfrom synapse_nb.recall import semantic\n"
            "assert 'wordllama' not in sys.modules\nsemantic.load_model()\nassert 'wordllama' in sys.modules\n"
            "root = logging.getLogger()\nprint(len(root.handlers), root.level)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["0", str(logging_warning())]


def logging_warning() -> int:
    import logging

    return logging.WARNING


def test_vectors_are_unit_integers_and_empty_text_gives_zero_not_nan() -> None:
    m = semantic.load_model()
    v = m.vector("Ann has a dog")
    assert v.dtype == np.int64 and v.shape == (semantic.DIM,)
    assert abs(math.sqrt(int((v * v).sum())) / semantic.QUANT - 1) < 1e-3
    for empty in ("", "   "):
        assert not m.vector(empty).any()
    cos = semantic.cosines("dog", [("a", ""), ("b", "a dog"), ("c", "taxes and returns")])
    assert not np.isnan(cos).any() and cos[0] == 0.0 and cos[1] > cos[2]
    # a text's vector does not depend on what is embedded with it (each text alone: no batch padding)
    long = "word " * 5000
    assert np.array_equal(semantic.cosines("dog", [("x", long), ("b", "a dog")])[1], cos[1])


_RUN = """
import json, sys, tempfile, pathlib
import synapse_nb as syn
from synapse_nb.recall import Bars
d = pathlib.Path(tempfile.mkdtemp())
(d / "p").mkdir()
v = syn.open_vault(d / "p")
words = "dog cat garden taxes car home holiday beach mountain camping painting music guitar school".split()
lines = v.export_jsonl().splitlines()[:1]  # fixed ids and times: the same vault in every process
key = {}
for i in range(120):
    eid, ts = f"epi_{i:012x}", f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
    key[eid] = i
    lines.append(json.dumps({"kind": "episode", "id": eid, "mind": v.mind, "task_key": f"t{i}", "status": "unknown",
        "outcome": f"Ann {words[i % 14]} and {words[(i * 5) % 14]} note {i} at home", "refs": [], "duration_s": None,
        "source": "user", "created_at": ts, "updated_at": ts, "thread": f"s{i // 10}", "seq": i % 10,
        "actor": "Ann" if i % 2 else "Bob"}, sort_keys=True))
v.import_jsonl(lines, trust=True)
out = []
for w, q in [(w, q) for w in (0.3, 0.0)
             for q in ["Ann animals home", "where did Ann travel", "instruments Ann plays", "Ann money home"]]:
    v.settings.set("recall_semantic", w)
    r = v.recall(q, bars=Bars(floor=0, margin=0, top_k=20, budget_tokens=10**9))
    out.append([q, [[key[x.id], float(x.score).hex(), [[n, float(p).hex()] for n, p in x.parts], x.kept, x.bar]
                    for x in r.explain()]])
v.close()
sys.stdout.write(json.dumps(out, sort_keys=True))
"""


def test_channel_on_is_bit_identical_across_thread_counts_and_hash_seeds() -> None:
    outs = []
    for threads, seed in (("1", "0"), ("4", "123"), ("2", "random")):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
               "MKL_NUM_THREADS": threads, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _RUN], capture_output=True, check=True, cwd=ROOT, env=env)
        outs.append(out.stdout)
    first = json.loads(outs[0])
    assert all(len(rows) >= 10 for _, rows in first)  # every query ranked records
    on, off = first[:4], first[4:]
    assert [[r[0] for r in rows] for _, rows in on] != [[r[0] for r in rows] for _, rows in off]  # it is on
    assert outs[0] == outs[1] == outs[2]
