"""The restore pack: what a context needs back after it is compacted, within a token budget.

One pack for every surface that hands it to an agent: the MCP tool ``signal_low_context`` and the agent hooks
(``PreCompact``, ``SessionStart`` after a compaction) both call :meth:`synapse_nb.vault.Vault.restore_pack`,
which reads the records and calls :func:`restore_pack` here.

The pack is, in order: the approved-lesson banner, the checkpoint (or a line saying there is none), people's five
latest decisions and key memories (priority critical or high, human-verified first), then agents' (so a cut drops
agents' proposals first, whatever their length). Every record starts with its provenance mark (a checkpoint's
fields are indented under its heading); :func:`fit_lines` keeps whole lines from the top while the estimate stays
within the budget, stops at the first line that does not fit and says how many it left out, so a cut never keeps a
record's lines without its heading, nor an agent's line without the legend before it (review 9: skipping a long
heading kept its fields under the last approved lesson, unmarked).

>>> fit_lines(["a\\nb", "c"], 100)
('a\\nb\\n\\nc', 0)
>>> fit_lines(["one two three four five six seven eight", "nine"], 3)
('(… 2 more lines left out to fit 3 tokens)', 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Self

from synapse_nb.provenance import human_record
from synapse_nb.recall.assembly import banner_parts, legend_for, record_line
from synapse_nb.render import estimate_tokens, plural

if TYPE_CHECKING:
    from synapse_nb.models import Checkpoint, Decision, Lesson, Memory

__all__ = ["NO_CHECKPOINT", "PACK_FIELD_CHARS", "RESTORE_TOKENS", "fit_lines", "key_memories", "restore_pack"]

#: The default budget of a restore pack, in tokens (about 4 characters a token).
RESTORE_TOKENS = 1500
#: What the pack says where the checkpoint would be when there is none yet.
NO_CHECKPOINT = "No checkpoint on this branch yet."
#: The priorities whose memories a pack carries.
KEY_PRIORITIES = ("critical", "high")


#: How much of each of a checkpoint's fields the pack shows: a checkpoint is one record among the pack's, and one
#: agent's of 6,000 characters left no room for a person's decisions and verified memories (review 10).
PACK_FIELD_CHARS = 400


def fit_lines(blocks: Sequence[str], budget: int) -> tuple[str, int]:
    """Join text blocks (a blank line between them) line by line while the estimate stays within ``budget``
    tokens: whole lines from the top, up to the first that does not fit; the rest is left out. Returns the text
    and how many lines were left out."""
    out: list[str] = []
    omitted = used = 0
    for b, block in enumerate(blocks):
        if b and out and not omitted:
            out.append("")
        for line in block.split("\n"):
            cost = estimate_tokens(line + "\n")
            if omitted or used + cost > budget:
                omitted += 1
                continue
            out.append(line)
            used += cost
    text = "\n".join(out).strip("\n")
    if omitted:
        text += ("\n" if text else "") + f"(… {plural(omitted, 'more line')} left out to fit {budget} tokens)"
    return text, omitted


def key_memories(memories: Iterable[Memory]) -> list[Memory]:
    """The memories a pack carries: priority critical or high, human-verified first (stable otherwise)."""
    return sorted((m for m in memories if m.priority in KEY_PRIORITIES), key=lambda m: not m.verified)


class Pack(str):
    """A restore pack's text, with ``lessons``: the ids of the banner's lessons it prints whole (a cut pack keeps
    whole lines from its top), for a caller that marks them given (the SessionStart hook after a compaction)."""

    lessons: tuple[str, ...] = ()

    def __new__(cls, text: str, lessons: Sequence[str] = ()) -> Self:
        out = super().__new__(cls, text)
        out.lessons = tuple(lessons)
        return out


def restore_pack(lessons: Sequence[Lesson], checkpoint: Checkpoint | None, decisions: Sequence[Decision],
                 memories: Sequence[Memory], *, budget_tokens: int = RESTORE_TOKENS,
                 note: str | None = None, since: Sequence[Checkpoint] = (), later: int = 0,
                 resumed: str | None = None, persons: Checkpoint | None = None) -> Pack:
    """The pack from the records given (lessons in force, the checkpoint to restore, the latest decisions, the
    key memories); ``note`` (e.g. "read-only: nothing was saved") heads it; ``since`` and ``later``: the checkpoints
    saved after it, listed under it (:meth:`~synapse_nb.models.Checkpoint.restore_text`), or ``resumed``, the text
    :meth:`~synapse_nb.kinds.checkpoints.Checkpoints.resume` gives of them (its ``body``: the agents' counted apart,
    and the person's own checkpoint, ``persons``, named when the one restored is an agent's). Its ``lessons`` are the
    ids of those whose banner item it prints whole."""
    # the banner as a prompt's: lessons approved earliest first, each that fits the pack given whole and the rest named
    # by id (first fit): one long lesson left no room for the others, the checkpoint or a person's decisions, and the
    # same lessons were numbered otherwise after a compaction (review 54). Rounding: up to 8 characters a line.
    room = 4 * budget_tokens - (len(note) + 1 if note else 0) - 8 * (len(lessons) + 3)
    parts = banner_parts(lessons, room=max(0, room))  # each item built once: its lines counted below
    banner = [text for text, _ in parts]
    shown = [checkpoint, *since, *([persons] if persons is not None else []), *decisions, *memories]
    restored = resumed if resumed is not None else (
        checkpoint.restore_text(PACK_FIELD_CHARS, since, later) if checkpoint is not None else NO_CHECKPOINT)
    blocks = [b for b in (note, "\n".join(banner), legend_for(shown), restored)
              if b]
    # people's records before any agent's: the pack is cut at the first line that does not fit, and five agent
    # decisions at their length limits cut a person's verified memory when decisions came before memories (review 13)
    for people in (True, False):
        mine_d = [d for d in decisions if human_record(d) is people]
        mine_m = [m for m in memories if human_record(m) is people]
        whose = "" if people else " (agents')"
        if mine_d:
            blocks.append(f"Recent decisions{whose}:\n" + "\n".join(record_line(d) for d in mine_d))
        if mine_m:
            blocks.append(f"Key memories{whose}:\n" + "\n".join(record_line(m) for m in mine_m))
    text, omitted = fit_lines(blocks, budget_tokens)
    kept_lines = sum(b.count("\n") + 1 for b in blocks) - omitted  # fit_lines keeps whole lines from the top
    end = (note.count("\n") + 1 if note else 0)
    printed: list[str] = []
    for item, ids in parts:
        end += item.count("\n") + 1
        if end > kept_lines:
            break
        printed += ids
    return Pack(text, printed)
