"""The code-loading embedders a person set, per vault, in a file of this Unix user's outside every vault.

A ``recall_embedder`` spec that loads code or files (:func:`outside_code`: ``import:<module>:
<factory>``, ``sentence-transformers:<folder>``) is stored in the vault, and a vault travels: a clone of a repository
that commits it (borrowed: :mod:`synapse_nb.borrowed`), but also a downloaded archive of that repository (GitHub's
"Download ZIP"), or a copied ``synapse.db``, which nothing marks as someone else's (review 69). So the vault's own
setting never decides alone whether its code runs: such a spec is loaded only when a person on this machine, as
this Unix user, set it for this vault (:meth:`synapse_nb.settings.Settings.set` / ``set_many``, an import with
``trust=True`` of a setting line: all human-only), which :func:`record` writes here, in :func:`trust_file`
(``$XDG_CONFIG_HOME/synapse_nb/embedders.json``, else ``~/.config/synapse_nb/embedders.json``).

An entry is keyed by a digest of the vault's identity (:func:`vault_identity`: a local vault's random ``vault_uid``
and its database's real path, so a copy of a vault elsewhere, with its id, is not the vault the person set it for;
a team vault's project and a digest of its URL) and the exact spec. A vault's stored spec whose key is not in the
file is refused (:func:`set_here` False; :class:`~synapse_nb.errors.EmbedderRefused`, the channel stays off).

An agent running as the same Unix user can edit this file too, as it can the team pins
(:mod:`synapse_nb.vault.pins`): the record turns "a file in the repository runs code" into "something edited a file
of the person's, outside every project" (docs/architecture.md, threat model).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb._util import user_config_dir
from synapse_nb.errors import StoreError
from synapse_nb.locks import held
from synapse_nb.own_files import read_text, state, write_atomic

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.store.base import VaultStore

__all__ = ["TRUST_NAME", "outside_code", "record", "record_code", "set_here", "trust_file", "unrecorded",
           "vault_identity"]

#: The file's name in this user's synapse_nb folder (:func:`synapse_nb._util.user_config_dir`).
TRUST_NAME = "embedders.json"
_VERSION = 1
#: Seconds a writer waits for another writer of the file.
_WAIT = 10.0
#: An embedders file larger than this is not read (an entry is a few hundred bytes).
MAX_TRUST_BYTES = 4 << 20


def outside_code(spec: str) -> bool:
    """Whether the embedder spec ``spec`` loads code or files named by the spec itself (``import:<module>:<factory>``,
    ``sentence-transformers:<folder>``, and any future form with a ``:``), rather than a built-in (``wordllama``,
    ``e5-small``) or a name this process registered (:func:`synapse_nb.store.embedders.register_embedder`: such a
    name never holds a ``:``, so the rule needs no list of forms).

    >>> [outside_code(s) for s in ("wordllama", "e5-small", "mine", "import:evil:make", "sentence-transformers:m")]
    [False, False, False, True, True]
    """
    return ":" in spec


def trust_file() -> Path:
    """Where this user's record is: ``$XDG_CONFIG_HOME/synapse_nb/embedders.json`` (else ``~/.config/...``)."""
    return user_config_dir() / TRUST_NAME


def vault_identity(store: VaultStore) -> str | None:
    """The vault ``store`` is, as the record names it: a local vault's ``vault_uid`` and its database's real path
    (None when it has no id: a read-only open of a vault without one, which then loads no code spec); a team
    vault's project and a digest of its URL (a changed URL, a new password included, asks the person again). A
    store may carry the identity it stands for (``trust_identity``: a past state of a vault, rebuilt in a
    temporary folder for an ``as_of`` recall)."""
    given = getattr(store, "trust_identity", None)
    if isinstance(given, str):
        return given
    uid = getattr(store, "vault_uid", None)
    if callable(uid):
        found = uid()
        path = getattr(store, "path", None)
        if not isinstance(found, str) or not found or path is None:
            return None
        return f"local {found} {os.path.realpath(path)}"
    url, project = getattr(store, "url", None), getattr(store, "project", None)
    if isinstance(url, str) and isinstance(project, str):  # the URL as a digest: it may hold a password
        return f"team {project} {hashlib.sha256(url.encode('utf-8')).hexdigest()[:32]}"
    return None


