"""LoCoMo retrieval evaluation through the product's own recall (and its index's BM25/vector/hybrid paths).

One vault per conversation (a temporary folder). Each dialogue turn is stored as an **episode** — the
vault's episodic kind: something that happened at a given time — in the conversation's structure: its
``thread`` is the session, its ``seq`` the turn's place in it and its ``actor`` the speaker. The episode's
``created_at`` is the session's date, its ``task_key`` names the conversation and turn (``"conv-26 D1:3"``),
its ``outcome`` is the turn as said (``"[date] Speaker: text [shares caption]"``, :func:`turn_document`) and
its ``refs`` hold the ``dia_id``. The turns before it reach the ranking through the ranking table's
``context`` column, not through the stored text.

Episodes get deterministic ids (``epi_`` + 12 hex digits of SHA-256 of ``"<sample_id>/<dia_id>"``) and are
written with :meth:`Vault.import_jsonl`, so the same conversation always gives the same vault and ties
(equal scores are ordered by id) fall the same way on every run.

Each question is the query. Retrievers (:data:`RETRIEVERS`):

* ``"recall"`` — ``v.recall(question, bars=Bars(floor=0, margin=0, top_k=50, budget_tokens=10**9))``: the
  ranking with every bar opened except the top 50; and, with the default bars, what a user receives
  (``delivered_recall_at_5``, ``nothing_new``) and the answer to the question asked of another
  conversation's vault (``offtopic_nothing_new``: the next conversation of the selection, cyclically);
* ``"bm25"``, ``"vector"``, ``"hybrid"`` — ``v.index.search(question, k=50, mode="fts"|"vector"|"hybrid")``
  (LanceDB full text, the hashing embedder, and both fused by RRF);
* ``"fts5"`` — a bare SQLite FTS5 ``bm25()`` over the records' own text (the ranking table's ``body`` column,
  recall's query words OR-ed, no context, no structure, no gate): the baseline recall's ranking is measured
  against.

``style="chat"`` evaluates the chat-style rewrite of the same conversations (:mod:`synapse_nb.eval.chatstyle`:
split messages, lower case, typos, abbreviations, back-channel turns; questions as written, evidence mapped to
the new message ids).

Turn level ranks the ``dia_id`` s; session level ranks sessions by their first turn in that ranking.
Metrics are :func:`~synapse_nb.eval.metrics.recall_at_k`, :func:`~synapse_nb.eval.metrics.ndcg_at_k` and
:func:`~synapse_nb.eval.metrics.mrr` (over the top 50), averaged over questions that have evidence.

Every ranking and gate parameter was chosen on conversations 0-6 (:data:`TUNE_CONVERSATIONS`); report
7-9 (:data:`HELD_OUT_CONVERSATIONS`) as held out (:data:`SUBSETS`).

Examples
--------
>>> out = run_locomo_eval("datasets/locomo", conversations="heldout")     # doctest: +SKIP
>>> round(out["recall_at_10"], 3), out["n_questions"]                     # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb import Vault, open_vault
from synapse_nb.errors import DatasetError, ValidationError
from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.data import bundled_datasets_dir
from synapse_nb.eval.locomo import CATEGORIES, Conversation, load_locomo, parse_time
from synapse_nb.eval.metrics import mrr, ndcg_at_k, recall_at_k
from synapse_nb.eval.progress import progress_bar
from synapse_nb.recall import Bars

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = [
    "HELD_OUT_CONVERSATIONS",
    "RETRIEVERS",
    "STYLES",
    "SUBSETS",
    "TUNE_CONVERSATIONS",
    "build_locomo_vault",
    "locomo_questions",
    "locomo_table",
    "run_locomo_eval",
    "turn_document",
]

#: Retrievers compared: the product's recall (the gate) and the retrieval index's three search modes.
RETRIEVERS: tuple[str, ...] = ("recall", "bm25", "vector", "hybrid", "fts5")
#: How the conversations' text is given: as LoCoMo wrote it, or rewritten as real chat (eval/chatstyle.py).
STYLES: tuple[str, ...] = ("original", "chat")
#: Conversations every ranking and gate parameter was chosen on: 0-6 of ``locomo10.json`` (0-based).
TUNE_CONVERSATIONS: tuple[str, ...] = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47")
#: The other three (7-9), never looked at while choosing anything: report these as held out.
HELD_OUT_CONVERSATIONS: tuple[str, ...] = ("conv-48", "conv-49", "conv-50")
#: Named selections for ``conversations`` (and ``synapse-nb recall eval --subset``).
SUBSETS: dict[str, tuple[str, ...] | None] = {"dev": TUNE_CONVERSATIONS, "heldout": HELD_OUT_CONVERSATIONS,
                                              "all": None}
_MODES = {"bm25": "fts", "vector": "vector", "hybrid": "hybrid"}
_LEVELS = ("turn", "session")
_DEPTH = 50
_EPOCH = "2000-01-01T00:00:00Z"


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists() and not p.is_absolute():
        root = bundled_datasets_dir()
        if root is not None and (root.parent / p).exists():
            p = root.parent / p
        elif root is not None and (root / p).exists():
            p = root / p
    if p.is_dir():
        p = p / "locomo10.json"
    if not p.is_file():  # review 78: from a wheel, "give datasets/locomo" named a folder only the repository has
        where = (f"the folder {str(path)!r} holds no locomo10.json" if Path(path).is_dir()
                 else f"{str(path)!r} does not exist here")
        raise DatasetError(f"no LoCoMo file: {where}. LoCoMo is not shipped with the package (its licence, CC BY-NC "
                           "4.0, is non-commercial): it is in the source repository's datasets/locomo/ (run this "
                           "from a clone, or set SYNAPSE_DATASETS), or give the path of a locomo10.json you "
                           "downloaded")
    return p


def _select(convs: list[Conversation], conversations: Sequence[str | int] | None, source: Path) -> list[Conversation]:
    if conversations is None:
        return convs
    if isinstance(conversations, str) and conversations.strip() in SUBSETS:
        named = SUBSETS[conversations.strip()]
        if named is None:
            return convs
        conversations = [c for c in named if c in {x.sample_id for x in convs}] or list(named)
    if isinstance(conversations, str):
        conversations = [int(c) if c.strip().isdigit() else c.strip() for c in conversations.split(",") if c.strip()]
    by_id = {c.sample_id: c for c in convs}
    out: list[Conversation] = []
    for item in conversations:
        if isinstance(item, int) and not isinstance(item, bool):
            if not 0 <= item < len(convs):
                raise ValidationError(f"conversation index {item} is out of range; {source} has {len(convs)} (0-based)")
            conv = convs[item]
        elif isinstance(item, str) and item in by_id:
            conv = by_id[item]
        else:
            known = ", ".join(c.sample_id for c in convs)
            raise ValidationError(f"unknown conversation {item!r}; accepted: {known}, 0-based indices, or "
                                  f"{', '.join(SUBSETS)}")
        if conv not in out:
            out.append(conv)
    if not out:
        raise ValidationError("conversations is empty; give sample ids such as 'conv-26', or None for all")
    return out


def turn_document(conv: Conversation, i: int, *, date: bool = True, caption: bool = True, context: int = 0) -> str:
    """The text stored for turn ``i`` of ``conv``: the turn, then up to ``context`` turns it replies to.

    ``"[<date>] Speaker: text [shares caption] | replying to: Other: text"``. Recall v1 needed the turn it
    replies to inside the text (``"Yes, last Saturday!"`` is about the question before it); recall v2 reads
    the preceding turns from the thread (the ranking table's ``context`` column, at a lower weight), and
    storing them at full weight hurt its ranking (MRR), so the default is now ``context=0``.

    Examples
    --------
    >>> from synapse_nb.eval.locomo import Conversation, Turn
    >>> c = Conversation("c", "A", "B", (Turn("D1:1", "A", "Been to the lake?", 1, "8 May, 2023"),
    ...                                  Turn("D1:2", "B", "Yes, on Sunday.", 1, "8 May, 2023")), ())
    >>> turn_document(c, 1, context=1)
    '[8 May, 2023] B: Yes, on Sunday. | replying to: A: Been to the lake?'
    >>> turn_document(c, 1)
    '[8 May, 2023] B: Yes, on Sunday.'
    """
    if not isinstance(context, int) or isinstance(context, bool) or context < 0:
        raise ValidationError(f"context must be an int >= 0 (preceding turns to include), got {context!r}")
    turn = conv.turns[i]
    out = turn.document(date=date, caption=caption)
    prev = [conv.turns[j] for j in range(max(0, i - context), i) if conv.turns[j].session == turn.session]
    if prev:
        out += " | replying to: " + " / ".join(p.document(date=False, caption=caption) for p in reversed(prev))
    return out


def _iso(session_date: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08T13:56:00Z"`` (a fixed epoch when unparsable)."""
    t = parse_time(session_date)
    return _EPOCH if t is None else t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _episode_id(sample_id: str, dia_id: str) -> str:
    return "epi_" + hashlib.sha256(f"{sample_id}/{dia_id}".encode()).hexdigest()[:12]


def build_locomo_vault(
    conv: Conversation,
    folder: str | os.PathLike[str],
    *,
    date: bool = True,
    caption: bool = True,
    context: int = 0,
) -> tuple[Vault, dict[str, str]]:
    """Create a vault in ``folder`` holding every turn of ``conv`` as an episode.

    Parameters
    ----------
    conv
        A LoCoMo conversation (:func:`~synapse_nb.eval.locomo.load_locomo`).
    folder
        An empty folder (created if missing); the vault is ``<folder>/.synapse``.
    date, caption, context
        What each episode's text holds (see :func:`turn_document`).

    Returns
    -------
    (Vault, dict)
        The open vault (close it when done) and ``episode id -> dia_id``.

    Examples
    --------
    >>> v, ids = build_locomo_vault(load_locomo("datasets/locomo")[0], tmp)   # doctest: +SKIP
    >>> v.episodes.history(limit=1)[0].refs                                   # doctest: +SKIP
    ('D19:18',)
    """
    Path(folder).mkdir(parents=True, exist_ok=True)  # an evaluation scratch folder, made on purpose
    vault = open_vault(Path(folder) / ".synapse")
    lines = vault.export_jsonl().splitlines()[:1]  # the export header this vault writes (and so reads)
    ids: dict[str, str] = {}
    seq: dict[int, int] = {}
    for i, turn in enumerate(conv.turns):
        eid = _episode_id(conv.sample_id, turn.dia_id)
        ids[eid] = turn.dia_id
        ts = _iso(turn.session_date)
        n = seq[turn.session] = seq.get(turn.session, -1) + 1
        lines.append(json.dumps({
            "kind": "episode", "id": eid, "mind": vault.mind, "task_key": f"{conv.sample_id} {turn.dia_id}",
            "status": "unknown", "outcome": turn_document(conv, i, date=date, caption=caption, context=context),
            "refs": [turn.dia_id], "duration_s": None, "source": "user", "created_at": ts, "updated_at": ts,
            "thread": f"{conv.sample_id} session {turn.session}", "seq": n, "actor": turn.speaker,
        }, sort_keys=True))
    vault.import_jsonl(lines, trust=True)  # the benchmark's own conversation, spoken by its users
    return vault, ids


_OPEN = Bars(floor=0, margin=0, top_k=_DEPTH, budget_tokens=10**9)


def _rank(vault: Vault, question: str, retriever: str, ids: dict[str, str]) -> list[str]:
    if retriever == "recall":
        found = [item.id for item in vault.recall(question, bars=_OPEN).items]
    elif retriever == "fts5":  # the store's own FTS5 bm25() over the records' text alone
        from synapse_nb.recall.rank import rank_words

        found = [h.id for h in vault._ctx.store.recall.bm25(vault.mind, rank_words(question), depth=_DEPTH,
                                                             w_body=1.0, w_context=0.0)]
    else:
        found = [h.id for h in vault.index.search(question, k=_DEPTH, kinds=["episode"], mode=_MODES[retriever])]
    return [ids[i] for i in found if i in ids]


def _session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def _scores(ranked: list[str], gold: Sequence[str], k_values: Sequence[int]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k in k_values:
        out[f"recall_at_{k}"] = recall_at_k(ranked, gold, k)
    for k in k_values:
        out[f"ndcg_at_{k}"] = ndcg_at_k(ranked, gold, k)
    out["mrr"] = mrr(ranked, gold)
    return out


def _check_args(retrievers: Sequence[str], k_values: Sequence[int]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if isinstance(retrievers, str):
        retrievers = [retrievers]
    bad = [r for r in retrievers if r not in RETRIEVERS]
    if bad or not retrievers:
        raise ValidationError(f"unknown retriever(s) {bad or '(none)'}; accepted: {', '.join(RETRIEVERS)}")
    ks = tuple(sorted(set(k_values)))
    if not ks or any(not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= _DEPTH for k in ks):
        raise ValidationError(f"k_values must be ints in [1, {_DEPTH}], got {tuple(k_values)!r}")
    return tuple(dict.fromkeys(retrievers)), ks


def locomo_questions(
    path: str | os.PathLike[str] = "datasets/locomo",
    conversations: Sequence[str | int] | str | None = None,
    *,
    retrievers: Sequence[str] = ("recall",),
    k_values: Sequence[int] = (5, 10),
    date: bool = True,
    caption: bool = True,
    context: int = 0,
    progress: bool | None = None,
    semantic: float = 0.0,
    embedder: str | None = None,
    style: str = "original",
    chat: ChatStyle | None = None,
) -> pl.DataFrame:
    """Per-question scores for each retriever at turn and session level, as a polars DataFrame.

    A progress bar (one step per conversation) shows on a terminal (``progress=None``) or when ``progress=True``.

    Columns: ``sample_id``, ``question`` (index in the conversation), ``category`` (1-5),
    ``category_name``, ``retriever``, ``level`` (``"turn"``/``"session"``), ``n_evidence``, then
    ``recall_at_<k>`` and ``ndcg_at_<k>`` for each ``k`` in ``k_values``, and ``mrr``. Questions without
    evidence are left out. Rows are ordered by conversation (file order), question, retriever, level.
    ``style="chat"`` rewrites the selected conversations with :func:`~synapse_nb.eval.chatstyle.chat_style`
    (``chat``: its seed and strengths, default :class:`~synapse_nb.eval.chatstyle.ChatStyle`).

    Examples
    --------
    >>> df = locomo_questions(conversations=["conv-30"], retrievers=["recall", "bm25"])   # doctest: +SKIP
    >>> df.group_by("retriever", "level").agg(pl.col("recall_at_10").mean())            # doctest: +SKIP
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    retrievers, ks = _check_args(retrievers, k_values)
    if style not in STYLES:
        raise ValidationError(f"unknown style {style!r}; accepted: {', '.join(STYLES)}")
    if semantic:  # its model loaded first: a recall would answer from its words alone without it (review 68), and
        from synapse_nb.store.embedders import load_embedder  # an evaluation must not measure that unsaid

        load_embedder(embedder)
    source = _resolve(path)
    convs = _select(load_locomo(source), conversations, source)
    if style == "chat":
        convs = chat_style_all(convs, chat or ChatStyle())
    rows: list[dict[str, Any]] = []
    bar = progress_bar(len(convs), "recall eval", enabled=progress, unit="conversation")
    with tempfile.TemporaryDirectory(prefix="synapse-locomo-") as tmp:
        vaults: list[tuple[Vault, dict[str, str]]] = []
        try:
            for n, conv in enumerate(convs):
                folder = Path(tmp) / str(n)
                vaults.append(build_locomo_vault(conv, folder, date=date, caption=caption, context=context))
                if embedder is not None:  # the semantic channel's model (vault setting recall_embedder)
                    vaults[-1][0].settings.set("recall_embedder", embedder)
                if semantic:  # the optional dense channel's weight (vault setting recall_semantic)
                    vaults[-1][0].settings.set("recall_semantic", semantic)
            for n, conv in enumerate(convs):
                vault, ids = vaults[n]
                # the off-topic stand-in: the next conversation of the selection (none when it is alone)
                other = vaults[(n + 1) % len(convs)][0] if len(convs) > 1 else None
                if any(r != "recall" for r in retrievers):
                    vault.index.sync()  # built from the store (a rebuild is a person's maintenance)
                for qi, q in enumerate(conv.questions):
                    if not q.evidence:
                        continue
                    gold_sessions = list(dict.fromkeys(_session_of(e) for e in q.evidence))
                    for retriever in retrievers:
                        ranked = _rank(vault, q.question, retriever, ids)
                        extra: dict[str, float | None] = dict.fromkeys(_GATE_COLUMNS)
                        if retriever == "recall":
                            given = vault.recall(q.question)  # the default bars: what a user receives
                            got = [ids[i.id] for i in given.items if i.id in ids]
                            extra["delivered_recall_at_5"] = recall_at_k(got, list(q.evidence), 5)
                            extra["nothing_new"] = float(given.nothing_new)
                            if other is not None:
                                extra["offtopic_nothing_new"] = float(other.recall(q.question).nothing_new)
                        sessions = list(dict.fromkeys(_session_of(d) for d in ranked))
                        for level, rk, gold in (("turn", ranked, list(q.evidence)),
                                                ("session", sessions, gold_sessions)):
                            rows.append({"sample_id": conv.sample_id, "question": qi, "category": q.category,
                                         "category_name": CATEGORIES[q.category], "retriever": retriever,
                                         "level": level, "n_evidence": len(gold), **_scores(rk, gold, ks),
                                         **(extra if level == "turn" else dict.fromkeys(_GATE_COLUMNS))})
                bar.update(1)
        finally:
            for vault, _ in vaults:
                vault.index.raw.close()  # drop LanceDB's handles before the folder is deleted
                vault.close()
            bar.close()
    schema: dict[str, Any] = {"sample_id": pl.String, "question": pl.Int64, "category": pl.Int64,
                              "category_name": pl.String, "retriever": pl.String, "level": pl.String,
                              "n_evidence": pl.Int64}
    schema |= {f"recall_at_{k}": pl.Float64 for k in ks} | {f"ndcg_at_{k}": pl.Float64 for k in ks}
    schema["mrr"] = pl.Float64
    schema |= dict.fromkeys(_GATE_COLUMNS, pl.Float64)
    return pl.DataFrame(rows, schema=schema)


#: Per-question columns of the recall retriever at turn level (null elsewhere): what a user receives with the
#: default bars, whether it was "nothing new", and whether the question asked of another conversation was.
_GATE_COLUMNS = ("delivered_recall_at_5", "nothing_new", "offtopic_nothing_new")


def _metric_names(frame: pl.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.startswith(("recall_at_", "ndcg_at_")) or c == "mrr"]


def locomo_table(frame: pl.DataFrame, *, by_category: bool = True) -> pl.DataFrame:
    """Mean scores of :func:`locomo_questions` rows per retriever, level (and category, plus ``"all"``).

    Returns
    -------
    polars.DataFrame
        ``retriever``, ``level``, ``category`` (a name or ``"all"``), ``n_questions`` and the metric
        columns, ordered by retriever (as :data:`RETRIEVERS`), level, then category id with ``"all"`` first.
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    metrics = _metric_names(frame)
    aggs = [pl.len().alias("n_questions"), *[pl.col(m).mean().alias(m) for m in metrics]]
    overall = frame.group_by("retriever", "level").agg(aggs).with_columns(
        pl.lit("all").alias("category"), pl.lit(0).cast(pl.Int64).alias("_cat"))
    parts = [overall]
    if by_category:
        per = frame.group_by("retriever", "level", "category").agg(
            [pl.col("category_name").first().alias("_name"), *aggs])
        per = per.with_columns(pl.col("category").alias("_cat"), pl.col("_name").alias("category")).drop("_name")
        parts.append(per)
    cols = ["retriever", "level", "category", "_cat", "n_questions", *metrics]
    out = pl.concat([p.select(cols) for p in parts])
    order = {r: i for i, r in enumerate(RETRIEVERS)}
    out = out.with_columns(
        pl.col("retriever").replace_strict(order, default=len(order)).alias("_r"),
        pl.col("level").replace_strict({lv: i for i, lv in enumerate(_LEVELS)}, default=9).alias("_l"))
    return out.sort("_r", "_l", "_cat").drop("_r", "_l", "_cat")


def _mean(column: pl.Series) -> float:
    """The mean of a numeric column (0.0 when it has no value): polars types ``mean()`` as any scalar."""
    value = column.mean()
    return float(value) if isinstance(value, int | float) else 0.0


def _summary(frame: pl.DataFrame) -> dict[str, Any]:
    metrics = _metric_names(frame)
    out: dict[str, Any] = {m: _mean(frame[m]) if frame.height else 0.0 for m in metrics}
    for col, key in zip(_GATE_COLUMNS, ("delivered_recall_at_5", "nothing_new_rate", "offtopic_nothing_new_rate"),
                        strict=True):
        if col in frame.columns and frame[col].drop_nulls().len():
            out[key] = _mean(frame[col].drop_nulls())
    out["n_questions"] = int(frame.height)
    by: dict[str, Any] = {}
    for cat in sorted(frame["category"].unique().to_list()):
        sub = frame.filter(frame["category"] == cat)
        by[CATEGORIES[cat]] = {m: _mean(sub[m]) for m in metrics} | {"n_questions": int(sub.height)}
    out["by_category"] = by
    return out


def run_locomo_eval(
    path: str | os.PathLike[str] = "datasets/locomo",
    conversations: Sequence[str | int] | str | None = None,
    k_values: Sequence[int] = (5, 10),
    *,
    retriever: str = "recall",
    date: bool = True,
    caption: bool = True,
    context: int = 0,
    semantic: float = 0.0,
    embedder: str | None = None,
    style: str = "original",
    chat: ChatStyle | None = None,
) -> dict[str, Any]:
    """LoCoMo retrieval through the vault's recall; what ``synapse-nb recall eval datasets/locomo`` prints.

    Parameters
    ----------
    path
        ``datasets/locomo`` (or the path of ``locomo10.json``).
    conversations
        Sample ids (``["conv-26"]``, or ``"conv-26,conv-30"``), 0-based indices (``[7, 8, 9]`` or ``"7,8,9"``),
        a name of :data:`SUBSETS` (``"dev"``: 0-6, ``"heldout"``: 7-9, ``"all"``), or ``None`` for all ten.
        :data:`TUNE_CONVERSATIONS` were used to choose the settings, :data:`HELD_OUT_CONVERSATIONS` were not.
    k_values
        Cut-offs for recall and NDCG (each in 1..50).
    retriever
        One of :data:`RETRIEVERS` (default ``"recall"``: the gate).
    date, caption, context
        What each stored turn holds (see :func:`turn_document`).
    semantic
        Weight of recall's optional semantic channel (setting ``recall_semantic``; 0: off, the default).
    embedder
        The channel's model (setting ``recall_embedder``; None: the default, ``wordllama``).
    style, chat
        ``"original"`` (LoCoMo's text) or ``"chat"`` (rewritten as real chat by
        :func:`~synapse_nb.eval.chatstyle.chat_style` with ``chat``, default :class:`ChatStyle`).

    Returns
    -------
    dict
        Turn level: ``recall_at_<k>``, ``ndcg_at_<k>`` for each k, ``mrr``, ``n_questions``,
        ``delivered_recall_at_5`` (default bars: what a user receives), ``nothing_new_rate`` (questions with
        evidence answered "nothing new", default bars), ``offtopic_nothing_new_rate`` (each question asked of
        the next selected conversation's vault; absent with one conversation), ``by_category``
        (category name -> the same figures and its ``n_questions``); ``session``: the same at session level;
        ``retriever``, ``conversations`` and ``config``. Figures are fractions in [0, 1].

    Examples
    --------
    >>> out = run_locomo_eval("datasets/locomo", conversations="conv-26")   # doctest: +SKIP
    >>> sorted(out)[:4]                                                      # doctest: +SKIP
    ['by_category', 'config', 'conversations', 'mrr']
    """
    frame = locomo_questions(path, conversations, retrievers=[retriever], k_values=k_values, date=date,
                             caption=caption, context=context, semantic=semantic, embedder=embedder, style=style,
                             chat=chat)
    turn = frame.filter(frame["level"] == "turn")
    out = _summary(turn)
    out["session"] = _summary(frame.filter(frame["level"] == "session"))
    out["retriever"] = retriever
    out["conversations"] = list(dict.fromkeys(turn["sample_id"].to_list()))
    out["config"] = {"path": str(path), "k_values": sorted(set(k_values)), "date": date, "caption": caption,
                     "context": context, "depth": _DEPTH, "storage": "episodes", "semantic": semantic,
                     "embedder": embedder, "style": style}
    if style == "chat":
        out["config"]["chat"] = asdict(chat or ChatStyle())
    return out
