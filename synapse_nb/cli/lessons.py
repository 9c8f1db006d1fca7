"""``synapse-nb lessons``: lessons learnt from reverted changes; only a human approves them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from synapse_nb.borrowed import ELSEWHERE_BY
from synapse_nb.cli._common import (
    PROG,
    Group,
    JsonOpt,
    LimitOpt,
    People,
    YesOpt,
    echo_json,
    fail,
    group_help,
    limit_arg,
    listing_line,
    none_found,
    open_vault_for,
    print_record,
    record_json,
    require_human_here,
    state,
)
from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.gitscope import find_repo
from synapse_nb.kinds.lesson_approvers import approvals
from synapse_nb.provenance import file_names, inline, label_text, mark
from synapse_nb.render import (
    plural,
    shown_id,  # (review 41: an id as a reader shows it)
    when,
)

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.models import Lesson

__all__ = ["lessons_app"]


lessons_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Review lessons learnt from reverted changes (only a human approves them).",
    "synapse-nb lessons scan", "synapse-nb lessons review"))


def _lesson_text(les: Lesson, backing: str | None = None, elsewhere: bool = False) -> str:
    """A lesson for review: who created it and what backs it first, then each field as one quoted line
    (``elsewhere``: a borrowed vault's lesson awaiting local approval, its wording nobody's here)."""
    lines = [f"{shown_id(les.id)}  {mark(les)}  [{les.status}]  {when(les.created_at, seconds=True)}"]
    if backing:
        lines.append(f"  origin:   {backing}")
    lines.append(f"  summary:  {inline(les.summary)}")
    # where it holds, as its approved label will say (review 23: a branch never shown at review sat in the label)
    lines.append(f"  branch:   {label_text(les.branch) if les.branch else '(every branch)'}")
    if les.files_affected:
        lines.append(f"  files:    {file_names(les.files_affected)}")
    if les.analysis:
        who = "an agent" if les.analysis_by != "user" else "a human"
        lines.append(f"  analysis (written by {who}): {inline(les.analysis)}")
    if les.lesson_text and elsewhere:  # review 62: it read "user's wording", the committer's words
        lines.append(f"  lesson (wording {ELSEWHERE_BY}): {inline(les.lesson_text)}")
    elif les.lesson_text:
        lines.append(f"  lesson ({les.wording_by or 'user'}'s wording): {inline(les.lesson_text)}")
    if les.expires_at:
        lines.append(f"  expires:  {when(les.expires_at, seconds=True)}")
    return "\n".join(lines)


@lessons_app.command("scan")
def lessons_scan(
    ctx: typer.Context,
    max_commits: Annotated[int | None, typer.Option(
        "--max-commits", min=1, help="How far back the first scan looks.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Find git reverts not seen before and create one pending lesson for each (outside git, or before a first
    commit, none: a note on stderr says why).

    Examples:

        synapse-nb lessons scan

        synapse-nb lessons scan --max-commits 500 --json
    """
    from synapse_nb.vault import find_vault_dir  # here: the store and the kinds load only when a command runs

    project = find_vault_dir(state(ctx).vault)[1]
    if find_repo(project) is None:  # checked first: a scan that finds nothing must not create a vault
        from synapse_nb.kinds.lesson_scan import no_history_note

        typer.echo(f"note: {no_history_note(project, False)}", err=True)  # as vault.lessons.scan() says (review 68)
        echo_json([]) if as_json else typer.echo(plural(0, "new pending lesson"))
        return
    v = open_vault_for(ctx)
    created = v.lessons.scan(max_commits=max_commits)
    if created.note:  # a window cut or an unreadable commit (review 42): said on stderr, the JSON stays a list
        typer.echo(f"note: {created.note}", err=True)
    if as_json:
        if created.unread:  # an agent's scan: the lessons it made are not its to read, their count is (review 90)
            typer.echo(f"note: {created.said()}", err=True)
        echo_json([record_json(x) for x in created])
        return
    typer.echo(created.said())  # an agent's scan counts the lessons it made, not the none it may read (review 90)
    for les in created:
        typer.echo(listing_line(les))
    if created:
        typer.echo(f"review them with: {PROG} lessons review")


