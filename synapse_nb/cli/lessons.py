"""``synapse-nb lessons``: lessons learnt from reverted changes; only a human approves them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from synapse_nb.cli._common import (
    PROG, Group, JsonOpt, LimitOpt, echo_json, group_help, limit_arg, none_found, open_vault_for, print_record,
    print_records, record_line, state,
)
from synapse_nb.errors import GitError, ValidationError
from synapse_nb.gitscope import find_repo
from synapse_nb.render import plural, when

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.models import Lesson

__all__ = ["lessons_app"]


lessons_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Review lessons learnt from reverted changes (only a human approves them).",
    "synapse-nb lessons scan", "synapse-nb lessons review"))


def _lesson_text(les: Lesson) -> str:
    lines = [f"{les.id}  [{les.status}]  {when(les.created_at, seconds=True)}",
             f"  summary:  {les.summary}"]
    if les.files_affected:
        lines.append(f"  files:    {', '.join(les.files_affected)}")
    if les.analysis:
        lines.append(f"  analysis ({les.analysis_by or '?'}): {les.analysis}")
    if les.lesson_text:
        lines.append(f"  lesson:   {les.lesson_text}")
    if les.expires_at:
        lines.append(f"  expires:  {when(les.expires_at, seconds=True)}")
    return "\n".join(lines)


@lessons_app.command("scan")
def lessons_scan(
    ctx: typer.Context,
    max_commits: Annotated[int | None, typer.Option("--max-commits", min=1, help="How far back the first scan looks.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Find git reverts not seen before and create one pending lesson for each.

    Examples:

        synapse-nb lessons scan

        synapse-nb lessons scan --max-commits 500 --json
    """
    from synapse_nb.vault import find_vault_dir  # here: the store and the kinds load only when a command runs

    project = find_vault_dir(state(ctx).vault)[1]
    if find_repo(project) is None:  # checked first: a scan that cannot run must not create a vault
        raise GitError(f"{project} is not inside a git repository; lesson scanning needs git")
    v = open_vault_for(ctx)
    created = v.lessons.scan(max_commits=max_commits)
    if as_json:
        echo_json([x.to_dict() for x in created])
        return
    typer.echo(plural(len(created), "new pending lesson"))
    for les in created:
        typer.echo(record_line(les))
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
    """List lessons (all, or one status).

    Examples:

        synapse-nb lessons list --status pending

        synapse-nb lessons list --json
    """
    v = open_vault_for(ctx)
    recs = v.lessons.list(status=status, limit=limit_arg(limit))
    if as_json:
        print_records(recs, True, "")
        return
    empty = "" if recs else none_found(v.lessons.count(), "lesson", "lessons", f"no {status} lessons")
    print_records(recs, False, empty)


_ANSWERS = {"a": "a", "approve": "a", "e": "e", "edit": "e", "r": "r", "reject": "r", "s": "s", "skip": "s",
            "q": "q", "quit": "q"}


def _ask_choice() -> str:
    """One review answer (a/e/r/s/q); the end of input means quit."""
    for _ in range(5):
        try:
            raw = typer.prompt("[a]pprove / [e]dit / [r]eject / [s]kip / [q]uit", default="s")
        except typer.Abort:
            return "q"
        answer = _ANSWERS.get(str(raw).strip().lower())
        if answer:
            return answer
        typer.echo("please answer a, e, r, s or q")
    return "q"


@lessons_app.command("review")
def lessons_review(ctx: typer.Context) -> None:
    """Review pending lessons one at a time: approve, edit the text then approve, reject, or skip.

    Answers are read from the terminal (or from stdin when piped): a / e / r / s, q to stop.

    Examples:

        synapse-nb lessons review

        printf 'a\\ns\\n' | synapse-nb lessons review
    """
    v = open_vault_for(ctx)
    pending = v.lessons.pending()
    if not pending:
        typer.echo("no pending lessons: nothing to review")
        return
    done = {"approved": 0, "rejected": 0, "skipped": 0}
    typer.echo(f"{plural(len(pending), 'pending lesson')}. For each: [a]pprove, [e]dit then approve, [r]eject, [s]kip, "
               "[q]uit.")
    for i, les in enumerate(pending, 1):
        typer.echo(f"\n({i}/{len(pending)}) " + _lesson_text(les))
        answer = _ask_choice()
        if answer == "q":
            break
        if answer == "s":
            done["skipped"] += 1
            continue
        if answer == "r":
            v.lessons.reject(les.id)
            done["rejected"] += 1
            typer.echo(f"rejected {les.id}")
            continue
        text = None
        if answer == "e":
            current = les.lesson_text or les.analysis or les.summary
            try:
                text = typer.prompt("lesson text", default=current)
            except typer.Abort:
                break
        try:
            approved = v.lessons.approve(les.id, text=text)
        except ValidationError as exc:  # a blank edit: say so and go on with the next lesson
            typer.echo(f"not approved: {exc}; skipped {les.id}")
            done["skipped"] += 1
            continue
        done["approved"] += 1
        typer.echo(f"approved {approved.id} until {when(approved.expires_at)}")
    typer.echo(f"\nreviewed: {done['approved']} approved, {done['rejected']} rejected, {done['skipped']} skipped")


@lessons_app.command("approve")
def lessons_approve(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    text: Annotated[str | None, typer.Option("--text", help="The lesson text (default: the analysis, else the summary).")] = None,
    days: Annotated[int | None, typer.Option("--days", min=1, max=3650, help="Days in force (default: the vault setting).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve a pending lesson (or re-approve an expired one): it then heads every recall.

    Examples:

        synapse-nb lessons approve les_3f9a

        synapse-nb lessons approve les_3f9a --text "Never retry payments without an idempotency key" --days 30
    """
    v = open_vault_for(ctx)
    les = v.lessons.approve(lesson_id, text=text, expiry_days=days)
    print_record(les, as_json, f"approved {les.id} until {when(les.expires_at)}: {les.lesson_text}")


@lessons_app.command("reject")
def lessons_reject(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    as_json: JsonOpt = False,
) -> None:
    """Reject a lesson: it is deleted.

    Examples:

        synapse-nb lessons reject les_3f9a
    """
    v = open_vault_for(ctx)
    les = v.lessons.reject(lesson_id)
    print_record(les, as_json, f"rejected {les.id}")
