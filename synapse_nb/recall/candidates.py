"""Recall candidates: the per-mind structure arrays (cached per data version), candidate rows, exact matches.

The ranking itself is BM25 (:mod:`synapse_nb.recall.bm25`, from the store's postings) plus the structure step
(:mod:`synapse_nb.recall.rank`); this module holds what that step reads:

- :meth:`Candidates.threads`: the mind's :class:`~synapse_nb.recall.threads.ThreadIndex`, read once and cached
  until the vault changes (keyed by the store's data version);
- :meth:`Candidates.fetch`: candidate rows (gate text, stamps, expiry) of ranked ids: the texts the file bonus and
  the semantic channel read, and on a remote store the stamps the walk's record cache is checked with;
- :meth:`Candidates.matches`: records whose tag, key or note name the query names (rank bonuses).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb.recall.rank import RANK_STOP_WORDS
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.recall.types import KIND_ORDER
from synapse_nb.store.records import Candidate
from synapse_nb.text import query_words

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from synapse_nb.context import Context
    from synapse_nb.store.records import RankState

__all__ = ["FULL_TAGS", "Candidates", "ExactMatches", "WalkRow", "match_words", "query_words", "stop_name",
           "tag_weights"]

#: The kinds with ranking documents (lessons head every recall; they are never ranked).
_RANKED = frozenset(KIND_ORDER)

#: Most candidate rows kept between recalls (emptied when full, and whenever the vault changes).
MAX_CACHED_ROWS = 50_000
#: Most tags whose records are kept between recalls.
MAX_CACHED_TAGS = 10_000
#: Most words (document frequencies) and keys (their matches) kept between recalls, each.
MAX_CACHED_TERMS = 50_000
#: A record with at most this many tags earns the full tag bonus per matched tag; one with more earns this share
#: of it (a record stuffed with tags names nothing in particular).
FULL_TAGS = 3
#: Most records a data version may have changed for the structure arrays to be patched rather than read afresh.
MAX_PATCH = 1_000
#: Arrays patched this many generations past the file they came from are written back (a process that patches a
#: few records after each write does not rewrite the file every time; the next process patches the rest).
SAVE_AFTER = 64


def stop_name(name: str) -> bool:
    """Whether a tag, key or note name is made of ranking stop words only (:data:`RANK_STOP_WORDS`): such a name
    identifies nothing, so it never earns an exact-match bonus (a tag ``the`` would make a record "relevant" to
    every question that says "the").

    >>> stop_name("the"), stop_name("how_do"), stop_name("deploy"), stop_name("the_deploy")
    (True, True, False, False)
    """
    return all(part in RANK_STOP_WORDS for part in name.split("_") if part)


def match_words(words: Sequence[str]) -> list[str]:
    """The query words that may name a tag: :func:`query_words` less the names :func:`stop_name` rejects.

    >>> match_words(["deploy", "how", "the", "we"])
    ['deploy']
    """
    return [w for w in words if not stop_name(w)]


class WalkRow(NamedTuple):
    """A ranked record as the walk sees it before reading it: kind, id, and its expiry (memories only)."""

    kind: str
    id: str
    expires_at: str | None = None


def tag_weights(tag_bonus: float, n_tags: np.ndarray) -> np.ndarray:
    """The bonus one tag match earns on records carrying ``n_tags`` tags each (see :meth:`ExactMatches.bonus`).

    >>> import numpy as np
    >>> tag_weights(0.25, np.array([1, 3, 6, 10])).tolist()
    [0.25, 0.25, 0.125, 0.075]
    """
    import numpy as np

    out: np.ndarray = tag_bonus * np.minimum(1.0, FULL_TAGS / np.maximum(n_tags, 1))
    return out


class ExactMatches(Mapping[str, list[str]]):
    """id -> exact matches of one query: "#tag" (tags by name), "key:name" (names in order), then "file:path" (the
    files :meth:`add_files` gave). A record's list is built when read: the walk reads a few dozen of the
    hundreds of records a common tag may name; :meth:`bonus` weighs them all over arrays.
    """

    def __init__(self, tags: list[tuple[str, frozenset[str], np.ndarray, np.ndarray]],
                 keys: Sequence[tuple[str, str]], pos: Mapping[str, int]) -> None:
        self._tags = tags  # (tag, its records, their positions ascending, their numbers of tags), by tag
        self._keys: dict[str, list[str]] = {}
        for rid, name in keys:  # by rid, then name
            self._keys.setdefault(rid, []).append(name)
        self._pos = pos
        self._files: dict[str, list[str]] = {}

    def add_files(self, rid: str, files: Sequence[str]) -> None:
        self._files.setdefault(rid, []).extend(f"file:{f}" for f in files)

    def _labels(self, rid: str) -> list[str]:
        out = [f"#{t}" for t, rids, _, _ in self._tags if rid in rids]
        if rid in self._keys:
            out += [f"key:{name}" for name in self._keys[rid]]
        if rid in self._files:
            out += self._files[rid]
        return out

    def __getitem__(self, rid: str) -> list[str]:
        out = self._labels(rid)
        if not out:
            raise KeyError(rid)
        return out

    def get(self, rid: str, default: Any = None) -> Any:  # the walk asks for every record: no KeyError raised
        return self._labels(rid) or default

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and bool(self._labels(rid))

    def _ids(self) -> set[str]:
        return set().union(*(rids for _, rids, _, _ in self._tags), self._keys, self._files)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._ids()))

    def __len__(self) -> int:
        return len(self._ids())

    def bonus(self, tag_bonus: float, key_bonus: float,
              max_bonus: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(positions ascending, bonus) of the records with a tag or key match: each label's bonus summed in
        label order, as ``sum()`` over the labels adds them, then at most ``max_bonus`` (None: no cap; files are
        not included: the caller adds them and caps again).

        A tag match earns ``tag_bonus`` on a record with at most :data:`FULL_TAGS` tags, and
        ``tag_bonus * FULL_TAGS / n`` on one with ``n`` tags: each of many tags says less about its record."""
        import numpy as np

        keys = [self._pos[rid] for rid, names in self._keys.items() if rid in self._pos for _ in names]
        at = [p for _, _, p, _ in self._tags] + [np.array(keys, np.int64)]
        weights = [tag_weights(float(tag_bonus), n) for _, _, _, n in self._tags] + [np.full(len(keys),
                                                                                           float(key_bonus))]
        pos, val = np.concatenate(at), np.concatenate(weights)
        if len(pos) == 0:
            return pos, val
        o = np.argsort(pos, kind="stable")  # a record's labels stay in label order: tags by name, then keys
        pos, val = pos[o], val[o]
        first = np.flatnonzero(np.concatenate(([True], pos[1:] != pos[:-1])))
        out = val[first]
        ends = np.append(first[1:], len(pos))
        for i in np.flatnonzero(ends - first > 1).tolist():  # several labels: 0 + a + b ..., as sum() adds them
            out[i] = sum(val[first[i]:ends[i]].tolist())
        if max_bonus is not None:
            out = np.minimum(out, float(max_bonus))  # a bag of matching tags earns what one match does
        return pos[first], out


