"""The recall scorer's fast path against a straightforward reference, to the last bit.

``CorpusScorer`` analyses a document once (non-stop words, looked up per query feature) and keeps each word's
char similarity to a query term; :func:`reference` below re-derives every score from the documented formula
(``docs/gate.md``) with the public analyzers of :mod:`synapse_nb.text`, one document and one word at a time,
accumulating in the same fixed order. Scores must be the same bytes and the matched terms the same tuples,
whatever the batch, the order, the cache state or the configuration. The gate's "nothing new" decision, recall's
explanation rows and the routing figures all read these numbers.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from synapse_nb.gate import CorpusScorer, GateConfig, idf
from synapse_nb.text import build_analyzers, make_tokenizer, normalise, stop_word_list


def reference(query: str, docs: list[str], df: dict[str, int], n_docs: int,
              cfg: GateConfig = GateConfig()) -> tuple[np.ndarray, list[tuple[str, ...]]]:  # noqa: B008
    """Scores and matched terms, straight from the definition (slow, obviously right)."""
    word_an, char_an = build_analyzers(word_ngram_range=cfg.word_ngram_range, char_ngram_range=cfg.char_ngram_range,
                                       stop_words=cfg.stop_words, max_token_chars=cfg.max_token_chars)
    tokenize = make_tokenizer(cfg.max_token_chars)
    stops = frozenset(stop_word_list(cfg.stop_words))
    nq = normalise(query, cfg.max_query_chars)
    terms = sorted({t for t in tokenize(nq) if t not in stops})
    n = len(docs)
    if not docs or not terms:
        return np.zeros(n), [()] * n
    tidf = {t: idf(df.get(t, 0), n_docs) for t in terms}
    wfeats: dict[str, float] = {}
    for f in word_an(nq):
        parts = f.split(" ")
        wfeats[f] = tidf[f] if len(parts) == 1 else cfg.bigram_weight * sum(tidf[p] for p in parts) / len(parts)
    wnames = sorted(wfeats)
    ww = np.array([wfeats[f] for f in wnames])
    hits = np.zeros((n, len(wnames)), dtype=bool)
    cov = np.zeros((n, len(terms)))
    bar = max(cfg.min_char_sim, 1e-12)
    for i, d in enumerate(docs):
        nd = normalise(d, cfg.max_doc_chars)
        feats = set(word_an(nd))
        words = {t for t in tokenize(nd) if t not in stops}
        for j, f in enumerate(wnames):
            hits[i, j] = f in feats
        for j, t in enumerate(terms):
            gt = set(char_an(t))
            best = 0.0
            for w in words:
                gw = set(char_an(w))
                sim = 2.0 * len(gt & gw) / (len(gt) + len(gw))
                if sim >= bar:
                    best = max(best, sim)
            cov[i, j] = best
    word = np.zeros(n)
    for j in range(len(wnames)):
        word += hits[:, j] * ww[j]
    word /= float(ww.sum())
    tw = np.array([tidf[t] for t in terms])
    char = np.zeros(n)
    for j in range(len(terms)):
        char += (cov[:, j] ** cfg.char_power) * tw[j]
    char /= float(tw.sum())
    scores = np.clip((1.0 - cfg.char_weight) * word + cfg.char_weight * char, 0.0, 1.0)
    matched = []
    for i in range(n):
        if scores[i] <= 0.0:
            matched.append(())
            continue
        out = [wnames[j] for j in sorted(range(len(wnames)), key=lambda j: (-ww[j], wnames[j])) if hits[i, j]]
        for j in sorted(range(len(terms)), key=lambda j: (-tw[j], terms[j])):
            exact = terms[j] in wfeats and hits[i, wnames.index(terms[j])]
            if cov[i, j] >= cfg.fuzzy_explain and not exact:
                out.append(terms[j] + "~")
        matched.append(tuple(out))
    return scores, matched


_WORDS = ("deploy deployment deploying migration migrations migrate database databases run runner release "
          "alembic upgrade head kafka kafka1846 cache cache12 redis auth jwt token tokens café cafe naïve "
          "straße ﬁle Ünïcödé 東京 東京都 данные данных x y z a an ab abc abcd q1 q12 2026 v1 v2").split()
_STOPS = "the and of to is it we what how when which".split()


def _texts(rng: random.Random, k: int) -> list[str]:
    out = ["", "the and of it is", "!!! ... ---", "deploy " * 300, "migrations migrations migrations run run",
           "Run_DB-migrations, then deploy; re-run DB migrations!", "x" * 70 + " deploy " + "y" * 64,
           " ".join(_WORDS), ("database migrations " * 2000) + "tail words", "straße STRASSE strasse Straße",
           "deploy\x00the\u200bdatabase\ud800migrations", "a b c ab abc abcd abcde"]
    while len(out) < k:
        n = rng.choice((1, 3, 8, 20, 60))
        out.append(" ".join(rng.choice(_WORDS + _STOPS) + rng.choice(("", "", "", ",", ".", "?", "s"))
                            for _ in range(n)))
    return out


_QUERIES = ["how do we run the database migrations?", "deploy", "kafka1846 cache", "migration deploying",
            "café naïve straße", "東京 данные", "run run migrations migrations", "x y z a", "the of and",
            "Ünïcödé ﬁle v1 v2 2026", "deploy the " + "database " * 50, "abc abcd q1 alembic upgrade head",
            "redis auth jwt tokens release runner"]
_CONFIGS = [GateConfig(), GateConfig(word_ngram_range=(1, 3)), GateConfig(word_ngram_range=(2, 2)),
            GateConfig(char_ngram_range=(2, 4), min_char_sim=0.0), GateConfig(char_ngram_range=(4, 6)),
            GateConfig(char_power=3.0, char_weight=0.6, bigram_weight=1.5, fuzzy_explain=0.3),
            GateConfig(stop_words=None, max_token_chars=5), GateConfig(stop_words=("deploy", "run"),
                                                                       max_doc_chars=40, max_query_chars=30)]


def _same(batch, docs: list[str], want: tuple[np.ndarray, list[tuple[str, ...]]]) -> None:
    assert batch.scores.dtype == want[0].dtype and batch.scores.shape == want[0].shape
    assert batch.scores.tobytes() == want[0].tobytes(), (batch.scores - want[0]).tolist()
    assert [batch.matched(i) for i in range(len(docs))] == want[1]


# word_ngram_range=(2, 2) and a one-word query: the query has no word feature and the word channel divides 0 by 0,
# so both give NaN scores (long-standing behaviour, kept bit for bit here; the default range starts at 1)
@pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning")
@pytest.mark.parametrize("cfg", _CONFIGS, ids=range(len(_CONFIGS)))
def test_scores_and_matched_terms_equal_the_reference_bit_for_bit(cfg: GateConfig) -> None:
    rng = random.Random(13)
    texts = _texts(rng, 60)
    df = {w: rng.randrange(0, 40) for w in " ".join(_WORDS).lower().split()} | {"deploy": 3, "database": 50}
    keyed = CorpusScorer(cfg)
    small = CorpusScorer(cfg, cache_size=3)  # evicts all the time
    for q in _QUERIES:
        docs = rng.sample(texts, 20) + texts[:12]  # repeats: cached and freshly analysed documents together
        want = reference(q, docs, df, 40, cfg)
        keys = [f"k{texts.index(d)}" for d in docs]
        _same(keyed.score_batch(q, docs, doc_freq=df, n_docs=40, doc_keys=keys), docs, want)
        _same(keyed.score_batch(q, docs, doc_freq=df, n_docs=40, doc_keys=keys), docs, want)  # all cached
        _same(small.score_batch(q, docs, doc_freq=df, n_docs=40, doc_keys=keys), docs, want)
        _same(CorpusScorer(cfg).score_batch(q, docs, doc_freq=df, n_docs=40), docs, want)  # nothing cached
        # one recurring list across every query and config: its columns are kept and reused
        for _ in range(2):
            _same(keyed.score_batch(q, texts[:25], doc_freq=df, n_docs=40, doc_keys=[f"k{i}" for i in range(25)]),
                  texts[:25], reference(q, texts[:25], df, 40, cfg))
        rev = docs[::-1]
        rwant = reference(q, rev, df, 40, cfg)
        _same(keyed.score_batch(q, rev, doc_freq=df, n_docs=40, doc_keys=keys[::-1]), rev, rwant)
        if want[0].any():
            assert rwant[0][::-1].tobytes() == want[0].tobytes()  # order never matters


def test_dropped_word_caches_change_nothing() -> None:
    s = CorpusScorer()
    s._max_grams, s._max_sims, s._max_pool = 5, 20, 10  # the word-level caches are dropped over and over
    rng = random.Random(7)
    texts = _texts(rng, 40)
    for q in _QUERIES:
        docs = rng.sample(texts, 15)
        _same(s.score_batch(q, docs, doc_freq={}, n_docs=5, doc_keys=[str(texts.index(d)) for d in docs]),
              docs, reference(q, docs, {}, 5))