@lessons_app.command("list")
def lessons_list(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option("--status", "-s", metavar="pending|approved|expired",
                                               help="Only lessons in this state.")] = None,
    limit: LimitOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """List lessons (all, or one status): people's first (a lesson a person wrote or approved), then agents'
    drafts, each newest first. An approved lesson (in force or run out) says who approved it and when, on the line
    under it (a team vault: the login; a local vault: "a person"; --json: "approval"). With --limit, a line on stderr
    says how many it left out.

    Examples:

        synapse-nb lessons list --status pending

        synapse-nb lessons list --json
    """
    v = open_vault_for(ctx)
    # an agent's drafts never push a person's approved rule out of the limit (review 72; lessons are capped, so
    # reading them all is cheap)
    shown = People.of(v.lessons.list(status=status), limit_arg(limit), "lesson", "lessons")
    recs = shown.records
    borrowed = v.borrowed
    awaiting = {x.id for x in v.lessons.awaiting_local()} if borrowed is not None and v.actor == "user" else set()
    approved = approvals(v, recs)  # who approved each, and when (s21)
    if as_json:
        rows = []
        for r in recs:
            row = record_json(r)
            if borrowed is not None:  # each lesson says whether it is in force here
                row["awaiting_local_approval"] = r.id in awaiting
            row["approval"] = a.to_dict() if (a := approved.get(r.id)) is not None else None
            rows.append(row)
        echo_json(rows)
        if shown.more:
            typer.echo(shown.more, err=True)
        return
    if borrowed is not None:
        typer.echo(borrowed.line)
    empty = "" if recs else none_found(v.lessons.count(), "lesson", "lessons", f"no {status} lessons")
    if not recs:
        typer.echo(empty)
    for r in recs:
        typer.echo(listing_line(r) + ("  (approved elsewhere: awaiting local approval, not in force; "
                                     f"{PROG} lessons approve {shown_id(r.id)})" if r.id in awaiting else ""))
        if (a := approved.get(r.id)) is not None:
            typer.echo(f"    {a.line()}")
    if shown.more:
        typer.echo(shown.more, err=True)


#: What answer w approves for a borrowed vault's lesson awaiting local approval (the widget's button says the same).
ELSEWHERE_WORDING = "the wording approved elsewhere"
_ANSWERS = {"a": "a", "approve": "a", "w": "w", "wording": "w", "e": "e", "edit": "e", "r": "r", "reject": "r",
            "s": "s", "skip": "s", "q": "q", "quit": "q"}


def _ask_choice(wording: str | None) -> str:
    """One review answer (a/w/e/r/s/q); the end of input means quit. ``wording``: the wording w approves as it is
    (``"the agent's wording"``, :data:`ELSEWHERE_WORDING`), which a plain a does not approve (None: a does)."""
    prompt = (f"[w] approve {wording} as it is / [e]dit then approve / [r]eject / [s]kip / [q]uit"
              if wording else "[a]pprove / [e]dit / [r]eject / [s]kip / [q]uit")
    agent_wording = wording is not None
    for _ in range(5):
        try:
            raw = typer.prompt(prompt, default="s")
        except typer.Abort:
            return "q"
        answer = _ANSWERS.get(str(raw).strip().lower())
        if answer == "a" and agent_wording:
            typer.echo(f"the proposed wording is {wording}, not yours: answer w to approve it as it is, or e to word "
                       "it yourself")
            continue
        if answer:
            return answer
        typer.echo("please answer " + ("w, e, r, s or q" if agent_wording else "a, e, r, s or q"))
    return "q"