def _key(identity: str, spec: str) -> str:
    return "sha256:" + hashlib.sha256(json.dumps([identity, spec]).encode("utf-8")).hexdigest()


def _entries(path: Path, *, strict: bool = False) -> dict[str, Any]:
    """The file's entries; {} when it is missing or not what :func:`record` writes (nothing counts as set then).
    ``strict`` (before a rewrite): a file that exists and is not that is an :class:`OSError`, never overwritten (it
    may hold another vault's approvals, or a newer synapse_nb's), as :func:`synapse_nb.vault.pins.write_pin` does."""
    text = read_text(path, cap=MAX_TRUST_BYTES)  # never through a symlink, never a FIFO's hang (review 79)
    try:
        if text is None:
            what = state(path)
            if what == "missing":
                return {}
            raise ValueError("not a regular file: a symlink, a FIFO or a folder is in its place" if what == "damaged"
                             else f"unreadable, not UTF-8 or over {MAX_TRUST_BYTES} bytes")
        data = json.loads(text)
    except ValueError as exc:
        if strict:
            raise OSError(f"it cannot be read ({exc}); move it aside to start a new one") from exc
        return {}
    raw = data.get("embedders") if isinstance(data, dict) and data.get("version") == _VERSION else None
    if not isinstance(raw, dict) and strict:
        raise OSError(f"it is not a version {_VERSION} record of synapse_nb's; move it aside to start a new one")
    return raw if isinstance(raw, dict) else {}


def set_here(store: VaultStore, spec: str) -> bool:
    """Whether a person set ``spec`` for the vault ``store`` is, as this user on this machine (:func:`record`)."""
    identity = vault_identity(store)
    return identity is not None and _key(identity, spec) in _entries(trust_file())


def unrecorded(store: VaultStore, spec: object) -> bool:
    """Whether ``spec`` (a ``recall_embedder`` value, as stored or as a file brings it) loads code or files and no
    person set it for the vault ``store`` is, as this user on this machine: the one test of the settings' reader
    (:meth:`synapse_nb.settings.Settings.embedder_spec`) and of an import's claims (:mod:`synapse_nb.transfer`).

    >>> unrecorded(None, "wordllama"), unrecorded(None, None)  # built-ins and "none" never need a person's record
    (False, False)
    """
    return isinstance(spec, str) and outside_code(spec) and not set_here(store, spec)


def record_code(ctx: Context, spec: object) -> None:
    """:func:`record` ``spec`` when it loads code or files; nothing for a built-in, a registered name or None (the
    one step of a person's ``settings set`` and of an import with ``trust=True``)."""
    if isinstance(spec, str) and outside_code(spec):
        record(ctx, spec)


def record(ctx: Context, spec: str) -> None:
    """Record that the person acting through ``ctx`` set the code-loading ``spec`` for its vault (refused unless a
    human does it: :meth:`~synapse_nb.context.Context.require_human`). :class:`StoreError` when the file cannot be
    written (the caller then stores nothing) or the vault has no identity."""
    ctx.require_human("set a recall_embedder that loads code or files")
    identity = vault_identity(ctx.store)
    if identity is None:
        raise StoreError("cannot record this recall_embedder for this vault: it has no id (it is open read-only); "
                         "open it writable (without SYNAPSE_READONLY) and set it again")
    path = trust_file()
    entry = {"spec": spec, "vault": identity, "by": _who(),
             "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # as the team pins' folder (the same one)
        with held(path.with_name(path.name + ".lock"), _WAIT) as lock:  # never a FIFO's hang (review 79)
            if lock is None:
                raise OSError(f"another process holds {path}.lock")
            entries = {**_entries(path, strict=True), _key(identity, spec): entry}
            write_atomic(path, json.dumps({"version": _VERSION, "embedders": entries}, ensure_ascii=False, indent=1,
                                          sort_keys=True) + "\n")
    except OSError as exc:
        raise StoreError(f"cannot record this recall_embedder in {path}: {exc.strerror or exc}; nothing was "
                         "set") from exc


def _who() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name in this environment
        return "unknown"
