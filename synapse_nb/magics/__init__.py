"""IPython magics: ``%load_ext synapse_nb`` puts checkpoints, decisions, lessons and recall one line away.

Magics (``%magic?`` shows each one's full help), one ``@magics_class`` per family, as IPython's own::

    %checkpoint create --doing "..." [--files a.py,b.py] [--next-step "..."] [--blockers "..."]
    %checkpoint list | restore [latest|ID] | auto on|off [--every N]            CheckpointMagics
    %recall QUERY [--session S | --all] [--budget N] [--explain]                 RecallMagics
    %%decision [--tags a,b]            first line = decision, the rest = rationale  DecisionMagics
    %remember CATEGORY KEY CONTENT [--tags a,b] [--priority high] [--expires 30d]
    %memory status | search Q | expiring [--within 7d] | prune | verify [ID [--yes]] [--fix]  MemoryMagics
    %%episode TASK_KEY                 run the cell, log the run                 EpisodeMagics
    %lessons                           the LessonReview widget                   LessonsMagics
    %synapse                           vault, mind, actor and settings in use    SynapseMagics

Settings (``%config SynapseMagics.<name> = value``, or ``c.SynapseMagics.<name>`` in a profile):
``vault_path``, ``mind``, ``session``, ``lesson_expiry_days`` (written to the vault),
``auto_checkpoint_cells`` (``auto_checkpoint_every``, its former name, still sets it), ``default_budget``.
:class:`SynapseMagics` holds them with the vault handle and the notebook state; every family reads
through it, so ``%config SynapseMagics.mind = "research"`` switches all of them.

Reading magics (``%recall``, ``%memory``, ``%checkpoint list|restore``, ``%lessons``) never create a
vault; writing ones create it inside an existing folder and say where on stderr, once.

Every magic takes its line as typed (``@no_var_expand``: IPython would put variables' values in ``{x}`` and
``$name`` first; review 73). ``%memory verify ID`` prints an agent's memory and verifies nothing; ``--yes`` then
verifies exactly what it printed.

The magics act as the human user (``actor="user"``; in a kernel a coding agent started, as the agent). Every
mistake in a magic line and every :class:`~synapse_nb.errors.SynapseError` becomes a one-line ``UsageError``; an
error raised by the code of a ``%%episode`` cell is logged and re-raised unchanged.

Examples
--------
In IPython or Jupyter::

    %load_ext synapse_nb
    %config SynapseMagics.vault_path = "~/project"
    %checkpoint create --doing "Refactoring JWT auth" --files src/auth.py --next-step "Run pytest"
    %remember procedure run_migrations alembic upgrade head --tags db
    r = %recall how do we run migrations?
"""

from __future__ import annotations

from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics

from synapse_nb.magics._base import FamilyMagics, prompt_with_data
from synapse_nb.magics._parse import keep_recall_questions
from synapse_nb.magics.checkpoint import CheckpointMagics
from synapse_nb.magics.decision import DecisionMagics
from synapse_nb.magics.episode import EpisodeMagics
from synapse_nb.magics.lessons import LessonsMagics
from synapse_nb.magics.memory import MemoryMagics
from synapse_nb.magics.recall import RecallMagics
from synapse_nb.magics.synapse import SynapseMagics

__all__ = [
    "FAMILIES",
    "CheckpointMagics",
    "DecisionMagics",
    "EpisodeMagics",
    "LessonsMagics",
    "MemoryMagics",
    "RecallMagics",
    "SynapseMagics",
    "load_ipython_extension",
    "unload_ipython_extension",
]

#: The magic families registered beside :class:`SynapseMagics`, each sharing its settings and vault.
FAMILIES: tuple[type[FamilyMagics], ...] = (
    CheckpointMagics, RecallMagics, DecisionMagics, MemoryMagics, EpisodeMagics, LessonsMagics)

#: Per shell: the SynapseMagics registered on it.
_INSTANCES: dict[int, SynapseMagics] = {}
#: Per shell: every Magics instance registered, and the magics of others they shadow (IPython's %recall).
_REGISTERED: dict[int, tuple[list[Magics], dict[str, dict[str, object]]]] = {}


def load_ipython_extension(ip: InteractiveShell) -> None:
    """Register every magic family, the ``post_run_cell`` hook and the ``%recall ...?`` input transformer.

    The families are instances sharing one :class:`SynapseMagics` (it holds the vault and notebook
    state). Loading twice, or ``%reload_ext``, keeps one set of magics and one hook.
    """
    if id(ip) in _INSTANCES:
        unload_ipython_extension(ip)
    synapse = SynapseMagics(shell=ip)
    magics: list[Magics] = [synapse, *(family(ip, synapse) for family in FAMILIES)]
    table = ip.magics_manager.magics
    # IPython has its own %recall (history); ours shadows it while loaded, unload restores it
    shadowed = {kind: {name: table[kind][name] for m in magics for name in m.magics[kind] if name in table[kind]}
                for kind in table}
    for m in magics:
        ip.register_magics(m)
    ip.events.register("post_run_cell", synapse.post_run_cell)
    if keep_recall_questions not in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.append(keep_recall_questions)
    prompt_with_data(ip.displayhook)
    _INSTANCES[id(ip)] = synapse
    _REGISTERED[id(ip)] = (magics, shadowed)


def unload_ipython_extension(ip: InteractiveShell) -> None:
    """Remove every family's magics and the hooks, restore what they shadowed, close the vault."""
    synapse = _INSTANCES.pop(id(ip), None)
    magics, shadowed = _REGISTERED.pop(id(ip), ([], {}))
    if synapse is None:
        return
    try:
        ip.events.unregister("post_run_cell", synapse.post_run_cell)
    except ValueError:
        pass
    prompt_with_data(ip.displayhook, on=False)
    while keep_recall_questions in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(keep_recall_questions)
    registry = ip.magics_manager.magics
    for m in magics:
        for kind, table in m.magics.items():
            for name in list(table):
                if registry[kind].get(name) == table[name]:
                    del registry[kind][name]
                    previous = shadowed.get(kind, {}).get(name)
                    if previous is not None:
                        registry[kind][name] = _loaded(ip, kind, name, previous)
        configurables: list[Any] = getattr(ip, "configurables", [])
        if m in configurables:
            configurables.remove(m)
    synapse.close()


def _loaded(ip: InteractiveShell, kind: str, name: str, previous: object) -> object:
    """What to put back for a shadowed magic: IPython 9 keeps not-yet-imported magics as placeholders
    (with a ``spec``, "module:Class"); if that class was imported meanwhile (``%config`` imports them
    all), the placeholder would no longer load, so its real method is put back instead."""
    spec = getattr(previous, "spec", None)
    if isinstance(spec, str):
        owner = ip.magics_manager.registry.get(spec.partition(":")[2])
        real = owner.magics.get(kind, {}).get(name) if owner is not None else None
        if real is not None:
            return real
    return previous