@lessons_app.command("review")
def lessons_review(ctx: typer.Context, yes: YesOpt = False) -> None:
    """Review pending lessons one at a time: approve, edit the text then approve, reject, or skip.

    Each lesson shows who created it and whether git has the revert it names, and who wrote each text. When the
    wording to approve is an agent's (its analysis, or the summary of a lesson an agent created), approving it
    takes the answer w ("approve the agent's wording as it is"); a plain a is for wording a human or a revert
    scan wrote. Answers are read from the terminal; from a pipe they need --yes (a human-only command):
    a / w / e / r / s, q to stop. In a borrowed vault (git tracks it, or a symlink leads to it from outside) the
    lessons approved elsewhere and awaiting local approval come after the pending ones; their wording is not yours,
    so approving it as it is takes w too ("approve the wording approved elsewhere as it is").

    Examples:

        synapse-nb lessons review

        printf 'e\\nNever retry payments without an idempotency key\\ns\\n' | synapse-nb lessons review --yes
    """
    require_human_here(ctx, yes, "reviewing lessons")
    v = open_vault_for(ctx)
    awaiting = list(v.lessons.awaiting_local())  # a borrowed vault: lessons approved elsewhere, not here
    pending = [*v.lessons.pending(), *awaiting]
    if v.borrowed is not None:
        typer.echo(v.borrowed.line)
    if not pending:
        typer.echo("no pending lessons: nothing to review")
        return
    done = {"approved": 0, "rejected": 0, "skipped": 0}
    also = f" ({len(awaiting)} approved elsewhere, awaiting local approval)" if awaiting else ""
    typer.echo(f"{plural(len(pending), 'pending lesson')}{also}. For each: [a]pprove, [e]dit then approve, [r]eject, "
               "[s]kip, [q]uit ([w] approves as it is a wording not yours: an agent's, or one approved elsewhere).")
    elsewhere_ids = {x.id for x in awaiting}
    for i, les in enumerate(pending, 1):
        wording, by = v.lessons.proposed_wording(les)
        elsewhere = les.id in elsewhere_ids
        typer.echo(f"\n({i}/{len(pending)}) " + _lesson_text(les, v.lessons.backing(les), elsewhere))
        who = ELSEWHERE_BY if elsewhere else "an agent" if by == "agent" else "a human" if by == "user" else \
            "the revert scan"
        typer.echo(f"  proposed wording ({who}): {inline(wording)}")
        answer = _ask_choice(ELSEWHERE_WORDING if elsewhere else "the agent's wording" if by == "agent" else None)
        if answer == "q":
            break
        if answer == "s":
            done["skipped"] += 1
            continue
        if answer == "r":
            v.lessons.reject(les.id)
            done["rejected"] += 1
            typer.echo(f"rejected {shown_id(les.id)}")
            continue
        text = None
        if answer == "e":
            try:
                text = typer.prompt("lesson text (one line)", default=inline(wording))
            except typer.Abort:
                break
            if (by == "agent" or elsewhere) and text == inline(wording):  # left as it was: approving it as the
                text, answer = None, "w"  # agent's (or as approved elsewhere), not as words the human wrote
        try:
            approved = v.lessons.approve(les.id, text=text, accept_agent_text=answer == "w" and by == "agent",
                                         seen=wording)
        except (ValidationError, ConflictError) as exc:  # a blank edit: say so and go on with the next lesson
            typer.echo(f"not approved: {exc}; skipped {shown_id(les.id)}")
            done["skipped"] += 1
            continue
        done["approved"] += 1
        typer.echo(f"approved {shown_id(approved.id)} until {when(approved.expires_at)}")
    typer.echo(f"\nreviewed: {done['approved']} approved, {done['rejected']} rejected, {done['skipped']} skipped")


