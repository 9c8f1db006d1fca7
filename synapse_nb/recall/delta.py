"""The per-session delta: what a session already received, unchanged, is not given again.

``session_seen`` holds (mind, session, id) -> digest of what was given. A recall reads it once, for the records
its walk may reach and its lessons together; the gate skips records given before with the same digest *before*
top-k and budget (they never use a slot); lessons shown before are named by id only; what is given is recorded
in one write. Recording is a convenience: a failed write (a
read-only vault, a locked disk) never fails the recall.

A session's id comes from its caller (an MCP client, a hook's harness, ``--session``), so a caller naming a new
session on every call would add rows without end: a session the mind has not seen is recorded only while the mind
has had fewer than :data:`SESSIONS_PER_HOUR` sessions of its kind given something in the past hour (sessions already
known go on being recorded; a session over the bound gets every recall in full, as a recall without a session does).
The kinds are people's sessions, the agent hooks' (``agent:hook:``) and other agents' (review 95: an agent's 300
throw-away recalls through the Python API filled the one room of every agent session in 0.8 s, and every hook
session after them recorded nothing: each prompt gave the same context again, and a lesson rejected after the
session start gave it was never named as no longer in force). A session's lesson marks are recorded whatever the
room (there are few: only people approve lessons; the store bounds them per session apart from its records'), so a
session is always told that a lesson it was given is no longer in force; they do not make the session known.

An agent's sessions are kept apart from people's (:func:`stored_session`: stored as ``agent:<surface>:<id>``): a
person's session id is no secret (a notebook's is in ``session_seen`` for anyone who reads the vault), and an agent
that recalled under it marked what it was given as seen there, so the person's next recall left it out as not new.
Each agent surface's sessions are apart too: the hooks' session ids are readable in ``agent-sessions.json``, and an
MCP ``recall(session_id=<a hook session's id>)`` marked what that Claude Code session was given (review 27). An MCP
server's sessions are its own too: it names them ``<nonce>:<id>`` with a random nonce of its process
(``mcp._handle.Handle.session_key``), so two agents' servers naming the same id ("session-1") share no delta (review
71); they are bounded as every agent session is (the registry's sessions a mind and the vault keep). On a
team vault each agent login's sessions are apart too (``agent:<login>:<surface>:<id>``, the schema's
``session_key``), and the server refuses an agent's row for any other session (migration 12).

A lesson the session was given in full and that is no longer in force as it was given (withdrawn, run out, rejected,
or approved again with another wording) is named by the wording the session was given (:func:`no_longer`, at most
:data:`GONE_NAMED` an answer), so the agent can tell which of the lessons it holds no longer applies (review 87:
the banner said "the approved lesson shown earlier is still in force" after one of two was withdrawn); once told, the
session's mark for it holds :data:`GONE` and it is not named again. A lesson's marks outlive its deletion (a
rejection: schema v14, team migration 33; its wording is then read from its history), and a purge leaves them
reading :data:`PURGED` (no digest of its text): the lesson is named as deleted by a person, without its wording
(s21: a lesson rejected after approval, or purged, took its marks with it, and the agent went on following it).

A caller that delivers the answer after the recall returns (the agent hook prints it) records it only once it is
delivered (``record=False``, then :meth:`~synapse_nb.recall.types.Recall.mark_given`): a hook killed between its
recall and its print left records marked as given that the session never got (review 27), and it names what its
print held whole: a record its cut left out is not marked (review 31: the hooks' cuts marked what they removed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from synapse_nb._util import fmt_ts
from synapse_nb.errors import PermissionDeniedError, StoreError, ValidationError
from synapse_nb.models import Lesson, Record
from synapse_nb.recall.types import RecallItem

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["AGENT_SESSION_PREFIX", "GONE", "GONE_KEY", "GONE_NAMED", "GONE_WHY", "PURGED", "SESSIONS_PER_HOUR", "Gone",
           "Marker", "check_session", "mark_records", "no_longer", "record_given", "seen_digests", "stored_session",
           "told_of"]

#: What a recall made with ``record=False`` leaves its caller: record what was given (only these ids; None: all).
Marker = Callable[[Collection[str] | None], None]

#: The digest a session's mark holds for a lesson it was told is no longer in force (never a record's digest).
GONE = "gone"
#: How a part of a recall's text that names a lesson no longer in force gives its id (``gone:<id>``): delivered whole,
#: the lesson is marked :data:`GONE`, apart from its own id (a new wording of it given whole)
GONE_KEY = "gone:"
#: The digest a session's mark holds for a lesson a person purged (the store writes it: its digest went with its
#: text); the session is told a lesson it was given was deleted, never in what words.
PURGED = "purged"
#: Most lessons no longer in force one answer names by their wording (the rest are counted, and named next).
GONE_NAMED = 5
#: Why a lesson a session was given is no longer in force as given: "out" (withdrawn or run out: stored, not in force),
#: "reworded" (approved again in other words), "rejected" (a person deleted it; its wording read from its history),
#: "purged" (a person purged it: no wording is left to name it by), "unknown" (neither the lesson nor its history can
#: be read here: a team vault's agent role).
GONE_WHY = ("out", "reworded", "rejected", "purged", "unknown")
#: A lesson the session was given that is no longer in force as given: (id, the wording it was given, why: one of
#: :data:`GONE_WHY`). The wording is None when it cannot be read here (a team vault's agent role reads no withdrawn
#: lesson nor its history) and for a purged one.
Gone = tuple[str, str | None, str]

#: New sessions of a kind (people's, the agent hooks', other agents') a mind records in an hour (what each was given);
#: a session past it is not recorded, but for its lesson marks (review 95).
SESSIONS_PER_HOUR = 256
#: How an agent's session ids are stored: never the same as a person's.
AGENT_SESSION_PREFIX = "agent:"


def stored_session(ctx: Context, session: str) -> str:
    """The key ``session`` is kept under for this actor: an agent's ids are prefixed with the surface, so no agent
    can mark what a person's session was given, nor an MCP call what a hook's session was.

    >>> from types import SimpleNamespace as NS
    >>> stored_session(NS(actor="agent", surface="mcp"), "s1"), stored_session(NS(actor="agent", surface="hook"), "s1")
    ('agent:mcp:s1', 'agent:hook:s1')
    >>> stored_session(NS(actor="user", surface="notebook"), "nb-1a2b3c4d5e6f")
    'nb-1a2b3c4d5e6f'
    """
    return f"{AGENT_SESSION_PREFIX}{ctx.surface}:{session}" if ctx.actor == "agent" else session



def check_session(session: object) -> None:
    """A session id a recall (or a session's start) accepts: None, or a non-empty printable string of at most 200
    characters (a :class:`~synapse_nb.errors.ValidationError` saying so otherwise)."""
    # isprintable() is False for control characters and lone surrogates alike
    if session is not None and (not isinstance(session, str) or not session.strip() or len(session) > 200
                                or not session.isprintable()):
        raise ValidationError("session must be a non-empty printable string of at most 200 characters")


def seen_digests(ctx: Context, session: str | None, ids: Sequence[str]) -> dict[str, str]:
    """id -> digest of what ``session`` was given, for these ids and every lesson (one read; empty without a
    session)."""
    if session is None:
        return {}
    return ctx.store.sessions.seen(ctx.mind, stored_session(ctx, session), list(dict.fromkeys(ids)), lessons=True)


def no_longer(ctx: Context, session: str | None, lessons: Sequence[Lesson],
              seen: Mapping[str, str]) -> tuple[Gone, ...]:
    """The lessons ``session`` was given in full that are not in force now as it was given them: withdrawn, run out,
    approved again with another wording (review 87), rejected or purged (s21), by id, each with the wording it was
    given when that can be read (the lesson as stored, or the version of its history the session's digest names: only
    the words the session already holds, never a wording it was not given; a purged one's none) and why
    (:data:`GONE_WHY`). A lesson approved again with the same words (a new expiry) is not one: its item is given
    again, unchanged. One out of force whose history this answer did not read (past :data:`GONE_NAMED` reads) is left
    to the next answer, which names it. ``seen``: :func:`seen_digests` (every lesson's mark is in it). Empty without a
    session.

    The lesson's row is believed, not its mark (review 97: an agent login's SQL set its session's mark of the one
    lesson in force to :data:`PURGED`, and the session was told a person had deleted it, "do not follow it"): a
    :data:`PURGED` or :data:`GONE` mark of a lesson in force names nothing (the lesson is given in full again), and a
    :data:`PURGED` mark of a lesson this role reads as stored is named as no longer in force, without a wording and
    not as a person's deletion."""
    if session is None:
        return ()
    now = {x.id: x for x in lessons}
    # a lesson in force is the lesson's row, whatever its mark says: a 'purged' mark on it is none a purge left (a
    # purge deletes the lesson), and it is given again in full as a lesson with no mark is (review 97)
    changed = {rid: d for rid, d in seen.items()
               if rid.startswith("les_") and d != GONE and (rid not in now or d not in (now[rid].digest, PURGED))}
    if not changed:
        return ()
    purged = _purged(ctx, [rid for rid, d in changed.items() if d == PURGED])
    words, read = _given_wording(ctx, {rid: d for rid, d in changed.items() if rid not in purged})
    out: list[Gone] = []
    for rid in sorted(changed):
        text, stored = words.get(rid, (None, False))
        if rid in purged:
            out.append((rid, None, "purged"))
        elif rid in now:  # given now in its new words: named now, or counted when they cannot be read
            if text != now[rid].text:
                out.append((rid, text, "reworded"))
        elif rid in read:
            out.append((rid, text, "unknown" if text is None else "out" if stored else "rejected"))
    return tuple(out)


def _purged(ctx: Context, ids: Sequence[str]) -> set[str]:
    """Of the lessons whose marks read :data:`PURGED`, those a purge removed: not stored (a purge deletes the record).
    One this role reads as stored (withdrawn, or in force on another branch) was not purged, whatever its mark says
    (review 97: an agent login's SQL wrote the mark): it is named as any lesson whose given wording cannot be
    matched, without a wording. Where the role may not read it, the mark is believed."""
    if not ids:
        return set()
    try:
        stored = ctx.stored(ids)
    except (StoreError, PermissionDeniedError):
        return set(ids)
    return {rid for rid in ids if rid not in stored}


def told_of(gone: Sequence[Gone]) -> tuple[list[Gone], list[Gone], list[Gone], int]:
    """How an answer tells ``gone``: the lessons it names by their wording (:data:`GONE_NAMED` at most), those it
    counts whose wording cannot be read here and those purged (each told, never to be named), and how many more it
    counts only (named by the next answers). The first three are marked :data:`GONE` once delivered."""
    words = [g for g in gone if g[1] is not None]
    unread = [g for g in gone if g[1] is None and g[2] != "purged"]
    return words[:GONE_NAMED], unread, [g for g in gone if g[2] == "purged"], len(words[GONE_NAMED:])


def _given_wording(ctx: Context, digests: Mapping[str, str]) -> tuple[dict[str, tuple[str, bool]], set[str]]:
    """Lesson id -> the wording it had when it was given with that digest, and whether the lesson is stored: the
    lesson as stored (one run out reads as expired; it was given approved), else the first version in its history
    with that digest (a withdrawn, re-worded or rejected one: a rejected lesson's marks outlive it), for
    :data:`GONE_NAMED` lessons at most past the stored ones; and the ids it looked for (all of them when this role
    may not read them: they cannot be named here)."""
    def given(rec: object, digest: str) -> str | None:
        ok = isinstance(rec, Lesson) and digest in (rec.digest, replace(rec, status="approved").digest)
        return rec.text if ok and isinstance(rec, Lesson) else None

    out: dict[str, tuple[str, bool]] = {}
    read: set[str] = set()
    try:
        stored = ctx.stored(digests)
        for rid, rec in stored.items():
            if (text := given(rec, digests[rid])) is not None:
                out[rid] = (text, True)
        read.update(out)
        for rid in [r for r in sorted(digests) if r not in out][:GONE_NAMED]:
            read.add(rid)
            found = (given(e.previous, digests[rid]) for e in ctx.store.history.of_record(rid) if e.mind == ctx.mind)
            if (text := next((t for t in found if t is not None), None)) is not None:
                out[rid] = (text, rid in stored)
    except (StoreError, PermissionDeniedError):  # a role that may not read them: counted, not named
        return out, set(digests)
    return out, read


def record_given(ctx: Context, session: str | None, kept: list[RecallItem], lessons: list[Lesson],
                 seen: dict[str, str], now: str, *, record: bool = True,
                 gone: Sequence[Gone] = ()) -> tuple[set[str], Marker | None]:
    """Record what ``session`` is given now (one write): the ids of lessons it was shown before, unchanged, and
    with ``record`` False the write left for the caller to make once the answer is delivered (else None); the
    caller names the ids its delivery held whole (None: all), and only those are recorded (review 31). A lesson of
    ``gone`` whose line was delivered (``gone:<id>``) is marked :data:`GONE`, unless a new wording of it was given
    whole too (then that wording's digest is its mark)."""
    if session is None:
        return set(), None
    shown_before = {x.id for x in lessons if seen.get(x.id) == x.digest}
    named, unread, purged, _ = told_of(gone)
    told = [(g[0], GONE) for g in named + unread + purged]
    given = [(k.id, k.record.digest) for k in kept] + [(x.id, x.digest) for x in lessons if x.id not in shown_before]
    done: list[bool] = []

    def write(only: Collection[str] | None = None) -> None:
        if done:  # once: a second call records nothing new
            return
        done.append(True)
        marks = [g for g in told if only is None or GONE_KEY + g[0] in only]  # first: a wording given wins
        if marks := marks + [g for g in given if only is None or g[0] in only]:
            # a session holding a record's mark is known; one holding lessons' alone may be one the room refused
            _mark(ctx, session, marks, known=any(not rid.startswith("les_") for rid in seen), now=now)

    if not record:
        return shown_before, write
    write()
    return shown_before, None


def mark_records(ctx: Context, session: str, records: Sequence[Record]) -> None:
    """Record ``records`` as given to ``session`` outside a recall (what a session's start listed:
    :func:`synapse_nb.recall.start.start_memory`), as a recall records what it gives: the per-turn recall leaves them
    out until they change (their digest). Never fails: a lost mark gives a record again."""
    if records:
        _mark(ctx, session, [(r.id, r.digest) for r in records], known=False, now=ctx.now_ts())


def _mark(ctx: Context, session: str, given: list[tuple[str, str]], *, known: bool, now: str) -> None:
    store = ctx.store
    if store.readonly:
        return
    try:
        # a session that was given before is known; another is recorded only within the hour's bound
        since = None if known else fmt_ts(ctx.now() - timedelta(hours=1))
        store.sessions.mark(ctx.mind, stored_session(ctx, session), given, now, new_since=since,
                            new_limit=SESSIONS_PER_HOUR)
    except (StoreError, PermissionDeniedError) as exc:  # delta state is a convenience: never fail a recall for it
        # (a team vault's server bounds an agent's session state rows an hour, migration 12)
        import logging  # only on this rare path: logging costs a cold hook ~3 ms to import

        logging.getLogger("synapse_nb.recall").warning("could not record what session %s has seen: %s", session, exc)
