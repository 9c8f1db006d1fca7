"""The recall orchestration: one :meth:`Recaller.recall` per turn, in the order the package docstring gives."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb._util import check_files
from synapse_nb.errors import IndexError_, QueryError, SemanticUnavailableError, SnapshotMoved, ValidationError
from synapse_nb.models import Lesson, Memory, Record
from synapse_nb.recall.assembly import assemble_parts, empty_reason, given_before, join_blocks, record_line
from synapse_nb.recall.bm25 import Postings, Term, Totals, bm25_top
from synapse_nb.recall.candidates import Candidates, ExactMatches, WalkRow, query_words
from synapse_nb.recall.coverage import Cover, cover_terms
from synapse_nb.recall.delta import check_session, no_longer, record_given, seen_digests
from synapse_nb.recall.expand import Variants
from synapse_nb.recall.rank import Ranked, RankParams, asks_several, fts_words, rank_words, structure
from synapse_nb.recall.scoring import Meaning, gate
from synapse_nb.recall.semantic import DenseChannel, Fallback, Unsynced
from synapse_nb.recall.stale import Staleness
from synapse_nb.recall.types import MAX_QUERY_CHARS, Bars, ExplainRows, Recall
from synapse_nb.render import SEMANTIC_PEOPLE_LINE, as_of_line, semantic_off_line
from synapse_nb.text import FTS_TOKEN_RE

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.context import Context
    from synapse_nb.recall.threads import ThreadIndex
    from synapse_nb.store.indexer import VaultIndex

__all__ = ["Recaller", "clean_query"]

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: ``path`` values: "auto" and "rank" run the ranking; "exhaustive" and "index" (recall v1's two candidate
#: paths) are still accepted and run the same ranking, so old calls keep working.
PATHS = ("auto", "rank", "exhaustive", "index")
#: Most ranked records the walk may read (top-k per kind x kinds, plus what the delta and budget skip).
MAX_WALK = 200
#: A phrase query (a word the backend's tokenizer splits) finds people's records below agents' within this many
#: times ``RankParams.depth`` of the store's ranking (``bm25_top`` finds them in every match).
PHRASE_DEEPER = 10
#: A tag carried by more records than this identifies nothing: no bonus (its word is ranked anyway).
MAX_TAG_RECORDS = 200
#: Most records the walk's cache holds (it is emptied when full, and whenever the vault changes).
MAX_CACHED_RECORDS = 20_000


def clean_query(query: Any) -> str:
    """A query as recall reads it: text, at most :data:`MAX_QUERY_CHARS`, control characters as spaces."""
    if not isinstance(query, str):
        raise QueryError(f"a recall query must be text (str), got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    query = query.encode("utf-8", "replace").decode("utf-8")
    return _CTRL.sub(" ", query)


def check_path(path: Any) -> None:
    """Recall v1's ``path`` argument: only its old names are accepted (each runs the one ranking)."""
    if path not in PATHS:
        raise ValidationError(f"path {path!r} is not accepted; use auto or rank (exhaustive and index are "
                              "accepted as their old names)")


def _check_args(bars: Any, budget_tokens: Any, session: Any) -> Bars:
    bars = bars or Bars()
    if not isinstance(bars, Bars):
        raise ValidationError(f"bars must be a synapse_nb.recall.Bars, got {type(bars).__name__}")
    if budget_tokens is not None:
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 0:
            raise ValidationError(f"budget_tokens must be a whole number >= 0, got {budget_tokens!r}")
        bars = replace(bars, budget_tokens=budget_tokens)
    check_session(session)
    out: Bars = bars
    return out


class _Ranking(NamedTuple):
    ranked: Ranked
    cands: list[WalkRow | None]
    exact: ExactMatches
    cover: Cover
    actor: np.ndarray
    match: Meaning | None = None  # the records the semantic channel found close in meaning (the gate reads them)
    agent: np.ndarray | None = None  # per position: an agent's record no person verified (ThreadIndex.agent)
    waiting: int = 0  # agents' records waiting to be embedded: the channel read people's only (review 67)


