"""What each agent hook event does on the vault (:mod:`synapse_nb.agents.hooks` runs the process and prints).

Every handler gets the vault opened as the agent through a :class:`~synapse_nb.vault.VaultSession` that never
creates one (read-only with ``SYNAPSE_READONLY=1``, when ``writable`` is False and nothing is written) and returns a
:class:`~synapse_nb.agents.hooks.HookAnswer`: the context for the agent (empty: print nothing) and a notice for the
human. The per-session counts are in
:mod:`synapse_nb.agents.sessions`.

>>> from synapse_nb.agents.events import parse_event
>>> handle(parse_event("prompt", "", session="s1", text="how do we deploy?"), vault="/tmp/project")  # doctest: +SKIP
HookAnswer(context='', notice='', stderr='')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from synapse_nb.agents.events import (
    EDIT_TOOLS,
    MAX_CONTEXT_CHARS,
    MAX_PROMPT_CHARS,
    HookAnswer,
    HookEvent,
    cut_parts,
)
from synapse_nb.errors import SynapseError
from synapse_nb.render import plural

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.agents.sessions import SessionState
    from synapse_nb.models import Lesson
    from synapse_nb.recall.assembly import Part
    from synapse_nb.recall.delta import Gone
    from synapse_nb.vault import Vault

__all__ = ["SESSION_START_TOKENS", "handle"]

#: The session-start answer's token budget (the restore pack has its own: ``recall.pack.RESTORE_TOKENS``).
SESSION_START_TOKENS = 2000
#: Each field of the latest checkpoint a session's start shows is cut to this many characters (it has at most half
#: the answer: review 39, an agent's checkpoint of four 32,768-character fields, read whole, kept SessionStart past
#: its time limit, and every new session started without the banner).
SESSION_START_FIELD_CHARS = 1200
#: The person's SessionStart notice counts the approved lessons that ran out within this many days (the default
#: ``lesson_expiry_days``: a week's sessions each say it, then it is ``synapse-nb lessons list``'s to show).
EXPIRED_NOTICE_DAYS = 7
#: The person's notice when a prompt's recall answered without its semantic channel (Recall.semantic_off).
OFF_NOTICE = ("synapse-nb: recall answered without the semantic channel (its index could not be read), so records "
              "found only by meaning were left out; run `synapse-nb index check --repair` in your own terminal")
#: The same when the channel's model was not loaded: the vault's ``recall_embedder`` names code or files no person
#: set for it as this user on this machine (a borrowed vault's, a downloaded archive's: review 69).
REFUSED_NOTICE = ("synapse-nb: recall answered without the semantic channel: this vault's recall_embedder names code "
                  "or model files no person set for it as this user on this machine, which are not loaded; if you "
                  "trust that code, run `synapse-nb settings set recall_embedder SPEC` in your own terminal")
#: The person's notice when it answered without the channel because its model could not be loaded here (review 68).
MODEL_NOTICE = ("synapse-nb: recall answered without the semantic channel (its model could not be loaded here: "
                "`synapse-nb recall query --json TEXT` says why in semantic_off), so records found only by meaning "
                "were left out; install the model's extra (wordllama: pip install 'synapse_nb[semantic]') or set "
                "recall_semantic to 0 in your own terminal")


def _state_key(v: Vault, event: HookEvent) -> str:
    return f"{v.mind}:{event.session or '-'}"


def _relative(v: Vault, path: str) -> str:
    """A tool's file path as the vault's records name files: relative to the work tree when inside it."""
    p = Path(path)
    roots = [r for r in ((v.repo.work_tree if v.repo is not None else None), v.project_dir) if r is not None]
    if p.is_absolute():
        for root in roots:
            try:
                return p.resolve().relative_to(Path(root).resolve()).as_posix()
            except (ValueError, OSError):
                continue
    return path


def _pending_notice(v: Vault) -> str:
    """For the human only: how many lessons wait for a decision, and what made them, and how many approved lessons ran
    out in the last :data:`EXPIRED_NOTICE_DAYS` days, with how to approve them again (never shown to the agent's
    context; counts only, no agent text, no id). Counts any handle may read (``Lessons.waiting_by``,
    ``Lessons.expired_count``), so the hook's own handle asks: no second vault opened. A lesson an agent wrote by
    hand is no revert's: it is counted apart (review 27: the notice said "from reverted changes" of three lessons an
    agent created). Review 86: an approved lesson that ran out left every agent surface without a word to anyone."""
    try:
        made = v.lessons.waiting_by()  # one read for the three counts
        counts = [(made[by], what) for by, what in _MADE_BY]
        expired = v.lessons.expired_count(timedelta(days=EXPIRED_NOTICE_DAYS))
    except SynapseError:
        return ""
    n = sum(c for c, _ in counts)
    notes = []
    if n:
        parts = " and ".join(plural(c, "lesson") + what for c, what in counts if c)
        notes.append(f"{parts} wait{'' if n != 1 else 's'} for your review (synapse-nb lessons review, in your own "
                     "terminal)")
    if expired:
        it, they = ("it", "it is") if expired == 1 else ("them", "they are")
        notes.append(f"{plural(expired, 'approved lesson')} ran out in the last {EXPIRED_NOTICE_DAYS} days, so "
                     f"{they} no longer given to the agent: approve {it} again in your own terminal with "
                     f"synapse-nb lessons approve ID (synapse-nb lessons list --status expired lists {it})")
    return "synapse-nb: " + "; ".join(notes) if notes else ""


#: Why a borrowed vault's approved lessons are not in force here (``Borrowed.reason``), as the person's notice says it:
#: fixed words, no path and nothing of the vault (a path or a symlink's target is anyone's choice).
_NOT_HERE = {
    "tracked": "the vault reads as having come with the repository (its lessons approved by whoever committed it)",
    "symlink": "the vault is reached through a symlink that leads out of the project",
    "unrecorded": "this checkout's record of its vaults (.git/synapse-nb/vaults.json) cannot be read, so the vault "
                  "reads as borrowed",
}


def _not_here(v: Vault) -> tuple[str, str]:
    """For the person only: that approved lessons of this vault do not reach the agent, because the vault reads as
    borrowed (:mod:`synapse_nb.borrowed`), as one fixed line with the count and the command that says why and what to
    do; and the state it tells of (the reason and the count: a prompt tells a session once per state). ("", "")
    when every approved lesson is in force. Review 95: an agent's one write (``echo garbage > .git/synapse-nb/
    vaults.json``) made the vault read as borrowed, every session started without the approved lessons, and the
    person was never told (what the agent read went to its context, what the hook knew to stderr)."""
    if v.borrowed is None:
        return "", ""
    try:
        n = v.lessons.not_in_force()["borrowed"]
    except SynapseError:
        return "", ""
    if not n:
        return "", ""
    are = "is" if n == 1 else "are"
    return (f"synapse-nb: {plural(n, 'approved lesson')} of this vault {are} NOT given to the agent: "
            f"{_NOT_HERE[v.borrowed.reason]}; run `synapse-nb memory status` in your own terminal (it says why and "
            f"what to do)"), f"{v.borrowed.reason}:{n}"


def _notices(*notes: str) -> str:
    return "\n".join(n for n in notes if n)


#: Who made a pending lesson (``Lessons.waiting_by``) and how the human's notice says it.
_MADE_BY = (("git", " from reverted changes"), ("agent", " an agent wrote by hand (not from a revert)"),
            ("user", " written by hand"))


def _fit(before: list[Part], lessons: Sequence[Lesson], shown_before: Iterable[str], after: list[Part],
         limit: int, owed: Collection[str] = (), gone: Sequence[Gone] = ()) -> tuple[str, set[str]]:
    """``before``, the banner of ``lessons`` and ``after`` (a blank line between each) in ``limit`` characters,
    and the ids of the lessons and records printed whole (the only ones marked as given).

    What follows the banner (a prompt's hits, the latest checkpoint) keeps what it needs up to half the limit; the
    banner gives in full each lesson that fits in the rest (longest waiting first; one too long is skipped, not a
    stop) and names the others by id, unmarked, so the next prompts give them in full (review 31: a long banner
    took the whole limit, every hit after it was cut, and the lessons and hits the cut removed were marked as given;
    review 34: one long lesson on top kept every shorter one out). A lesson in ``owed`` (one an earlier answer
    named only) that fits in the whole limit comes first and takes the room it needs; what follows gets what is
    left (cut, or left for later: review 35, a 6,000-character lesson was named only on every prompt while an agent
    wrote matching memories each turn). The lessons of ``gone`` (given earlier in the session, no longer in force as
    given) are named in the banner (review 87)."""
    from synapse_nb.recall.assembly import banner_parts, join_blocks, lesson_item

    sep: list[Part] = [("", ())]

    def size(ps: list[Part]) -> int:
        return sum(len(t) + 1 for t, _ in ps)

    whole = limit - size(before + sep + sep)
    room = whole - min(size(after), limit // 2)
    shown = set(shown_before)
    extra = [len(lesson_item(i, x)) + 8 for i, x in enumerate(lessons, 1) if x.id in owed and x.id not in shown]
    room = min(whole, room + sum(n for n in extra if n <= whole))
    banner = banner_parts(lessons, shown, room, first=owed, gone=gone)
    return cut_parts(join_blocks(before, banner, after), limit)


def _left(v: Vault, event: HookEvent, lessons: Sequence[Lesson], shown_before: Iterable[str], kept: set[str],
          owed: Sequence[str]) -> None:
    """Keep in the session's state the lessons an answer named only, so the next answer gives them the room."""
    from synapse_nb.agents.sessions import session_state

    shown = set(shown_before)
    left = [x.id for x in lessons if x.id not in shown and x.id not in kept]
    if left != list(owed):
        with session_state(v.path, _state_key(v, event)) as st:
            st.left = left


def _session_start(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import session_state
    from synapse_nb.recall.start import none_approved, start_memory

    lessons: Sequence[Lesson] = list(v.lessons.in_force())
    mark: Callable[[Collection[str] | None], None] | None = None
    owed: list[str] = []
    session: str | None = None
    not_here, state = _not_here(v)  # every start tells the person (review 95)
    if event.session and writable:
        # every start is a new delta epoch (the banner is given in full; /clear and compaction dropped the rest), and
        # the banner's lessons are marked as given to it only once the answer is printed (HookAnswer.delivered)
        with session_state(v.path, _state_key(v, event)) as st:
            owed = list(st.left)
            st.new_epoch()
            st.told = state  # the session's prompts do not say it again
            session = st.delta_session(event.session)
        r = v.recall("", session=session, record=False)
        lessons, mark = r.lessons, r.mark_given
    marks = [mark] if mark is not None else []  # what the answer gives, marked once it is delivered
    latest = v.checkpoints.latest()  # the newest saved on purpose; the automatic ones since are listed under it
    if event.source == "compact":
        pack = v.restore_pack(latest)
        context = "synapse-nb restore pack after compaction:\n\n" + pack
        kept = set(pack.lessons)  # the lessons the pack printed whole, by id (its text was searched for their items)
    else:
        head = "synapse-nb project memory (relevant records are recalled on each prompt):"
        ckp = (v.checkpoints.resume(latest, SESSION_START_FIELD_CHARS, heading="Latest checkpoint on this branch:\n")
               .text if latest else "No checkpoint on this branch yet.")  # the legend before an agent's checkpoint
        if v.borrowed is not None:  # like every recall and pack (review 23: a session started without it)
            head = f"{v.borrowed.line}\n{head}"
        # people's key memories and the counts, as MCP get_approved_memory says them (recall.start: review 93),
        # before the checkpoint (an agent's long one cuts only itself); those printed whole are marked as given to
        # the session's delta once delivered, so a prompt does not give them again unchanged (a twenty-second pass)
        start = start_memory(v.memories, "", session=session)
        after: list[Part] = [*start.parts, ("", ()), (ckp, ())]
        if lessons:
            context, kept = _fit([(head, ())], lessons, (), after, SESSION_START_TOKENS * 4, owed)
            if mark is not None:
                _left(v, event, lessons, (), kept, owed)
        else:
            context, kept = cut_parts([(f"{head}\n\n{none_approved(v.lessons)}\n", ()), *after],
                                      SESSION_START_TOKENS * 4)
        if session is not None:
            marks.append(start.mark_given)

    def given() -> None:
        for m in marks:
            m(kept)

    return HookAnswer(context=context, notice=_notices(_pending_notice(v), not_here),
                      delivered=given if marks else None)


def _prompt(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    """Recall for the prompt. Its state (the task, the delta epoch) is settled before the recall, within the lock's
    short wait, and what the answer gives is marked only once it is printed (review 27: the recall marked it, then
    the hook waited on an agent's ``flock`` until it was killed, and the session never got what it was "given"),
    and only what its cut kept (review 31). The banner leaves the hits their room (:func:`_fit`)."""
    from synapse_nb.agents.sessions import read_state, session_state
    from synapse_nb.recall.assembly import hits_parts
    from synapse_nb.render import (
        BORROWED_EMBEDDER_LINE,
        SEMANTIC_NO_MODEL_LINE,
        SEMANTIC_OFF_LINE,
        SEMANTIC_PEOPLE_LINE,
        semantic_off_line,
        shorten,
    )

    prompt = (event.prompt or "").strip()
    if not prompt:
        return HookAnswer()
    session = None
    owed: list[str] = []
    # the person is told once a session that approved lessons do not reach the agent (its start told it too; where
    # the session file cannot be written, every prompt tells it)
    not_here, state = _not_here(v)
    if event.session and writable:
        with session_state(v.path, _state_key(v, event)) as st:
            owed = list(st.left)
            st.task = st.task or shorten(prompt, 200)
            st.prompt = shorten(prompt, 200)
            session = st.delta_session(event.session)  # a new epoch when none, or an old one
            not_here, st.told = ("" if st.told == state else not_here), state
    elif event.session:
        st = read_state(v.path, _state_key(v, event))
        session = st.delta_session(event.session)
        not_here = "" if st.told == state else not_here
    r = v.recall(prompt[:MAX_PROMPT_CHARS], session=session, record=False)
    # a recall that answered without its semantic channel says so first, in the package's words, and the person is
    # told how to repair it (review 58: a rule found only by meaning left every answer, silently)
    line = semantic_off_line(r.semantic_off)
    off: list[Part] = [(line, ())] if line is not None else []
    notice = {BORROWED_EMBEDDER_LINE: REFUSED_NOTICE, SEMANTIC_NO_MODEL_LINE: MODEL_NOTICE,
              SEMANTIC_OFF_LINE: OFF_NOTICE}.get(line or "", "")  # the person's notice for the agent's line
    notice = _notices(notice, not_here)
    off += [(SEMANTIC_PEOPLE_LINE, ())] if r.agents_waiting and not off else []  # agents' wait (review 67)
    if r.items:
        before: list[Part] = [(r.borrowed["line"], ())] if r.borrowed else []
        hits = hits_parts(r.query, r.items, given=r.given_before)  # "more on this" after what the session was given
        context, kept = _fit(before + off, r.lessons, r.shown_before, hits, MAX_CONTEXT_CHARS, owed, r.no_longer)
        if session and writable:
            _left(v, event, r.lessons, r.shown_before, kept, owed)
        return HookAnswer(context=context, notice=notice, delivered=lambda: r.mark_given(kept))
    # a lesson the session was not shown (approved since, changed, or left out for room) is given alone, with the
    # count of those it was shown (still in force), and one it was shown that is no longer in force is named
    new_lessons = [x for x in r.lessons if x.id not in r.shown_before] if session else []
    if new_lessons or r.no_longer:
        context, kept = _fit(off, r.lessons, r.shown_before, [], MAX_CONTEXT_CHARS, owed, r.no_longer)
        if writable:
            _left(v, event, r.lessons, r.shown_before, kept, owed)
        return HookAnswer(context=context, notice=notice, delivered=lambda: r.mark_given(kept))
    if line is not None or not_here:  # "nothing new" without the channel is no answer on meaning: the agent is
        return HookAnswer(context=line or "", notice=notice)  # told, the person too (and of lessons not in force)
    return HookAnswer()  # nothing new: no noise in the agent's context


def _prompts(st: SessionState) -> str:
    """The session's prompts as its automatic checkpoints name them: what the person typed, said to be prompts, never
    what the session is doing (review 86: the first prompt, "continue" or "ok go ahead" became a checkpoint's doing)."""
    if st.prompt and st.task and st.prompt != st.task:
        return f"; the session's first prompt: {st.task}; its latest: {st.prompt}"
    return f"; the session's prompt: {st.prompt or st.task}" if st.prompt or st.task else ""


def _pre_compact(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    """An automatic checkpoint of what the session knows (the files it edited, its prompts), then the restore pack:
    the checkpoint saved on purpose with what happened since (this one among it). An automatic checkpoint says
    nothing of the work's state, so it never takes the place of the one a session resumes from
    (:meth:`~synapse_nb.kinds.checkpoints.Checkpoints.latest`), nor carries its words under another mark."""
    from synapse_nb.agents.sessions import read_state, session_state

    if not writable:
        return HookAnswer(context=v.restore_pack())
    key = _state_key(v, event)
    st = read_state(v.path, key)
    why = "saved before the agent's context was compacted" + (f" ({event.source})" if event.source else "")
    c = v.checkpoint(f"{why}{_prompts(st)}", files=list(dict.fromkeys([*st.changed, *st.files]))[:200] or None,
                     origin="auto")
    with session_state(v.path, key) as s:
        s.edits, s.files = 0, []
        s.checkpoints += 1
        s.compactions += 1
        s.new_epoch()  # compaction drops what recall gave the context (lessons too): the delta starts afresh
    # the JSON form (Claude Code's PreCompact) carries no context: the pack reaches the agent with SessionStart's
    # "compact" once the context is compacted (review 93: the notice said it followed)
    saved = f"synapse-nb: saved checkpoint {c.id} before compaction"
    return HookAnswer(context=v.restore_pack(), notice=f"{saved}; the restore pack follows it on stdout",
                      json_notice=f"{saved}; the agent gets it in the restore pack when its session starts again "
                                  "after the compaction (the SessionStart hook, source compact)")


def _post_tool(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import session_state
    from synapse_nb.kinds.autocheckpoint import AutoCheckpoint

    edit = event.tool_name in EDIT_TOOLS if event.tool_name else bool(event.files)  # the generic form: --file
    if not writable or not edit:
        return HookAnswer()
    every = AutoCheckpoint.every_from(v.settings.get, "file")
    with session_state(v.path, _state_key(v, event)) as st:
        st.touch(_relative(v, event.files[0]) if event.files else "")
        for extra in event.files[1:]:
            st.touch(_relative(v, extra))
            st.edits -= 1  # one tool call is one edit, whatever it lists
        if st.edits >= every:
            _auto_checkpoint(v, st)
    return HookAnswer()


def _auto_checkpoint(v: Vault, st: SessionState) -> None:
    """Every N edits: the files and the prompts (:func:`_prompts`), an automatic checkpoint listed under the one
    saved on purpose, never in its place (review 86: it had no next step, and became "the latest")."""
    v.checkpoint(f"auto checkpoint after {st.edits} file edits by the agent{_prompts(st)}", files=st.files[:200],
                 origin="auto")
    st.edits, st.files = 0, []
    st.checkpoints += 1


def _episode(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import read_state, session_state

    key = _state_key(v, event)
    if not writable or not read_state(v.path, key).changed:
        return HookAnswer()
    with session_state(v.path, key) as st:
        if st.changed:
            from synapse_nb.provenance import FILE_NAMES, file_names

            n = len(st.changed)
            # the names as quoted data, as every reader lists them: a file an agent named like a rule ("x] [main,
            # approved] ...") reads as a name, never as the episode's words (review 71)
            shown = file_names(st.changed, width=2_000)
            # the prompts said to be prompts, first and latest, as the automatic checkpoints name them: the first
            # alone ("task: ok go ahead") named a session by what the person typed first, not what it did
            v.episodes.log(f"agent session {event.session or '-'}"[:200], status="unknown",
                           outcome=f"changed {plural(n, 'file')} ({FILE_NAMES}): {shown}{_prompts(st)}",
                           refs=st.changed[:200])
            st.changed = []
            st.episodes += 1
    return HookAnswer()


_HANDLERS = {"session-start": _session_start, "prompt": _prompt, "pre-compact": _pre_compact,
             "post-tool": _post_tool, "stop": _episode, "session-end": _episode}


def _project_of(cwd: str | None) -> str | None:
    """The folder a session's ``cwd`` belongs to: its git work tree when it is in one (whose vault is the project's),
    else ``cwd``. The session's own folder holding a ``synapse.db`` is no vault of the project's: an agent can drop
    one there (review 27; review 31 did it in a team project, and in a folder it made a repository of its own: a
    nested work tree is a project of its own, and stays so)."""
    if not cwd:
        return cwd
    from synapse_nb.gitscope.repo import find_repo

    try:
        repo = find_repo(cwd)
    except (OSError, SynapseError):
        return cwd
    return cwd if repo is None else str(repo.main_work_tree)


def handle(event: HookEvent, *, vault: str | None = None, mind: str = "default",
           env: Mapping[str, str] | None = None, deliver: Callable[[HookAnswer], None] | None = None) -> HookAnswer:
    """Run ``event`` on its vault, as the agent; raises what goes wrong (:func:`respond` turns it into stderr).

    The vault: ``vault`` (``--vault``), else ``SYNAPSE_HOME``, else the project of the event's ``cwd`` (its git work
    tree, else the folder), else the current folder's.
    ``deliver`` prints the answer; only after it returns is what the answer gives marked as given to the session
    (without it, when the answer is returned), so a run killed or failing before it printed marks nothing.
    """
    from synapse_nb.vault import VaultSession

    env = os.environ if env is None else env
    path = vault if vault is not None else (None if env.get("SYNAPSE_HOME", "").strip() else _project_of(event.cwd))
    # never creates a vault; read-only with SYNAPSE_READONLY; a team vault out of reach is an OfflineError (one line)
    with VaultSession(path, mind=mind, actor="agent", create=False, environ=env, surface="hook") as session:
        if session.readonly:
            answer = _HANDLERS[event.name](session.read(), event, False)
        else:
            v = session.write()
            # through an outside symlink every write is refused, the hook's session file included (review 4: it
            # wrote agent-sessions.json into the other folder, where the vault's own writes were refused)
            writable = v.borrowed is None or v.borrowed.refusal is None
            answer = _HANDLERS[event.name](v, event, writable)
        if deliver is not None:
            deliver(answer)
        # what the print would cut further was never fitted by its handler: nothing is marked, given again later
        if answer.delivered is not None and len(answer.context.strip("\n")) <= MAX_CONTEXT_CHARS:
            try:
                answer.delivered()
            except (SynapseError, OSError):  # a mark lost is given again later; the answer was printed
                pass
        return answer
