"""A mind that holds nothing, said by the surfaces a person types a mind into (the CLI's ``--mind``, the magics'
``SynapseMagics.mind``): a mistyped mind was a silent empty answer, or a new mind the first write made unnoticed
(review 68 F6: ``synapse-nb --mind defualt memory list`` printed "no memories yet").

A mind is any name (a new one is how a person starts one), so nothing is refused: a surface asks
:func:`other_minds` once a handle is open and, when the handle's mind holds no record while other minds of the vault
do, says :func:`empty_mind_line` for a read, or :func:`new_mind_line` once a write has made the mind. Said on stderr
only: no answer's text or shape changes (recall's text is read by agents, byte for byte).

>>> empty_mind_line("defualt", ("default", "research"))
"mind 'defualt' holds no records; minds in this vault: default, research (did you mean 'default'?)"
>>> new_mind_line("defualt", ("default",))
"a new mind 'defualt' (this vault's minds were default; did you mean 'default'?)"
>>> empty_mind_line("ops", ("default",))
"mind 'ops' holds no records; minds in this vault: default"
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from synapse_nb.context import MIND_PATTERN
from synapse_nb.errors import SynapseError
from synapse_nb.vault.facade import Vault

__all__ = ["MINDS_SHOWN", "empty_mind_line", "made_mind_line", "new_mind_line", "other_minds"]

#: At most this many minds are named in a line (then "and N more"): agents may make many.
MINDS_SHOWN = 12


def other_minds(v: Vault) -> tuple[str, ...] | None:
    """The vault's minds (those this handle's login may see) when ``v``'s mind holds no record and another mind does;
    None otherwise, and when the store cannot say (a surface's aside never fails the command). Only names a mind
    can have are named (a row written with SQL may hold any text: it is never printed here)."""
    try:
        minds = tuple(m for m in v.minds() if MIND_PATTERN.fullmatch(m))
    except SynapseError:
        return None
    return minds if minds and v.mind not in minds else None


def _named(mind: str, minds: Sequence[str]) -> tuple[str, str]:
    """The minds as a list (the first :data:`MINDS_SHOWN`), and "did you mean" for the close ones (difflib)."""
    listed = ", ".join(minds[:MINDS_SHOWN]) + (f" and {len(minds) - MINDS_SHOWN} more" if len(minds) > MINDS_SHOWN
                                               else "")
    close = difflib.get_close_matches(mind, minds, n=3)
    return listed, ("did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else ""


def empty_mind_line(mind: str, minds: Sequence[str]) -> str:
    """What a read in ``mind``, which holds no record, says of the vault's ``minds``."""
    listed, guess = _named(mind, minds)
    return f"mind '{mind}' holds no records; minds in this vault: {listed}" + (f" ({guess})" if guess else "")


def new_mind_line(mind: str, before: Sequence[str]) -> str:
    """What the first write in ``mind`` says, given the vault's minds ``before`` it."""
    listed, guess = _named(mind, before)
    return f"a new mind '{mind}' (this vault's minds were {listed}" + (f"; {guess})" if guess else ")")


def made_mind_line(v: Vault, before: Sequence[str]) -> str | None:
    """After a write through ``v``: :func:`new_mind_line` when it made ``v``'s mind (the minds were ``before``), else
    None (nothing written, or the store cannot say: a surface's aside never fails the command)."""
    try:
        made = v.mind in v.minds()
    except SynapseError:
        return None
    return new_mind_line(v.mind, before) if made else None