class Recaller:
    """Recall bound to one context (one vault handle); its caches live here, per process.

    ``index`` gives the vault's retrieval index (the semantic channel's vectors live there; recall ranks with the
    store's BM25 and the structure step). ``lessons`` reads the approved lessons in force (the banner): the kinds
    own that rule (:meth:`synapse_nb.kinds.lessons.Lessons.in_force`), recall only asks.
    """

    def __init__(self, ctx: Context, index: Callable[[], VaultIndex], params: RankParams | None = None,
                 defaults: Callable[[], tuple[Bars, float]] | None = None, *,
                 lessons: Callable[[Context, str | None], Iterable[Lesson]], as_of: str | None = None) -> None:
        self._ctx = ctx
        self._as_of = as_of  # a vault rebuilt from history at this moment: its answers say so (review 64)
        self._lessons = lessons  # the banner's lessons in force at a context's "now" on a branch (the kinds' rule)
        self._defaults = defaults  # the saved default bars, read inside the snapshot (no round trip of their own)
        self._lock = threading.RLock()
        self._candidates = Candidates(ctx)
        self._postings = Postings(ctx)
        self._variants = Variants(self._postings)
        self._staleness = Staleness(ctx)
        self._dense = DenseChannel(ctx.store, index)
        # (data version, the setting recall_embedder, why it is not loaded: Settings.embedder_spec)
        self._embedder: tuple[object, str | None, str | None] | None = None
        self.params = params or RankParams()
        # records the walk read, by (kind, id), kept while the data version and the mind are unchanged (the walk
        # knows a ranked record by kind and id only: no candidate row is read per recall); on a remote store also
        # by (kind, id, updated_at) across versions, found through the stamps it reads instead (_walker)
        self._records_key: object = None
        self._records: dict[tuple[str, str], Record] = {}
        self._stamped: dict[tuple[str, str, str], Record] = {}
        self._lines: dict[tuple[str, str, str], tuple[Record, str]] = {}
        self._saved: tuple[object, tuple[Bars, float]] | None = None
        self._hidden_memo: tuple[object, Mapping[str, str]] | None = None

    def _walker(self, now: str, version: object) -> tuple[Callable[[WalkRow], Record | None],
                                                          Callable[[list[WalkRow]], None],
                                                          Callable[[WalkRow, Record], str]]:
        """The walk's record reads at ``now``: ``(materialize, prefetch, line)``.

        ``prefetch`` reads the records the walk will read in one statement per kind (what the cache lacks);
        ``materialize`` answers from what it read, else from the cache, else reads the record alone.
        A record with no expiry reads the same at any "now" until it is written (lessons, whose status depends
        on "now", are never walked), so those are kept by (kind, id) for the data version (:meth:`_records_for`).
        The walk runs after the snapshot: a record written meanwhile is read as it is now, and kept under the
        version the recall read, which the next recall no longer sees (the write moved it).

        On a remote store (``RecallQueries.remote``: a team vault, where each read is a round trip) a write
        anywhere moves the version, so ``prefetch`` first reads the stamps of what it needs (one statement for all
        kinds, :meth:`Candidates.fetch`) and reuses records kept by (kind, id, updated_at) from earlier versions:
        every write moves a record's updated_at. ``line`` is :func:`~synapse_nb.recall.assembly.record_line`, kept
        with the record object it was rendered from, then the record's marks at this version and HEAD
        (:class:`~synapse_nb.recall.stale.Marks`, read with the records ``prefetch`` reads): the gate counts them
        in the budget (review 71).
        """
        view = self._ctx.at(now).view()  # once per recall (the same for every record)
        store, lock, cache, stamped, lines = self._ctx.store, self._lock, self._records, self._stamped, self._lines
        remote = store.recall.remote
        read: dict[tuple[str, str], Record | None] = {}  # this recall's batched reads, kept or not
        stamps: dict[str, str] = {}  # id -> updated_at at this version (remote stores)
        marks = self._staleness.marks(version)  # this recall's: HEAD read once

        def cacheable(c: WalkRow) -> bool:
            return c.expires_at is None and c.kind != "lesson"

        def expired(rec: Record | None) -> bool:  # the record's own expiry, whatever the arrays said (review 56)
            return isinstance(rec, Memory) and rec.expires_at is not None and rec.expires_at <= now

        def keep(c: WalkRow, rec: Record | None) -> None:
            if rec is not None and cacheable(c) and not (isinstance(rec, Memory) and rec.expires_at):
                with lock:
                    if len(cache) >= MAX_CACHED_RECORDS:
                        cache.clear()
                    cache[(c.kind, c.id)] = rec
                    if remote:
                        if len(stamped) >= MAX_CACHED_RECORDS:
                            stamped.clear()
                        stamped[(c.kind, c.id, rec.updated_at)] = rec

        def kept(c: WalkRow) -> Record | None:
            if not cacheable(c):
                return None
            with lock:
                rec = cache.get((c.kind, c.id))
                if rec is None and c.id in stamps:
                    rec = stamped.get((c.kind, c.id, stamps[c.id]))
                    if rec is not None:
                        cache[(c.kind, c.id)] = rec
            return rec

        def prefetch(cands: list[WalkRow]) -> None:
            with lock:
                missing = [c for c in cands if (c.kind, c.id) not in cache]
            if remote and missing:
                stamps.update((i, c.updated_at) for i, c in self._candidates.fetch(
                    [(c.kind, c.id) for c in missing], version).items())
            by_kind: dict[str, list[WalkRow]] = {}
            for c in missing:
                rec = kept(c)
                if rec is not None:
                    read[(c.kind, c.id)] = rec
                else:
                    by_kind.setdefault(c.kind, []).append(c)
            for kind in sorted(by_kind):
                got = store.table(kind).get_many(view, [c.id for c in by_kind[kind]])
                for c in by_kind[kind]:
                    read[(kind, c.id)] = rec = got.get(c.id)
                    keep(c, rec)
            found = ((c, read[(c.kind, c.id)] if (c.kind, c.id) in read else kept(c)) for c in cands)
            marks.prefetch([(c.kind, c.id, rec) for c, rec in found if rec is not None and c.id not in hidden])

        hidden = self._hidden(version)  # the hidden side of open duplicate links (issue 30): given once

        def materialize(c: WalkRow) -> Record | None:
            if c.id in hidden:
                return None
            if (c.kind, c.id) in read:
                rec = read[(c.kind, c.id)]
            else:
                rec = kept(c)
                if rec is None:
                    rec = store.table(c.kind).get(view, c.id)
                    keep(c, rec)
            return None if expired(rec) else rec

        def line(c: WalkRow, rec: Record) -> str:
            key = (c.kind, c.id, rec.updated_at)
            with lock:
                hit = lines.get(key)
            if hit is not None and hit[0] is rec:  # the very record it was rendered from: the same line
                text = hit[1]
            else:
                text = record_line(rec)
                with lock:
                    if len(lines) >= MAX_CACHED_RECORDS:
                        lines.clear()
                    lines[key] = (rec, text)
            return text + marks.tail(c.kind, c.id, rec)  # marks move with HEAD and the flags: never kept

        return materialize, prefetch, line

    def _hidden(self, version: object) -> Mapping[str, str]:
        """The ids open duplicate links hide in this mind (:mod:`synapse_nb.dupes`), each to the record shown in its
        place, read once per data version."""
        memo = self._hidden_memo
        if memo is not None and memo[0] == (version, self._ctx.mind):
            return memo[1]
        ids = self._ctx.store.links.hidden(self._ctx.mind)
        self._hidden_memo = ((version, self._ctx.mind), ids)
        return ids

    def _settings_key(self, version: object) -> object:
        """What the settings read depends on: the data version and whether the vault is borrowed (a person's
        ``adopt`` puts a borrowed vault's stored values in force without moving the version)."""
        return version, self._ctx.git.borrowed is None

    def _saved_defaults(self, version: object) -> tuple[Bars, float]:
        """The saved default bars and semantic weight, kept per data version (writing a setting moves it)."""
        with self._lock:
            memo = self._saved
        if memo is not None and memo[0] == version:
            return memo[1]
        assert self._defaults is not None
        saved = self._defaults()
        with self._lock:
            self._saved = (version, saved)
        return saved

    def _embedder_spec(self, version: object, use: Fallback) -> str | None:
        """The setting ``recall_embedder`` (None: the default embedder), read once per data version through the
        settings' one check (:meth:`~synapse_nb.settings.Settings.embedder_spec`): a spec it refuses (a borrowed
        vault's code or files) turns the channel off for this recall (``use``), and None is returned unused."""
        memo = self._embedder
        if memo is None or memo[0] != version:
            from synapse_nb.settings import EmbedderRefused, Settings

            try:  # checked: a hand-written one reads as None
                memo = (version, Settings(self._ctx).embedder_spec(), None)
            except EmbedderRefused as exc:
                memo = (version, None, str(exc))
            self._embedder = memo
        if memo[2] is not None:
            use.refused(memo[2])
        return memo[1]

    def _records_for(self, version: object, mind: str) -> None:
        """Keep the walk's records by (kind, id) only while the data version and the mind are unchanged, by
        (kind, id, updated_at) while the mind is."""
        with self._lock:
            if self._records_key != (version, mind):
                if not isinstance(self._records_key, tuple) or self._records_key[1] != mind:
                    self._stamped, self._lines = {}, {}
                self._records_key, self._records = (version, mind), {}

    def recall(self, query: Any, *, session: str | None = None, branch: Any = None, files: Any = None,
               budget_tokens: int | None = None, bars: Bars | None = None, record: bool = True) -> Recall:
        """See :meth:`synapse_nb.vault.Vault.recall`."""
        ctx = self._ctx
        query = clean_query(query)
        given, bars = bars, _check_args(bars, budget_tokens, session)
        file_refs = check_files(files, "files")
        branch_name = ctx.git.head()[0] if branch is None else str(branch)
        used = "rank" if query.strip() else "none"
        # the semantic channel's index applies queued writes outside the snapshot, waiting a moment at most for
        # the index lock (review 28): held longer by another process, the index answers as it stands. An index
        # that cannot be read or written turns the channel off for this recall: BM25 answers alone (Fallback)
        use, busy = Fallback(), False
        try:
            busy = bool(self.params.semantic) and not self._dense.sync()
        except IndexError_ as exc:
            use.failed(exc)
        except SemanticUnavailableError as exc:  # the model raised on a record's text: BM25 alone (review 69)
            use.no_model(exc)
        try:
            version, bars, now, lessons, ranking = self._read(query, given, bars, budget_tokens, session,
                                                              file_refs, branch_name, busy=busy, use=use)
        except Unsynced:  # the channel was just turned on, or a write came between: sync, then read again
            try:
                if self._embedder is None or self._embedder[2] is None:  # never a refused spec's default
                    self._dense.prepare(self._embedder[1] if self._embedder else None)
            except IndexError_ as exc:
                use.failed(exc)
            except SemanticUnavailableError as exc:  # its model not loadable here, or it raised: BM25 alone
                use.no_model(exc)
            version, bars, now, lessons, ranking = self._read(query, given, bars, budget_tokens, session,
                                                              file_refs, branch_name, synced=True, use=use)
        self._candidates.save_pending()  # a rank file owed: written now the snapshot is over (it keeps a digest)
        walk = [c.id for c in ranking.cands if c is not None] if ranking else []
        # the session's marks are no part of the vault's state (they move no version): read after the snapshot
        seen = seen_digests(ctx, session, walk + [x.id for x in lessons])
        on_meaning = False
        if ranking is None:
            rows, kept, coverage = ExplainRows((), tuple), [], 0.0
        else:
            self._records_for(version, ctx.mind)
            materialize, prefetch, line = self._walker(now, version)
            g = gate(ranking.ranked, ranking.cands, ranking.exact, ranking.cover, ranking.actor, bars,
                     materialize, seen, prefetch, line, match=ranking.match, agent=ranking.agent,
                     hidden=self._hidden(version))
            rows, kept, coverage, on_meaning = g.rows, g.kept, g.coverage, g.on_meaning
        # the lessons the session was given that are no longer in force as given are named (review 87)
        gone = no_longer(ctx, session, lessons, seen) if self._as_of is None else ()
        shown_before, mark = record_given(ctx, session, kept, lessons, seen, now, record=record, gone=gone)
        reason, note = empty_reason(query, kept, rows, bars)
        earlier = given_before(rows) if kept else 0  # more on the query than the session was given before
        parts = assemble_parts(query, kept, lessons, shown_before, note, as_of=self._as_of, gone=gone, given=earlier)
        waiting = ranking.waiting if ranking is not None and use.on else 0
        off = semantic_off_line(use.reason)
        before: list[str] = []  # the lines before the banner, each then an empty line
        if self._as_of is not None:  # first: rebuilt from history, not today's rules (review 64)
            before.append(as_of_line(self._as_of))
        borrowed = ctx.git.borrowed  # found once when the vault was opened
        if borrowed is not None:
            before.append(borrowed.line)
        if off is not None:  # answered without the channel it had on: said in the answer (reviews 58, 66, 68)
            before.append(off)
        elif waiting:  # its people's records only, agents' waiting to be embedded (review 67)
            before.append(SEMANTIC_PEOPLE_LINE)
        parts = join_blocks(*([(line, ())] for line in before), parts)
        text = "\n".join(t for t, _ in parts)
        return Recall(query=query, session=session, text=text, items=tuple(kept), lessons=tuple(lessons),
                      nothing_new=not kept, path=used, bars=bars, empty_reason=reason, _explain=rows,
                      coverage=coverage, on_meaning=on_meaning, version=str(version[0]),
                      borrowed=borrowed.to_dict() if borrowed is not None else None,
                      shown_before=frozenset(shown_before), no_longer=gone, semantic_off=use.reason,
                      as_of=self._as_of, agents_waiting=waiting, given_before=earlier, _mark=mark,
                      _parts=tuple(parts))

    def _read(self, query: str, given: Bars | None, bars: Bars, budget_tokens: int | None, session: str | None,
              file_refs: tuple[str, ...], branch_name: str | None, *, synced: bool = False, busy: bool = False,
              use: Fallback) -> tuple[Any, Bars, str, list[Any], _Ranking | None]:
        """One consistent read of everything the ranking weighs: (version, bars, now, lessons, ranking).
        ``synced``: the semantic table was just synced (writes queued since are not waited for again); ``busy``:
        its sync found the index lock busy (queued writes are not waited for); ``use``: whether the semantic
        channel may still be read in this recall (its index failed: BM25 alone)."""
        ctx = self._ctx
        # Lazy: a team vault reads the version first and opens its transaction only for what the caches keyed by
        # that version lack; if the vault moved in between, the read starts again in an ordinary snapshot.
        for lazy in (True, False):
            try:
                with ctx.store.snapshot(lazy=lazy):
                    version = ctx.store.data_version()  # once: every cache of this recall is keyed by it
                    if self._defaults is not None:  # the saved bars and semantic weight, read inside the snapshot
                        saved, semantic = self._saved_defaults(self._settings_key(version))
                        if given is None:
                            bars = _check_args(saved, budget_tokens, session)
                        if semantic != self.params.semantic:
                            self.params = replace(self.params, semantic=semantic)
                    if self.params.semantic and use.on and not synced:
                        try:
                            spec = self._embedder_spec(self._settings_key(version), use)
                            if use.on:
                                self._dense.check_synced(spec, busy=busy)
                        except IndexError_ as exc:
                            use.failed(exc)
                    now = ctx.read_now()  # a team vault's server clock: one state, one "now", on every machine
                    lessons = list(self._lessons(ctx.at(now), branch_name))
                    ranking = self._rank(query, file_refs, bars, now, version, use) if query.strip() else None
                break
            except SnapshotMoved:
                if not lazy:
                    raise
        return version, bars, now, lessons, ranking

    def _rank(self, query: str, files: tuple[str, ...], bars: Bars, now: str, version: object,
              use: Fallback) -> _Ranking:
        """BM25 hits plus exact-match bonuses, through the structure step; the candidate rows of the walk. With the
        semantic channel's index unreadable (``use``), as with the channel off."""
        import numpy as np  # loaded with the gate

        ctx, p = self._ctx, self.params if use.on else replace(self.params, semantic=0.0)
        idx = self._candidates.threads(version)
        words = rank_words(query)
        file_words = [w.lower() for f in files for w in FTS_TOKEN_RE.findall(f)]
        forms = self._variants.candidates(words, version) if p.chat_words else []  # recall/expand.py
        asked = sorted(set(words) | set(file_words) | set(forms))
        every = self._candidates.doc_freq(asked, version)
        n_every = self._candidates.count(version)
        df, n_docs = every, n_every
        weights = self._postings.totals(version) if asked else Totals(0, 0, 0)
        if weights.people:  # weighed by people's records: the agents' unverified ones left out (review 83)
            agents = self._candidates.doc_freq([w for w in asked if w in every], version, agents=True)
            df = {w: k - agents.get(w, 0) for w, k in every.items() if k > agents.get(w, 0)}
            n_docs = n_every - self._candidates.count(version, agents=True)
        send = fts_words(words, df, n_docs, p.max_df, p.max_postings, vault=(every, n_every))
        # the gate's coverage counts the query's words but those whose postings cost too much to read
        cover = [w for w in words if every.get(w, 0) <= p.max_postings] or [w for w in send if w in words]
        send += [w for w in dict.fromkeys(file_words) if w not in send]
        terms, totals = self._postings.get(list(dict.fromkeys(send + cover)), idx, version) if send else ({}, weights)
        if p.chat_words and send:  # each query word with the forms chat gives it (recall/expand.py)
            terms = self._variants.merge([w for w in dict.fromkeys(send + cover) if w in words], terms, idx, version,
                                         totals, df)
        pos, sc = self._bm25(idx, send, terms, totals)
        exact = self._candidates.matches(query_words(query), version, idx, max_per_tag=MAX_TAG_RECORDS)
        pos_of = idx.pos
        pairs = exact.bonus(bars.tag_bonus, bars.key_bonus, bars.max_bonus)  # (positions, bonuses)
        bonus: tuple[np.ndarray, np.ndarray] | dict[int, float] = pairs
        if files:  # the file bonus reads the texts of every hit
            rows = self._candidates.fetch([(idx.kinds[pos_of[i]], i) for i in dict.fromkeys(
                [idx.ids[j] for j in pos.tolist()] + [i for i in exact if i in pos_of])], version)
            bonus = dict(zip(pairs[0].tolist(), pairs[1].tolist(), strict=True))
            for rid, c in rows.items():
                hit_files = [f for f in files if f in c.text]
                if hit_files:
                    bonus[pos_of[rid]] = min(bars.max_bonus, bonus.get(pos_of[rid], 0.0) + bars.file_bonus)
                    exact.add_files(rid, hit_files)
        match, hop, waiting = None, None, 0
        spec = self._embedder_spec(self._settings_key(version), use) if p.semantic else None
        if not use.on:  # its embedder is refused (a borrowed vault's code or files): as with the channel off
            p = replace(p, semantic=0.0)
        if p.semantic:  # the optional dense channel, off by default: recall/semantic.py
            from synapse_nb.store.embedders import match_cosine  # loaded with the channel's model

            model = self._dense.embedder(spec)
            try:
                # while agents' records wait to be embedded, none is read by meaning: the answer is the same
                # whatever share of them this machine embedded (review 67)
                waiting = self._dense.agents_waiting(idx)
                f_pos, f_sc, dense = self._dense.fused(idx, pos, sc, query, ctx.mind, now, p.semantic, waiting > 0)
                if p.hop_weight and asks_several(query) and len(named := idx.actors_named(words)) == 1:
                    hop = self._dense.speaker_list(idx, query, int(named[0]), ctx.mind, now,  # RankParams.hop_*
                                                   waiting > 0)
            except (IndexError_, SemanticUnavailableError) as exc:  # the table cannot be read, or the model raised
                if isinstance(exc, IndexError_):  # on the question: ranked as with the channel off
                    use.failed(exc)
                else:
                    use.no_model(exc)
                p, hop, waiting = replace(p, semantic=0.0), None, 0
            else:
                pos, sc = f_pos, f_sc
                at = match_cosine(model)
                close = frozenset(j for j, c in dense if c >= at) if at is not None else frozenset()
                match = Meaning(at, close) if at is not None and close else None
        ranked = structure(idx, pos, sc, words, p, bonus, hop)
        # the walk reads what clears the margin, plus a few rows below it for the explanation
        text = ranked.score - ranked.parts["bonus"] if len(ranked) else ranked.score
        n = int(np.count_nonzero(ranked.score >= bars.margin * text.max())) if len(ranked) else 0
        n = min(MAX_WALK, max(n + 20, bars.gate_depth))
        walked: slice | np.ndarray = slice(n)
        agent = idx.agent[ranked.pos]
        if len(ranked) > n and agent[:n].any():  # people's records are walked as if agents' were not there
            people = np.flatnonzero(~agent)
            if len(people):
                n_p = int(np.count_nonzero(ranked.score[people] >= bars.margin * text[people].max()))
                walked = np.union1d(np.arange(n), people[:min(MAX_WALK, max(n_p + 20, bars.gate_depth))])
        ranked = Ranked(ranked.pos[walked], ranked.score[walked], {k: v[walked] for k, v in ranked.parts.items()})
        # memories expired at "now" are ranked (the store's ranking knows no time) but never given
        cands = self._live(idx, ranked.pos.tolist(), now, version)
        return _Ranking(ranked, cands, exact, cover_terms(cover, terms, totals.rows, idx, people=totals.people),
                        idx.actor, match, idx.agent, waiting)

    def _live(self, idx: ThreadIndex, walked: list[int], now: str, version: object) -> list[WalkRow | None]:
        """The walk's candidates at these positions: None for a memory expired at ``now``. The arrays' expiry may
        come from the file on disk (:mod:`~synapse_nb.recall.rankfile`, a cache an agent can rewrite with a
        checksum that matches: review 56), so a record it says expired is dropped only once the store confirms it
        (one statement for those ids, kept per data version: :meth:`Candidates.fetch`); one it says live is
        checked against the record the walk reads (:meth:`_walker`)."""
        expiry, kinds, ids = idx.expiry, idx.kinds, idx.ids
        rows = [WalkRow(kinds[j], ids[j], expiry.get(ids[j])) for j in walked]
        said = [(c.kind, c.id) for c in rows if c.expires_at is not None and c.expires_at <= now]
        real = self._candidates.fetch(said, version) if said else {}
        out: list[WalkRow | None] = []
        for c in rows:
            if c.expires_at is not None and c.expires_at <= now:
                got = real.get(c.id)  # absent: deleted, or not of the kind the file says: not given
                if got is None or got.kind != c.kind or (got.expires_at is not None and got.expires_at <= now):
                    out.append(None)
                    continue
                c = c._replace(expires_at=got.expires_at)
            out.append(c)
        return out

    def _bm25(self, idx: ThreadIndex, words: list[str], terms: dict[str, Term],
              totals: Totals) -> tuple[np.ndarray, np.ndarray]:
        """The mind's best ``depth`` documents for ``words`` and their BM25 (positions into ``idx``), computed here
        from cached postings (``terms``, read at this recall's version) exactly as the store's ``bm25`` computes
        it (recall/bm25.py)."""
        import numpy as np

        store, p = self._ctx.store, self.params
        if not words or p.depth <= 0:
            return np.zeros(0, np.int64), np.zeros(0)
        if all(terms[w].stem is not None for w in words):
            return bm25_top([terms[w] for w in words], idx, totals, style=store.recall.bm25_style, depth=p.depth,
                            w_body=p.w_body, w_context=p.w_context, k1=p.k1, b=p.b, people=p.depth)
        # a word the backend's tokenizer splits in several terms is a phrase query: the store's own bm25
        hits = [h for h in store.recall.bm25(self._ctx.mind, words, depth=p.depth, w_body=p.w_body,
                                            w_context=p.w_context) if h.id in idx.pos]
        if len(hits) == p.depth and any(idx.agent[idx.pos[h.id]] for h in hits):
            # people's records below agents' (bm25_top's ``people``), within the best PHRASE_DEEPER x depth here
            deep = store.recall.bm25(self._ctx.mind, words, depth=p.depth * PHRASE_DEEPER, w_body=p.w_body,
                                     w_context=p.w_context)
            top = {h.id for h in hits}
            hits += [h for h in deep if h.id not in top and h.id in idx.pos
                     and not idx.agent[idx.pos[h.id]]][:p.depth]
        return (np.array([idx.pos[h.id] for h in hits], np.int64), np.array([h.score for h in hits], np.float64))