class Candidates:
    """Structure arrays, candidate rows and exact matches for one context (caches live with the vault handle)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._lock = threading.RLock()
        self._count_key: object = None
        self._count: dict[bool, int] = {}
        self._threads_key: object = None
        self._threads = ThreadIndex([])
        self._saved_gen: int | None = None  # the generation of the file these arrays were read from or written to
        self._owed: tuple[Path, RankState, str, ThreadIndex] | None = None  # a file to write after the snapshot
        self._rows_key: object = None
        self._rows: dict[str, Candidate] = {}
        self._tags_key: object = None
        self._tags: dict[str, tuple[int, tuple[tuple[str, ...], tuple[int, ...]] | None]] = {}
        self._df_key: object = None
        self._df: dict[tuple[bool, str], int] = {}
        self._keys_key: object = None
        self._keys: dict[str, tuple[tuple[str, str], ...]] = {}
        self._tagpos_key: object = None
        self._tagpos: dict[str, tuple[tuple[str, ...], frozenset[str], np.ndarray, np.ndarray]] = {}

    # The store is never called while self._lock is held: a recall holds the store's lock for its snapshot and
    # then takes this one, so the other order would deadlock two threads sharing a vault handle.
    # ``version`` is the store's data_version(), read once per recall by the caller (on a team vault it is a
    # server round trip): every cache below is keyed by it.
    def count(self, version: object, *, agents: bool = False) -> int:
        """Gate candidates in the vault (all minds; ``agents``: the agents' unverified ones), cached until the vault
        changes."""
        store = self._ctx.store
        with self._lock:
            if self._count_key == version and agents in self._count:
                return self._count[agents]
        n = store.recall.count(agents=agents)
        with self._lock:
            if self._count_key != version:
                self._count, self._count_key = {}, version
            self._count[agents] = n
        return n

    def doc_freq(self, terms: list[str], version: object, *, agents: bool = False) -> dict[str, int]:
        """The store's ``doc_freq`` of these terms (absent: none; ``agents``: in the agents' unverified
        candidates), each kept until the vault changes."""
        store = self._ctx.store
        with self._lock:
            if self._df_key != version:
                self._df_key, self._df = version, {}
            cache = self._df
            missing = [t for t in terms if (agents, t) not in cache]
        got = store.recall.doc_freq(missing, agents=agents) if missing else {}
        with self._lock:
            if self._df is cache:
                if len(cache) + len(missing) > MAX_CACHED_TERMS:
                    cache.clear()
                cache.update(((agents, t), got.get(t, 0)) for t in missing)
        out = {t: got[t] if t in got else cache.get((agents, t), 0) for t in terms}
        return {t: n for t, n in out.items() if n}  # as the store answers: absent means none

    def threads(self, version: object) -> ThreadIndex:
        """The mind's ranking documents as structure arrays: per state of the ranking table on a local vault (its
        durable :class:`~synapse_nb.store.records.RankState`, the file kept beside the database), else per data
        version (:meth:`_threads_by_version`)."""
        state = self._ctx.store.recall.rank_state()
        if state is None:
            return self._threads_by_version(version)
        return self._threads_by_state(state)

    def _threads_by_state(self, state: RankState) -> ThreadIndex:
        """The arrays at ``state``: kept in memory, else from the file any process left
        (:mod:`synapse_nb.recall.rankfile`, used only when its SHA-256 is the one the database keeps for it), patched
        with the ids the log names since either was built (another process's writes too); read afresh only when
        neither is usable or too much changed. A build afresh, or arrays :data:`SAVE_AFTER` generations ahead of
        the file, are owed to the next process: :meth:`save_pending` writes them once the recall's snapshot is over
        (never on a read-only vault)."""
        from synapse_nb.recall import rankfile

        store, mind = self._ctx.store, self._ctx.mind
        key = ("rank", state.uid, state.gen, state.last, mind)
        with self._lock:
            if self._threads_key == key:
                return self._threads
            old, old_key, saved = self._threads, self._threads_key, self._saved_gen
        folder = store.recall.rank_cache_dir()
        path = rankfile.cache_path(folder, mind) if folder is not None else None
        bases: list[tuple[int, str, ThreadIndex] | None] = []
        if isinstance(old_key, tuple) and old_key[0] == "rank" and old_key[1] == state.uid and old_key[4] == mind:
            bases.append((old_key[2], old_key[3], old))
        bases.append(None)  # the file, read only if the arrays in memory are not usable
        idx: ThreadIndex | None = None
        for base in bases:
            if base is None:
                digests = store.recall.rank_digest(mind) if path is not None else ()  # in this snapshot
                stored = rankfile.load(path, state.uid, mind, digests) if path and digests else None
                if stored is None:
                    continue
                base = (stored.gen, stored.last, stored.threads)
                saved = stored.gen
            idx = self._patched(state, *base)
            if idx is not None:
                break
        if idx is None:
            idx = ThreadIndex(store.recall.rank_rows(mind))
            saved = None
        owed = (path is not None and not store.readonly and len(idx) >= rankfile.MIN_ROWS
                and (saved is None or state.gen - saved >= SAVE_AFTER))
        with self._lock:
            self._threads, self._threads_key, self._saved_gen = idx, key, saved
            self._owed = (path, state, mind, idx) if owed and path is not None else None
        return idx

    def save_pending(self) -> bool:
        """Write the file the arrays are owed (:meth:`_threads_by_state`); called after the recall's snapshot, since
        it writes to the database: the file's SHA-256 is kept there (``keep_rank_digest``: a short write of its
        own that never waits for the write lock and moves no data version of this process) just before the file is
        renamed into place. The lock busy: nothing is written this time (the old file and its digest stay as they
        were; the arrays are owed again at the next state). True: written."""
        from synapse_nb.recall import rankfile

        with self._lock:
            owed, self._owed = self._owed, None
        if owed is None:
            return False
        path, state, mind, idx = owed
        recall = self._ctx.store.recall
        encoded = rankfile.encode(state, mind, idx)
        if encoded is None or not rankfile.write(
                path, encoded, lambda: recall.keep_rank_digest(mind, state.gen, encoded.digest)):
            return False
        with self._lock:
            if self._threads is idx:
                self._saved_gen = state.gen
        return True

    def _patched(self, state: RankState, gen: int, last: str, base: ThreadIndex) -> ThreadIndex | None:
        """``base`` (the arrays at generation ``gen``, whose change logged ``last``) brought to ``state``; None when
        it cannot be: another history (the log names another id at ``gen``), too old for the log, or more than
        :data:`MAX_PATCH` records changed."""
        recall = self._ctx.store.recall
        if gen == state.gen:
            return base if last == state.last else None
        if gen > state.gen or (gen == 0 and last) or (gen >= state.first and recall.rank_logged(gen) != last):
            return None
        ids = recall.rank_changes(gen, state)
        if ids is None or len(ids) > MAX_PATCH:
            return None
        return self._patch(base, ids)

    def _patch(self, old: ThreadIndex, ids: list[str]) -> ThreadIndex:
        """``old`` with the rows of these changed ids (and of their threads, old and new) read again."""
        store, mind = self._ctx.store, self._ctx.mind
        if not ids:
            return old  # a commit that changed no ranked record (a setting, a flag, a lesson)
        threads = sorted({t for i in ids if (t := old.thread_of(i)) is not None})
        # the rows of these ids and every row of their threads, old and new: all that the change can move
        fresh = store.recall.rank_rows(mind, ids=ids, threads=threads)
        if fresh or any(i in old.pos for i in ids):
            return old.patch(set(ids) | {r.id for r in fresh}, fresh)
        return old  # only another mind's records changed

    def _threads_by_version(self, version: object) -> ThreadIndex:
        """The mind's ranking documents as structure arrays, cached per data version.

        When the store can name the records changed since the version kept (:meth:`VaultStore.changes_between`:
        a local vault's own writes), only those records' rows and the rows of their threads (a record's context
        is the two before it) are read again and patched into the arrays kept (:meth:`ThreadIndex.patch`): the
        first recall after a write then reads a few rows, not the whole mind's.
        """
        store, mind = self._ctx.store, self._ctx.mind
        key = (version, mind)
        with self._lock:
            if self._threads_key == key:
                return self._threads
            old, old_key = self._threads, self._threads_key
        changes = None
        if isinstance(old_key, tuple) and old_key[1] == mind and isinstance(version, tuple):
            changes = store.changes_between(old_key[0], version)
        ids = sorted({rid for kind, rid, _ in changes if kind in _RANKED}) if changes is not None else None
        if ids is None or len(ids) > MAX_PATCH:
            idx = ThreadIndex(store.recall.rank_rows(mind))
        else:
            idx = self._patch(old, ids)
        with self._lock:
            self._threads, self._threads_key = idx, key
        return idx

    def fetch(self, ids: Sequence[tuple[str, str]], version: object) -> dict[str, Candidate]:
        """Candidate rows of these (kind, id) pairs of the mind, by id (ids gone meanwhile are absent).

        Rows already read are kept until the vault changes (keyed by the store's data version and the mind).
        """
        store, mind = self._ctx.store, self._ctx.mind
        key = (version, mind)
        with self._lock:
            if self._rows_key != key:
                self._rows_key, self._rows = key, {}
            rows = self._rows
            got = {rid: rows[rid] for kind, rid in ids if rid in rows and rows[rid].kind == kind}
        by_kind: dict[str, list[str]] = {}
        for kind, rid in ids:
            if rid not in got:
                by_kind.setdefault(kind, []).append(rid)
        if by_kind:
            read = store.recall.fetch(mind, by_kind)
            with self._lock:
                if self._rows is rows:
                    if len(rows) + len(read) > MAX_CACHED_ROWS:
                        rows.clear()
                    rows.update((c.id, c) for c in read)
            got.update((c.id, c) for c in read)
        return {i: got[i] for i in sorted(got)}

    def _key_matches(self, keys: list[str], version: object) -> list[tuple[str, str]]:
        """The store's ``key_matches`` for these keys, by id, each key's answer kept until the vault changes
        (queries share their word runs)."""
        store, mind = self._ctx.store, self._ctx.mind
        key = (version, mind)
        with self._lock:
            if self._keys_key != key:
                self._keys_key, self._keys = key, {}
            cache = self._keys
            missing = [k for k in keys if k not in cache]
        found: dict[str, list[tuple[str, str]]] = {k: [] for k in missing}
        for rid, name in store.recall.key_matches(mind, missing) if missing else []:
            found[name].append((rid, name))
        with self._lock:
            if self._keys is cache:
                if len(cache) + len(missing) > MAX_CACHED_TERMS:
                    cache.clear()
                cache.update((k, tuple(v)) for k, v in found.items())
        return sorted(m for k in keys for m in (found[k] if k in found else cache.get(k, ())))

    def _tag_rids(self, words: list[str], max_per_tag: int,
                  version: object) -> list[tuple[str, tuple[str, ...], tuple[int, ...]]]:
        """(tag, its records, how many tags each of them carries) of the tags among ``words`` carried by at most
        ``max_per_tag`` records, by tag.

        Per tag, its record count and records are kept until the vault changes (queries share their words).
        """
        store, mind = self._ctx.store, self._ctx.mind
        key = (version, mind)
        with self._lock:
            if self._tags_key != key:
                self._tags_key, self._tags = key, {}
            tags = self._tags
            wanted = sorted(set(words))
            known = {t: tags[t] for t in wanted if t in tags}
        counts = {t: v[0] for t, v in known.items()}
        missing = [t for t in wanted if t not in counts]
        if missing:
            got = store.recall.tag_counts(mind, missing)
            counts.update({t: got.get(t, 0) for t in missing})
        need = [t for t in wanted if 0 < counts[t] <= max_per_tag and (t not in known or known[t][1] is None)]
        found: dict[str, list[tuple[str, int]]] = {t: [] for t in need}
        for rid, tag, n in store.recall.tag_matches(mind, need) if need else []:
            found[tag].append((rid, n))
        fresh = {t: (tuple(r for r, _ in rs), tuple(n for _, n in rs)) for t, rs in found.items()}
        with self._lock:
            if self._tags is tags:
                if len(tags) > MAX_CACHED_TAGS:
                    tags.clear()
                for t in missing:
                    tags[t] = (counts[t], None)
                for t, rs in fresh.items():
                    tags[t] = (counts[t], rs)
        out = []
        for t in wanted:
            if 0 < counts[t] <= max_per_tag:
                rids, ns = fresh[t] if t in fresh else known[t][1] or ((), ())
                out.append((t, rids, ns))
        return out

    def matches(self, words: list[str], version: object, idx: ThreadIndex, *, max_per_tag: int) -> ExactMatches:
        """Records whose tag, key or note name the query names, as an :class:`ExactMatches` ("#tag", "key:name";
        tags carried by more than ``max_per_tag`` records are left out: a tag on thousands of records identifies
        nothing, its word is in the indexed text anyway). Each record's labels are built when read, and the rank
        bonuses are computed over arrays (a tag carried by 200 records costs no Python loop
        over them). Each tag's records and their positions in ``idx`` are kept until the vault changes."""
        if not words:
            return ExactMatches([], [], {})
        import numpy as np

        key = (version, self._ctx.mind)
        tags = []
        for t, rids, ns in self._tag_rids(match_words(words), max_per_tag, version):
            with self._lock:
                if self._tagpos_key != key:
                    self._tagpos_key, self._tagpos = key, {}
                got = self._tagpos.get(t)
            if got is None or got[0] is not rids:  # the same tuple while the tag's records are kept
                at = idx.pos
                placed = sorted((at[r], n) for r, n in zip(rids, ns, strict=True) if r in at)
                got = (rids, frozenset(rids), np.array([p for p, _ in placed], np.int64),
                       np.array([n for _, n in placed], np.int64))
                with self._lock:
                    if self._tagpos_key == key:
                        if len(self._tagpos) > MAX_CACHED_TAGS:
                            self._tagpos.clear()
                        self._tagpos[t] = got
            tags.append((t, got[1], got[2], got[3]))
        runs = sorted(r for r in {"_".join(words[i:j]) for i in range(len(words))
                                  for j in range(i + 1, min(len(words), i + 6) + 1)} if not stop_name(r))
        return ExactMatches(tags, self._key_matches(runs, version), idx.pos)