@lessons_app.command("approve")
def lessons_approve(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    text: Annotated[str | None, typer.Option("--text", help="Your wording of the lesson (default: the wording "
                                             "approved before, else the analysis, else the summary).")] = None,
    accept_agent_text: Annotated[bool, typer.Option(
        "--accept-agent-text", help="Approve wording an agent wrote (its analysis, or the summary of a lesson it "
                                    "created) as it is; without it such wording is refused.")] = False,
    days: Annotated[int | None, typer.Option(
        "--days", min=1, max=3650, help="Days in force (default: the vault setting).")] = None,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Approve a pending lesson (or re-approve an expired one): it then heads every recall.

    A human-only command: refused in an agent's shell, and without a terminal unless --yes. Wording an agent
    wrote needs --accept-agent-text; at a terminal the command then shows that wording and asks before approving
    exactly what it showed (an agent may replace its analysis at any time; with --yes nothing is asked and the
    wording stored at that moment is approved). In a borrowed
    vault (git tracks it, or a symlink leads to it from outside), a lesson approved elsewhere is in force only once
    approved here: this records that approval outside the vault (in the repository's git dir).

    Examples:

        synapse-nb lessons approve les_3f9a --text "Never retry payments without an idempotency key" --days 30

        synapse-nb lessons approve les_3f9a --accept-agent-text
    """
    require_human_here(ctx, yes, "approving a lesson")
    v = open_vault_for(ctx)
    seen = None
    if text is None and accept_agent_text and not yes:  # at a terminal: approve what the human reads here
        shown = v.lessons.get(lesson_id)
        seen, by = v.lessons.proposed_wording(shown)
        in_force = shown.status == "approved" and v.lessons.approved_here(shown)  # the core says so, unasked
        if by == "agent" and not in_force:
            typer.echo(f"wording of lesson {shown_id(shown.id)}, written by an agent: {inline(seen)}", err=True)
            if not typer.confirm("approve this wording as it is?", default=False, err=True):
                fail(f"not approved: {shown_id(shown.id)} stays {shown.status}")
    les = v.lessons.approve(lesson_id, text=text, expiry_days=days, accept_agent_text=accept_agent_text, seen=seen)
    print_record(les, as_json, f"approved {shown_id(les.id)} {mark(les)} until {when(les.expires_at)}: "
                 f"{inline(les.lesson_text)}")


@lessons_app.command("reject")
def lessons_reject(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Reject a lesson: it is deleted. A human-only command (see lessons approve).

    Examples:

        synapse-nb lessons reject les_3f9a
    """
    require_human_here(ctx, yes, "rejecting a lesson")
    v = open_vault_for(ctx)
    les = v.lessons.reject(lesson_id)
    print_record(les, as_json, f"rejected {shown_id(les.id)}")


@lessons_app.command("withdraw")
def lessons_withdraw(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Withdraw an approval: the lesson stops heading recalls now and is pending again, its wording kept for a
    later approval. A human-only command (see lessons approve); `lessons reject` deletes a lesson instead.

    Examples:

        synapse-nb lessons withdraw les_3f9a
    """
    require_human_here(ctx, yes, "withdrawing a lesson's approval")
    v = open_vault_for(ctx)
    les = v.lessons.withdraw(lesson_id)
    print_record(les, as_json, f"withdrew the approval of {shown_id(les.id)}; it is pending again")


@lessons_app.command("adopt")
def lessons_adopt(ctx: typer.Context, yes: YesOpt = False, as_json: JsonOpt = False) -> None:
    """Adopt a borrowed vault as this checkout's own: every lesson approved in it is then in force here.

    A vault that came with the repository (a clone of a repository that commits .synapse/synapse.db) is borrowed:
    its approved lessons were approved by whoever committed them, so none is in force here until a human approves
    it here (lessons approve ID, one by one) or adopts the whole vault with this command. Adopting is recorded in
    the repository's git dir (synapse-nb/vaults.json, shared by its worktrees); git tracking or untracking the vault
    changes nothing afterwards. A vault not borrowed is recorded as this checkout's own. A human-only command (see
    lessons approve); at a terminal it lists the lessons that come into force and asks first.

    Examples:

        synapse-nb lessons adopt

        synapse-nb lessons adopt --yes --json
    """
    require_human_here(ctx, yes, "adopting a vault")
    v = open_vault_for(ctx)
    borrowed = v.borrowed
    coming = list(v.lessons.awaiting_local()) if borrowed is not None else []
    if borrowed is not None and not yes:  # at a terminal: show what comes into force, then ask
        typer.echo(borrowed.line)
        typer.echo(f"adopting puts {plural(len(coming), 'lesson')} approved elsewhere in force here, each until "
                   "its own expiry:")
        for les in coming:
            typer.echo(_lesson_text(les))
        if not typer.confirm("adopt this vault as your own?", default=False):
            fail("not adopted: the vault stays borrowed")
    done = v.adopt()
    in_force = [les for les in coming if v.lessons.approved_here(les)]
    if as_json:
        echo_json({"vault": done.path, "was_borrowed": done.was, "records": str(done.records or ""),
                   "set_aside": str(done.set_aside or ""), "in_force": [record_json(x) for x in in_force]})
        return
    if done.set_aside is not None:
        typer.echo(f"the unreadable record of this checkout's vaults was set aside: {done.set_aside}")
    if done.records is None:
        typer.echo(f"{done.path} is not borrowed (no git repository records it): its approved lessons are in force")
        return
    if done.was is None:
        typer.echo(f"{done.path} was not borrowed: recorded as this checkout's own in {done.records}")
        return
    typer.echo(f"adopted {done.path} as this checkout's own (recorded in {done.records}); "
               f"{plural(len(in_force), 'lesson')} approved elsewhere now in force here:")
    for les in in_force:
        typer.echo(listing_line(les))
