"""The duplicate / contradiction check measured on a labelled set of pairs (issue 30; notebook
``notebooks/memory_conflicts.ipynb``).

The set: pairs written by hand (``datasets/conflicts/hand.tsv``: label, text a, text b) plus pairs mined from LoCoMo
conversations 0-6 (``datasets/locomo/locomo10.json``, CC BY-NC: read at run time, never shipped in the package):

- **duplicate**: a session observation and the dialogue turn it cites as evidence, stored as an agent would store
  it (``"Name: I went to ... yesterday ..."``, a speaker's line): the same fact, in other words;
- **none**: that observation and another observation of the same conversation sharing a content word with it
  (a hard negative: same people, same words, another fact);
- **contradiction**: an observation holding a number and the same observation with that number changed.

Evaluation is end to end: every text of the set is written into one vault (the a side by the user, then the b side
by the agent, as decisions: no key words added), the check runs on write as it does in use (candidates from the
ranking's BM25, then :func:`synapse_nb.dupes.classify`), and a pair is predicted as the relation of a link found
between records holding its two texts (none: no link; a contradiction link wins over a duplicate one). Precision
and recall per relation come with Wilson 95% intervals.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Pair", "Scores", "evaluate", "hand_pairs", "mine_locomo", "predict", "wilson"]

_NUMBER = re.compile(r"\b(\d+)\b")
_WORD = re.compile(r"[a-z]{5,}")


@dataclass(frozen=True)
class Pair:
    label: str  # duplicate, contradiction or none
    a: str
    b: str
    source: str  # "hand" or "locomo-<conversation>"


def hand_pairs(path: str | Path) -> list[Pair]:
    """The hand-written pairs: one ``label<TAB>a<TAB>b`` per line."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            label, a, b = line.split("\t")
            out.append(Pair(label, a, b, "hand"))
    return out


def mine_locomo(path: str | Path, conversations: Iterable[int] = range(7), *, per_conversation: int = 18) -> list[Pair]:
    """Pairs mined from LoCoMo's conversations (see the module docstring), deterministic (first ones in order)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[Pair] = []
    for ci in conversations:
        conv = data[ci]
        turns = {t["dia_id"]: t for k, v in conv["conversation"].items() if k.startswith("session_")
                 and isinstance(v, list) for t in v}
        obs = [(text, ev) for sess in sorted(conv["observation"], key=lambda s: int(s.split("_")[1]))
               for who in sorted(conv["observation"][sess]) for text, ev in conv["observation"][sess][who]]
        src = f"locomo-{ci}"
        dup = 0
        for text, ev in obs:
            ev_id = ev if isinstance(ev, str) else (ev[0] if ev else "")
            turn = turns.get(ev_id.split(";")[0].strip())
            if turn is None or dup >= per_conversation:
                continue
            out.append(Pair("duplicate", text, f"{turn['speaker']}: {turn['text']}", src))
            dup += 1
        neg = 0
        for i, (text, _) in enumerate(obs):
            if neg >= per_conversation:
                break
            words = set(_WORD.findall(text.lower()))
            other = next((o for o, _ in obs[i + 7:] if words & set(_WORD.findall(o.lower()))), None)
            if other is not None:
                out.append(Pair("none", text, other, src))
                neg += 1
        con = 0
        for text, _ in obs:
            m = _NUMBER.search(text)
            if m is None or con >= per_conversation // 3:
                continue
            changed = str(int(m.group(1)) + 3)
            out.append(Pair("contradiction", text, text[:m.start()] + changed + text[m.end():], src))
            con += 1
    return out


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion ``k / n`` ((0, 1) when ``n`` is 0)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Scores:
    """Precision and recall of one relation, with counts and Wilson 95% intervals."""

    relation: str
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    def row(self) -> dict[str, Any]:
        lo_p, hi_p = wilson(self.tp, self.tp + self.fp)
        lo_r, hi_r = wilson(self.tp, self.tp + self.fn)
        return {"relation": self.relation, "tp": self.tp, "fp": self.fp, "fn": self.fn,
                "precision": round(self.precision, 3), "precision 95% CI": f"{lo_p:.3f}-{hi_p:.3f}",
                "recall": round(self.recall, 3), "recall 95% CI": f"{lo_r:.3f}-{hi_r:.3f}"}


def predict(pairs: Sequence[Pair]) -> list[str]:
    """Each pair's predicted relation, end to end through a vault (see the module docstring)."""
    import synapse_nb as syn

    with tempfile.TemporaryDirectory(prefix="synapse-conflicts-") as tmp:
        v = syn.open_vault(tmp)
        agent = v.as_agent()
        v.settings.set("agent_writes_per_hour", 1_000_000)
        with v.transaction():
            a_ids = [v.decide(p.a).id for p in pairs]
        b_ids = []
        for p in pairs:  # one write each, as in use: each is checked against everything written before it
            b_ids.append(agent.decide(p.b).id)
        # by text, not by record: a text of the set can recur (an observation in a duplicate pair and in a negative
        # pair), and which of its identical records BM25 ranks first is decided by random ids (a tie)
        text = {i: p.a for i, p in zip(a_ids, pairs, strict=True)} | {i: p.b for i, p in zip(b_ids, pairs, strict=True)}
        found: dict[frozenset[str], set[str]] = {}
        for x in v.memories.conflicts(status=None, check_all=True):  # the bulk load above: every write checked
            if x.a in text and x.b in text:
                found.setdefault(frozenset((text[x.a], text[x.b])), set()).add(x.relation)
        v.close()
    out = []
    for p in pairs:
        rels = found.get(frozenset((p.a, p.b)), set())
        out.append("contradiction" if "contradiction" in rels else "duplicate" if rels else "none")
    return out


def evaluate(pairs: Sequence[Pair], predicted: Sequence[str] | None = None) -> list[Scores]:
    """Precision and recall of ``duplicate`` and ``contradiction`` over the labelled pairs."""
    got = list(predicted) if predicted is not None else predict(pairs)
    out = []
    for rel in ("duplicate", "contradiction"):
        tp = sum(1 for p, g in zip(pairs, got, strict=True) if g == rel and p.label == rel)
        fp = sum(1 for p, g in zip(pairs, got, strict=True) if g == rel and p.label != rel)
        fn = sum(1 for p, g in zip(pairs, got, strict=True) if g != rel and p.label == rel)
        out.append(Scores(rel, tp, fp, fn))
    return out
