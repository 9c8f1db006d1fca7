"""``synapse-nb settings``: read the vault's settings; a human changes them (the agents' quotas, recall's bars, the
semantic channel, lesson expiry: ``synapse_nb.settings``)."""

from __future__ import annotations

import json
import warnings
from typing import Annotated, Any

import typer

from synapse_nb.cli._common import (
    Group,
    JsonOpt,
    YesOpt,
    echo_json,
    fail,
    group_help,
    open_vault_for,
    require_human_here,
)
from synapse_nb.provenance import quoted
from synapse_nb.render import NOT_IN_FORCE
from synapse_nb.settings import SETTINGS, ModelNotHere, check_name, check_new, shown

__all__ = ["settings_app"]


settings_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Read the vault's settings; a human changes them (agents may read, never change).",
    "synapse-nb settings list",
    "synapse-nb settings set recall_semantic 0.4"))

_NAMES = ", ".join(sorted(SETTINGS))
NameArg = Annotated[str, typer.Argument(help=f"A setting's name: {_NAMES}.", show_default=False)]


def _row(name: str, value: Any, held: dict[str, tuple[Any, Any]] | None = None) -> dict[str, Any]:
    """One setting as JSON; its value (the one in force) and default quoted (:func:`~synapse_nb.provenance.quoted`),
    as every agent-facing JSON carries stored text. ``held``: a borrowed vault's stored values not in force
    (:meth:`~synapse_nb.settings.Settings.not_in_force`): such a row carries its ``stored`` value too."""
    default, _, about = SETTINGS[name]
    row = {"name": name, "value": quoted(value), "default": quoted(default), "changed": value != default,
           "about": about}
    if held and name in held:
        row |= {"stored": quoted(held[name][0]), "in_force": False}
    return row


@settings_app.command("list")
def settings_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every setting with its value, its default and what it does (a changed one is marked with *).

    Examples:

        synapse-nb settings list

        synapse-nb settings list --json
    """
    v = open_vault_for(ctx)
    held = v.settings.not_in_force()  # a borrowed vault's stored values only tighten (synapse_nb.settings)
    rows = [_row(name, value, held) for name, value in v.settings.as_dict().items()]
    if as_json:
        echo_json(rows)
        return
    if held:
        typer.echo(f"{NOT_IN_FORCE}: {'; '.join(v.settings.not_in_force_lines())}")
    values = [shown(r["value"]) + (f" (default: {shown(r['default'])})" if r["changed"] else "")
              + (f" (stored {json.dumps(shown(held[r['name']][0]), ensure_ascii=False)}: not in force)"
                 if r["name"] in held else "") for r in rows]
    width, vwidth = max(len(r["name"]) for r in rows), max(len(x) for x in values)
    for r, value in zip(rows, values, strict=True):
        typer.echo(f"{'*' if r['changed'] else ' '} {r['name']:<{width}}  {value:<{vwidth}}  {r['about']}")


@settings_app.command("get")
def settings_get(ctx: typer.Context, name: NameArg, as_json: JsonOpt = False) -> None:
    """One setting's value (its default when never set).

    Examples:

        synapse-nb settings get recall_floor

        synapse-nb settings get agent_writes_per_hour --json
    """
    check_name(name)  # before the human check: a typo is said first
    v = open_vault_for(ctx)
    value = v.settings.get(name)
    if as_json:
        echo_json(_row(name, value, v.settings.not_in_force()))
    else:
        typer.echo(shown(value))


@settings_app.command("set", context_settings={"ignore_unknown_options": True})  # a value of -3 is a value
def settings_set(
    ctx: typer.Context,
    name: NameArg,
    value: Annotated[str, typer.Argument(help="The new value: a number, a word, or 'none' to clear a setting whose "
                                         "default is none.", show_default=False)],
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Change a setting (human only: refused in an agent's shell; without a terminal, pass --yes). The name and the
    value are checked first, before anything else: a bad one changes nothing and the error says what is accepted
    (a negative number is a value: its range is checked). Turning the semantic channel on when its model's extra is
    not installed here is stored, with a warning: recalls here answer from the vault's words alone until it is.

    Examples:

        synapse-nb settings set recall_embedder e5-small

        synapse-nb settings set recall_semantic 0.4

        synapse-nb settings set agent_writes_per_hour 2000

        synapse-nb settings set auto_checkpoint_cells none
    """
    check_name(name)  # before the human check: a typo, then a bad value, is said first (review 68)
    if value.strip().lower() == "none":
        if SETTINGS[name][0] is not None:
            fail(f"{name} cannot be none; 'synapse-nb settings reset {name}' gives it its default "
                 f"({shown(SETTINGS[name][0])})")
        given: Any = None
    else:
        given = value
    check_new(name, given)
    require_human_here(ctx, yes, "changing a setting")
    v = open_vault_for(ctx)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", ModelNotHere)
        stored = v.settings.set(name, given)
    for w in said:  # the model cannot be loaded here: stored, and said on stderr
        if issubclass(w.category, ModelNotHere):
            typer.echo(f"synapse-nb: warning: {w.message}", err=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if as_json:
        echo_json(_row(name, stored))
    else:
        typer.echo(f"{name} = {shown(stored)}")


@settings_app.command("reset")
def settings_reset(ctx: typer.Context, name: NameArg, yes: YesOpt = False, as_json: JsonOpt = False) -> None:
    """Give a setting its default value again (human only, as ``set``; it needs a vault, and creates none).

    Examples:

        synapse-nb settings reset recall_floor
    """
    check_name(name)  # before the human check: a typo is said first
    require_human_here(ctx, yes, "changing a setting")
    v = open_vault_for(ctx)
    stored = v.settings.set(name, SETTINGS[name][0])
    if as_json:
        echo_json(_row(name, stored))
    else:
        typer.echo(f"{name} = {shown(stored)} (the default)")
