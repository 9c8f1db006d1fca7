"""What every magic family shares: the base class, SynapseError -> UsageError, and "shown once" results.

A family (``CheckpointMagics``, ``RecallMagics``, ...) is an IPython ``@magics_class`` of its own; it
holds no state but a reference to the one :class:`~synapse_nb.magics.synapse.SynapseMagics` of the
shell, which keeps the settings, the vault handle and the notebook session for all of them.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics
from IPython.display import display

from synapse_nb.errors import OfflineError, SynapseError

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.kinds.autocheckpoint import AutoCheckpoint
    from synapse_nb.models import Memory
    from synapse_nb.offline import OfflineVault
    from synapse_nb.vault import ReadableVault, Vault

__all__ = ["Confirmation", "FamilyMagics", "confirmed", "end_of_cell", "prompt_with_data", "shown_once",
           "usage_errors"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def usage_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn every SynapseError into ``UsageError`` itself (the shell prints exactly that type as one line)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SynapseError as exc:
            raise UsageError(f"{exc}") from None

    return wrapper


class VaultHost(Protocol):
    """What a family needs from ``SynapseMagics`` (the shared settings and vault), named here so this
    module does not import the one that imports it."""

    #: records shown this cell (see :func:`shown_once`)
    fresh: list[Any]
    #: what ``%memory verify ID`` last showed of each agent's memory (what ``--yes`` verifies)
    to_verify: dict[str, Memory]
    #: the settings the families read (traitlets on ``SynapseMagics``; ``%config SynapseMagics.x = ...``)
    auto_checkpoint_cells: int | None
    default_budget: int | None
    #: the automatic checkpoint every few cells
    auto: AutoCheckpoint

    @property
    def session_id(self) -> str: ...

    def cells_per_checkpoint(self) -> int: ...

    @property
    def vault(self) -> Vault: ...

    def writable_vault(self) -> Vault: ...

    def readable_vault(self) -> ReadableVault: ...

    def stale_copy(self, exc: OfflineError) -> OfflineVault: ...


class FamilyMagics(Magics):
    """Base of the magic families: they read the settings and the vault through ``self.synapse``."""

    def __init__(self, shell: InteractiveShell | None, synapse: VaultHost) -> None:
        self.synapse = synapse
        super().__init__(shell=shell)

    @property
    def vault(self) -> Vault:
        """The vault for a read (never created here; see :meth:`SynapseMagics.vault`)."""
        return self.synapse.vault

    def writable_vault(self) -> Vault:
        """The vault for a write (created inside an existing folder when there is none)."""
        return self.synapse.writable_vault()


# ------------------------------------------------------------------------------------------------ shown once
_SHOWN_TYPES: dict[type, type] = {}


def _display_unless_fresh(self: Any) -> None:
    if getattr(self, "_synapse_fresh", False):
        return
    display(self._synapse_original)


def shown_once(obj: T, tracker: list[Any], *, show: bool = True) -> T:
    """Display ``obj`` now (unless ``show=False``) and return a twin not displayed again as this cell's output.

    So ``%recall q`` shows the recall once, and ``r = %recall q`` shows it *and* binds it. From the
    next cell on, the twin displays like the original (``post_run_cell`` clears the flag of every
    twin in ``tracker``). The twin is an instance of a subclass of the original's type, so
    ``isinstance`` and every attribute work. An object that cannot be twinned is returned as it is
    (then shown by the cell's output only).
    """
    base = type(obj)
    try:
        sub = _SHOWN_TYPES.get(base)
        if sub is None:
            sub = type(base.__name__, (base,), {"_ipython_display_": _display_unless_fresh,
                                                "__module__": base.__module__, "__qualname__": base.__qualname__})
            _SHOWN_TYPES[base] = sub
        twin = copy.copy(obj)
        object.__setattr__(twin, "__class__", sub)
        object.__setattr__(twin, "_synapse_fresh", True)
        object.__setattr__(twin, "_synapse_original", obj)
    except (TypeError, AttributeError):
        return obj
    if show:
        display(obj)
    tracker.append(twin)
    return twin


def prompt_with_data(hook: Any, *, on: bool = True) -> None:
    """The shell's display hook writes its ``Out[n]:`` prompt with the result's data, not before it is formatted: a
    result shown already (a :func:`shown_once` twin, whose display is nothing) leaves no empty ``Out[n]:`` line
    (review 78: terminal IPython printed one after each ``%remember`` and ``%recall``). ``on=False`` undoes it."""
    if not on:
        for name in ("write_output_prompt", "write_format_data"):
            vars(hook).pop(name, None)  # the class's own again
        return
    if "write_format_data" in vars(hook):  # already
        return
    write_prompt, write_data = hook.write_output_prompt, hook.write_format_data

    def with_prompt(format_dict: dict[str, Any], md_dict: dict[str, Any] | None = None) -> None:
        write_prompt()
        write_data(format_dict, md_dict)

    hook.write_output_prompt = lambda: None  # written by with_prompt, when there is data to show
    hook.write_format_data = with_prompt


def end_of_cell(tracker: list[Any]) -> None:
    """From the next cell on, the twins of :func:`shown_once` display like their originals."""
    for obj in tracker:
        try:
            object.__setattr__(obj, "_synapse_fresh", False)
        except (TypeError, AttributeError):
            pass
    tracker.clear()


# ------------------------------------------------------------------------------------------------ confirmations
class Confirmation:
    """The one-line confirmation of a write magic: ``✔ remembered mem_… procedure/run_migrations [user ·
    verified]``; in a notebook the record's full display is one click away (a collapsed ``<details>``)."""

    def __init__(self, verb: str, record: Any) -> None:
        self.verb = verb
        self.record = record

    def __repr__(self) -> str:
        from synapse_nb.displays import confirmation_text

        return confirmation_text(self.verb, self.record)

    def _repr_html_(self) -> str:
        from synapse_nb.displays import confirmation_html

        return confirmation_html(self.verb, self.record)


def confirmed(verb: str, record: T, tracker: list[Any]) -> T:
    """Show the one-line :class:`Confirmation` of a write and return the record, not displayed again as the
    cell's output (``m = %remember ...`` keeps it; ``m`` in a later cell shows it in full)."""
    display(Confirmation(verb, record))
    return shown_once(record, tracker, show=False)
