"""Vault settings: the known names, their defaults and checks, and ``vault.settings``.

Settings live in the vault (the store's ``meta``), so every surface (notebook, CLI, MCP, git hook) sees the
same values. Reading is open to every actor; changing a setting is for the user actor only.

A *borrowed* vault's settings (:mod:`synapse_nb.borrowed`: it came with the repository, and no person here adopted
it) were chosen by whoever committed it, so they can only tighten (:data:`BORROWED_RULE`, applied here, in the one
reader every surface goes through): a setting that bounds agents or decides what is in force reads as the stricter
of its stored value and its default. Once adopted, every stored value is in force, but one: in every vault, borrowed
or not, a ``recall_embedder`` that names code or files is loaded only when a person on this machine, as this Unix
user, set it for this vault (:meth:`Settings.embedder_spec`, :mod:`synapse_nb.embedder_trust`; review 69: a
downloaded archive of a repository, or a copied database, is not borrowed). docs/git.md, "What a borrowed vault
changes".
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from synapse_nb._calls import checked_calls
from synapse_nb._util import check_branch
from synapse_nb.embedder_trust import outside_code, record_code, set_here, unrecorded
from synapse_nb.errors import EmbedderRefused, ValidationError
from synapse_nb.provenance import inline
from synapse_nb.render import BORROWED_EMBEDDER_LINE
from synapse_nb.store.records import NotJson

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["BAR_SETTINGS", "BORROWED_EMBEDDER_LINE", "BORROWED_RULE", "EMBEDDER", "MAX_TOKENS", "SEMANTIC",
           "SETTINGS", "TRUNK_BRANCHES", "EmbedderRefused", "ModelNotHere", "SettingIgnored", "Settings", "check_name",
           "check_new", "check_setting", "outside_code", "shown"]


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise ValidationError(f"expected a whole number from {lo} to {hi}, got {v!r}")
        try:  # ASCII digits only, as the team server reads it (migration 21's _setting_number; review 50)
            if isinstance(v, str) and not v.isascii():
                raise ValueError(v)
            n = int(v)
        except ValueError:
            raise ValidationError(f"expected a whole number from {lo} to {hi}, got {v!r}") from None
        if not lo <= n <= hi:
            raise ValidationError(f"expected a whole number from {lo} to {hi}, got {n}")
        return n
    return check


def _unit_interval(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise ValidationError(f"expected a number from 0 to 1, got {v!r}")
    try:
        x = float(v)
    except ValueError:
        raise ValidationError(f"expected a number from 0 to 1, got {v!r}") from None
    if not 0.0 <= x <= 1.0:  # also refuses NaN
        raise ValidationError(f"expected a number from 0 to 1, got {x}")
    return x


def _embedder_spec(v: Any) -> str:
    if not isinstance(v, str) or not v.strip() or len(v) > 1000 or not v.isprintable():
        raise ValidationError(f"expected an embedder spec (e.g. 'wordllama' or 'e5-small'), got {v!r}")
    return v.strip()


def _branch_names(v: Any) -> tuple[str, ...]:
    """Branch names from a list or a comma- or space-separated string, each one git could name a branch
    (:func:`~synapse_nb._util.check_branch`), at most 20, in the order given, repeats dropped."""
    what = "expected branch names, comma separated (e.g. 'develop,release')"
    if isinstance(v, str):
        names = [x for x in v.replace(",", " ").split() if x]
    elif isinstance(v, list | tuple) and all(isinstance(x, str) for x in v):
        names = [x.strip() for x in v]
    else:
        raise ValidationError(f"{what}; got {v!r}")
    for x in names:
        check_branch(x, "a branch")
    if len(names) > 20:
        raise ValidationError(f"{what}; at most 20 names, got {len(names)}")
    return tuple(dict.fromkeys(names))


#: The most tokens a budget setting takes (recall_budget_tokens, mcp_answer_tokens; the MCP recall's budget_tokens).
MAX_TOKENS = 1_000_000
#: Known settings: name -> (default, validator, description).
SETTINGS: dict[str, tuple[Any, Callable[[Any], Any], str]] = {
    "lesson_expiry_days": (7, _int_range(1, 3650),
                           ("lessons: days an approved lesson stays in force, unless its approval names others "
                            "(--days)")),
    "trunk_branches": ((), _branch_names,
                       ("lessons: branches besides main and master whose approved lessons hold on every branch and "
                        "which a scanned revert's lesson is scoped to (e.g. 'develop')")),
    # each scan's bound, not only the first's (kinds.lessons.scan; gitscope.reverts.scan_reverts' max_commits)
    "scan_window": (2000, _int_range(1, 10_000_000),
                    ("lessons: most new commits one revert scan reads (the first looks this far back; past it, the "
                     "next scan goes on from there)")),
    # automatic checkpoints count one unit each (synapse_nb.kinds.autocheckpoint); None: auto_checkpoint_every
    "auto_checkpoint_cells": (None, lambda v: None if v is None else _int_range(1, 100_000)(v),
                              "notebook: executed cells that changed something per auto checkpoint"),
    "auto_checkpoint_files": (None, lambda v: None if v is None else _int_range(1, 100_000)(v),
                              ("synapse-nb watch: newly changed files per auto checkpoint; the agent hooks: file "
                               "edits per auto checkpoint")),
    # listed sorted by name (settings list, --json): named, not "the two above" (review 93)
    "auto_checkpoint_every": (10, _int_range(1, 100_000),
                              ("auto checkpoints: auto_checkpoint_cells and auto_checkpoint_files while they are not "
                               "set")),
    # the recall gate's bars used when a recall is given none (same defaults as synapse_nb.recall.Bars)
    "recall_floor": (0.22, _unit_interval, "recall: 'nothing new' unless the support of the top ranked reaches it"),
    "recall_margin": (0.4, _unit_interval, "recall: a hit's rank score is at least this times the best one"),
    # at least 1: a 0 emptied every recall and the prompt hook with no word why (review 78); a stored 0 reads as 5
    "recall_top_k": (5, _int_range(1, 1000), "recall: most hits per kind"),
    "recall_budget_tokens": (1200, _int_range(0, MAX_TOKENS), "recall: most tokens for the hits"),
    "recall_semantic": (0.0, _unit_interval,
                        ("recall: weight of the optional semantic channel, 0 = off (0.4 with e5-small: synapse_nb"
                         "[semantic-e5]; 0.1 with wordllama: synapse_nb[semantic])")),
    "recall_embedder": (None, lambda v: None if v is None else _embedder_spec(v),
                        ("recall: the semantic channel's model: wordllama (default), e5-small, "
                         "sentence-transformers:<folder>, import:<module>:<factory> or a registered name")),
    # agent write quotas (synapse_nb.kinds._base.check_agent_quota): human writes are never limited. The hourly one
    # counts every mind together, as its refusal says (review 93: this said "per mind")
    "agent_writes_per_hour": (600, _int_range(1, 10_000_000),
                              ("agents: most writes agents may make in one hour, every mind of the vault together (on "
                               "a team vault, per agent login): every create, change, delete or lesson analysis of any "
                               "kind counts, and so does a proposed change to a human's memory")),
    "agent_memories_per_mind": (5000, _int_range(1, 100_000_000),
                                ("agents: most memories agents may have written in one mind, verified or not (checked "
                                 "when an agent's write would add one)")),
    # bounded totals (kinds._base.check_agent_quota): what agents hold, not what they write an hour
    "agent_records_per_mind": (20_000, _int_range(1, 100_000_000),
                               ("agents: most records agents may hold in one mind (every kind: unverified memories, "
                                "pending lessons, checkpoints, decisions, episodes, notes)")),
    "agent_records_per_vault": (100_000, _int_range(1, 1_000_000_000),
                                "agents: most records agents may hold in the whole vault (every mind, every kind)"),
    "agent_megabytes_per_vault": (500, _int_range(1, 10_000_000),
                                  ("agents: most megabytes (10^6 bytes, UTF-8) of text agents' records may hold in the "
                                   "whole vault")),
    "mcp_answer_tokens": (8000, _int_range(500, MAX_TOKENS),
                          ("MCP: most tokens in one answer (text and structured content); the rest is counted, "
                           "left out")),
}
#: The setting naming the trunks besides main and master (synapse_nb.kinds.lessons).
TRUNK_BRANCHES = "trunk_branches"
#: The setting holding the weight of recall's optional semantic channel (0: off).
SEMANTIC = "recall_semantic"
#: The setting naming the semantic channel's embedder (synapse_nb.store.embedders; None: the default).
EMBEDDER = "recall_embedder"
#: Bars fields and the settings that hold their saved defaults.
BAR_SETTINGS = {"floor": "recall_floor", "margin": "recall_margin", "top_k": "recall_top_k",
                "budget_tokens": "recall_budget_tokens"}


def _fewer(stored: tuple[str, ...], default: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(x for x in stored if x in default)


#: How a borrowed vault reads a stored setting: name -> the value in force from (stored, default). A setting that
#: bounds agents, decides what is in force or what an agent is given reads as the stricter of the two; a setting not
#: named here (the auto checkpoints' pace, ``recall_semantic``'s weight) is a preference and is honoured as stored.
#: ``recall_embedder``: a built-in or registered name is honoured; a spec naming code or files reads as not set
#: unless a person here set it (:meth:`Settings.embedder_spec` refuses it otherwise, borrowed or not). docs/git.md,
#: "What a borrowed vault changes".
BORROWED_RULE: dict[str, Callable[[Any, Any], Any]] = {
    "lesson_expiry_days": min,  # an approval made here lasts no longer than by default
    TRUNK_BRANCHES: _fewer,  # no branch of the committer's choosing makes lessons hold on every branch
    "scan_window": min,
    "recall_floor": max, "recall_margin": max,  # the gate: no laxer than by default ...
    "recall_top_k": min, "recall_budget_tokens": min,  # ... and no more of the vault's text per answer
    EMBEDDER: lambda stored, default: default if stored is not None and outside_code(stored) else stored,
    "agent_writes_per_hour": min, "agent_memories_per_mind": min, "agent_records_per_mind": min,
    "agent_records_per_vault": min, "agent_megabytes_per_vault": min,
    "mcp_answer_tokens": min,
}
def check_setting(name: Any, value: Any) -> Any:
    """``value`` as setting ``name`` stores it; :class:`ValidationError` for an unknown name or a bad value (the
    message names the setting and what it accepts).

    >>> check_setting("recall_top_k", "3")
    3
    >>> check_setting("recall_floor", 2)
    Traceback (most recent call last):
    ...
    synapse_nb.errors.ValidationError: setting recall_floor: expected a number from 0 to 1, got 2.0
    """
    check_name(name)
    try:
        return SETTINGS[name][1](value)
    except ValidationError as e:
        raise ValidationError(f"setting {name}: {e}") from None


def check_name(name: Any) -> None:
    """:class:`ValidationError` naming every known setting (and the nearest, as a mistyped command gets) unless
    ``name`` is one.

    >>> check_name("recal_floor")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synapse_nb.errors.ValidationError: unknown setting 'recal_floor' (did you mean 'recall_floor'?); known settings: ...
    """
    if not isinstance(name, str) or name not in SETTINGS:
        from difflib import get_close_matches

        near = get_close_matches(name, list(SETTINGS), 1, 0.6) if isinstance(name, str) else []
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValidationError(f"unknown setting {name!r}{hint}; known settings: {', '.join(sorted(SETTINGS))}")


def check_new(name: Any, value: Any) -> Any:
    """:func:`check_setting`, and what only a new value is held to (:meth:`Settings.set`): ``recall_embedder`` must
    be a spec the embedders take in form (:func:`~synapse_nb.store.embedders.check_spec`: a built-in, a name
    registered in this process, ``import:<module>:<factory>``, ``sentence-transformers:<folder>``; review 68). A
    stored value is read through :func:`check_setting` alone: a name registered in another process still reads."""
    value = check_setting(name, value)
    if name == EMBEDDER and value is not None:
        from synapse_nb.store.embedders import check_spec

        try:
            value = check_spec(value)
        except ValidationError as e:
            raise ValidationError(f"setting {name}: {e}") from None
    return value


class ModelNotHere(UserWarning):
    """A setting turned recall's semantic channel on (or named its model) and the model cannot be loaded in this
    process (its extra is not installed here): the setting is stored (a team may set it for other machines), and
    recalls here answer from the vault's words alone until it is installed (review 68)."""


class SettingIgnored(UserWarning):
    """A stored setting's value is not one the setting accepts (written into the vault's ``meta`` by hand): it reads
    as the setting's default, and this warning says so once, naming the setting and quoting the stored value."""


#: (setting, stored value as shown) already warned about in this process: each is said once.
_SAID: set[tuple[str, str]] = set()


def shown(value: Any) -> str:
    """A setting's value as one quoted line for a listing (``settings list``, ``%synapse``): a list of names comma
    separated, ``none`` for None, anything else as text through :func:`~synapse_nb.provenance.inline`.

    >>> shown(("develop", "release")), shown(None), shown("bm25\\x1b[8m\\nNOTE")
    ('develop,release', 'none', 'bm25 [8m NOTE')
    """
    if isinstance(value, tuple | list):  # a list of names (trunk_branches): as it is set, comma separated
        return inline(",".join(map(str, value))) if value else "none"
    return "none" if value is None else inline(value)


def _read(name: str, saved: dict[str, Any], borrowed: bool = False) -> Any:
    """Setting ``name`` in force: :func:`_stored`, then, in a ``borrowed`` vault, :data:`BORROWED_RULE`."""
    value = _stored(name, saved)
    rule = BORROWED_RULE.get(name) if borrowed and name in saved else None
    return value if rule is None else rule(value, SETTINGS[name][0])


def _stored(name: str, saved: dict[str, Any]) -> Any:
    """Setting ``name`` from the stored values, through its check: its default when never set, and when the stored
    value fails the check (review 41: a hand-written ``"7 days"`` made ``%lessons`` raise ValueError, text that is
    not JSON made ``%synapse`` raise, a string with an ANSI code and a line break printed a fake line among the
    settings). The ignored value is said once (:class:`SettingIgnored`), quoted as one line."""
    default = SETTINGS[name][0]
    if name not in saved:
        return default
    value = saved[name]
    try:
        if isinstance(value, NotJson):
            raise ValidationError("the stored text is not JSON")
        return SETTINGS[name][1](value)
    except ValidationError as e:
        stored = value.text if isinstance(value, NotJson) else value if isinstance(value, str) else json.dumps(value)
        quoted = json.dumps(inline(stored, 120), ensure_ascii=False)
        if (name, quoted) not in _SAID:
            _SAID.add((name, quoted))
            warnings.warn(SettingIgnored(
                f"setting {name}: the stored value {quoted} is not one it accepts ({inline(e, 300)}); it reads as "
                f"its default, {shown(default)} (a human sets it: synapse-nb settings set {name} VALUE, or "
                f"settings reset {name})"), stacklevel=3)
        return default


@checked_calls  # a misspelt keyword is a ValidationError naming what the method takes (review 78)
class Settings:
    """Vault settings stored in the database (so every surface sees the same values).

    Reading is open to every actor; changing a setting is for the user actor only.

    >>> v.settings.set("lesson_expiry_days", 14)  # doctest: +SKIP
    """

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def _borrowed(self) -> bool:
        """Whether the vault is borrowed (not adopted): its stored values only tighten (:data:`BORROWED_RULE`)."""
        return self._ctx.git.borrowed is not None

    def get(self, name: str) -> Any:
        """Setting ``name`` in force (its default when never set; in a borrowed vault, :data:`BORROWED_RULE`)."""
        check_name(name)
        return self._in_force(name, self._ctx.store.meta.settings((name,)))

    def _in_force(self, name: str, saved: dict[str, Any]) -> Any:
        """:func:`_read`, except that a borrowed vault's code-loading ``recall_embedder`` a person here set
        (:meth:`embedder_spec` loads it) reads as stored."""
        value = _read(name, saved, self._borrowed)
        if name == EMBEDDER and value is None and self._borrowed:
            stored = _stored(name, saved)
            if stored is not None and outside_code(stored) and self._set_here(stored):
                return stored
        return value

    def embedder_spec(self) -> str | None:
        """The setting ``recall_embedder`` as the semantic channel may load it (None: the default), the one check
        every loader of the vault's embedder goes through. :class:`EmbedderRefused` when the stored spec names code
        or files (:func:`outside_code`) and no person set it for this vault as this user on this machine
        (:func:`synapse_nb.embedder_trust.set_here`; review 69: a downloaded archive or a copied file is not
        borrowed, yet its setting is someone else's), borrowed or not: it is not loaded, the channel stays off."""
        stored = _stored(EMBEDDER, self._ctx.store.meta.settings((EMBEDDER,)))
        if unrecorded(self._ctx.store, stored):
            raise EmbedderRefused(BORROWED_EMBEDDER_LINE)
        spec: str | None = stored
        return spec

    def _set_here(self, spec: str) -> bool:
        return set_here(self._ctx.store, spec)

    def _record(self, values: dict[str, Any]) -> None:
        """Record a code-loading ``recall_embedder`` among ``values`` as set here, by this person, before it is
        stored (:func:`synapse_nb.embedder_trust.record`: human-only; a failure stores nothing)."""
        if EMBEDDER in values:  # the new value, not the one in force
            record_code(self._ctx, values[EMBEDDER])

    def not_in_force(self) -> dict[str, tuple[Any, Any]]:
        """In a borrowed vault, each stored value that is not in force: name -> (stored, in force); {} otherwise."""
        if not self._borrowed:
            return {}
        saved = self._ctx.store.meta.settings(sorted(BORROWED_RULE))
        out = {name: (_stored(name, saved), self._in_force(name, saved)) for name in sorted(BORROWED_RULE)
               if name in saved}
        return {name: pair for name, pair in out.items() if pair[0] != pair[1]}

    def not_in_force_lines(self) -> tuple[str, ...]:
        """:meth:`not_in_force` as one line each (``memory status``, ``settings list``): the values quoted as data."""
        return tuple(f"{name}: stored {json.dumps(shown(s), ensure_ascii=False)}, in force {shown(u)}"
                     for name, (s, u) in self.not_in_force().items())

    def get_many(self, names: Iterable[str]) -> dict[str, Any]:
        """Several settings in one read: name -> value (the default when never set)."""
        names = list(names)
        for name in names:
            check_name(name)
        saved = self._ctx.store.meta.settings(names)
        return {name: self._in_force(name, saved) for name in names}

    def set(self, name: str, value: Any) -> Any:
        """Store ``value`` (checked first: :func:`check_new`). Turning the semantic channel on, or naming its
        model, when that model cannot be loaded here warns (:class:`ModelNotHere`) and stores it."""
        self._ctx.require_human("change settings")
        value = check_new(name, value)
        self._record({name: value})
        self._ctx.store.meta.set_settings({name: value})
        self._model_here({name: value})
        return value

    def _model_here(self, changed: dict[str, Any]) -> None:
        """Warn (:class:`ModelNotHere`) when ``changed`` touches the semantic channel, it is on and its model
        cannot be loaded in this process (found without loading it: :func:`~synapse_nb.store.embedders.unavailable`)."""
        if SEMANTIC not in changed and EMBEDDER not in changed:
            return
        weight = self.get(SEMANTIC)
        if not weight:
            return
        try:
            spec = self.embedder_spec()
        except EmbedderRefused:  # code or files no person set here: never loaded, each recall says so
            return
        from synapse_nb.store.embedders import unavailable

        why = unavailable(spec)
        if why is not None:
            warnings.warn(ModelNotHere(
                f"recall_semantic is {weight} but {why}: recalls here answer from the vault's words alone until it "
                "is (the setting is stored, for the machines that have it; 'synapse-nb settings set recall_semantic "
                "0' turns the channel off)"), stacklevel=3)

    def set_many(self, values: dict[str, Any]) -> dict[str, Any]:
        """Set several settings in one transaction: every value is checked first, then all are written or none.

        >>> v.settings.set_many({"recall_floor": 0.25, "recall_top_k": 3})  # doctest: +SKIP
        {'recall_floor': 0.25, 'recall_top_k': 3}
        """
        self._ctx.require_human("change settings")
        if not isinstance(values, dict):
            raise ValidationError(f"settings must be given as a dict of name -> value, got {type(values).__name__}")
        checked = {name: check_new(name, value) for name, value in values.items()}
        self._record(checked)
        self._ctx.store.meta.set_settings(checked)
        self._model_here(checked)
        return checked

    def as_dict(self) -> dict[str, Any]:
        return self.get_many(sorted(SETTINGS))

    def __repr__(self) -> str:
        return f"Settings({self.as_dict()!r})"
