"""Semantic tables that cannot be read, found and removed by a person's upkeep (``index rebuild``,
``index check --repair``) and by a deletion's whole-index scrub.

A semantic table's files can be truncated by a shell (an agent's), a full disk or a killed write. Recall then answers
from BM25 alone (:class:`~synapse_nb.recall.semantic.Fallback`), but a process that has not loaded the table's
model (the CLI never loads it) cannot rebuild it: it would have to embed the whole vault. So the person's upkeep
reads every semantic table as recall's load does (every column, every row, in batches: open it, read its rows), and
removes one that cannot be read with its ``.proj`` and ``.queue`` files; the next recall with the channel builds it
from SQLite, as it builds a changed model's table (under an agent hook's deadline, in steps). A readable table is
left as it is: rebuilding it would re-embed the whole vault (with e5, minutes to hours).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.store.index.dense import _PREFIX
from synapse_nb.store.index.maintenance import one_line, sound_table

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.store.index.dense import DenseIndex

__all__ = ["drop", "drop_every", "drop_projections", "read_or_remove", "remove", "unreadable"]


def unreadable(path: Path) -> dict[str, str]:
    """The semantic tables of the index folder ``path`` that cannot be read as recall reads them, each with what
    failed: :func:`~synapse_nb.store.index.audit.audit`'s one rule (``index check`` reads them through it too)."""
    from synapse_nb.store.index.audit import audit

    return audit(path, ())[1]


#: The files beside a semantic table's folder that go with it.
_BESIDE = (".proj", ".queue", ".queue.tmp")


def _delete(path: Path, name: str) -> None:
    table = path / f"{name}.lance"
    if table.is_symlink() or (table.exists() and not table.is_dir()):
        table.unlink(missing_ok=True)  # the entry itself, never what it names (review 81)
    elif table.is_dir():
        with contextlib.suppress(OSError):
            os.chmod(table, 0o700)  # a table closed with chmod 000 by this user (review 81)
    shutil.rmtree(table, ignore_errors=True)
    for suffix in _BESIDE:
        (path / f"{name}{suffix}").unlink(missing_ok=True)


def remove(path: Path, bad: dict[str, str]) -> tuple[str, ...]:
    """Remove the tables ``bad`` names (from :func:`unreadable`) with their projection and queue files, saying so (a
    warning: the CLI prints it on stderr); returns their names."""
    for name, why in sorted(bad.items()):
        _delete(path, name)
        logging.getLogger("synapse_nb.index").warning(
            "removed the semantic table %s: it could not be read (%s); the next recall with the semantic channel "
            "builds it again from SQLite", name, why)
    return tuple(sorted(bad))


def drop(path: Path, loaded: DenseIndex | None) -> tuple[str, ...]:
    """Remove the semantic tables of the index folder ``path`` that cannot be read (under the index lock), closing
    ``loaded`` (this process's table) when it is one of them; returns their names."""
    bad = unreadable(path)
    if loaded is not None and loaded.name in bad:
        loaded.close()
    return remove(path, bad)


def drop_every(path: Path) -> tuple[str, ...]:
    """Remove every semantic table of the index folder ``path`` with its projection and queue files (under the index
    lock): a person's ``index rebuild`` in a process that has not loaded their model (review 56: a readable table an
    agent's shell rewrote, digests kept, was left as it was). The next recall with the channel builds it from
    SQLite, re-embedding the vault. Returns the tables' names."""
    if not path.is_dir():
        return ()
    names = sorted(p.name.removesuffix(".lance") for p in path.glob(f"{_PREFIX}*.lance"))
    strays = {p.name.removesuffix(s) for s in _BESIDE for p in path.glob(f"{_PREFIX}*{s}")}  # a table's leftovers
    for name in sorted(set(names) | strays):
        _delete(path, name)
    return tuple(names)


def drop_projections(path: Path) -> int:
    """Remove every semantic table's sketch projection (``.proj``) of the index folder ``path`` (under the index
    lock): a person's ``index check --repair``. The next search of a table of ``ann_threshold`` rows or more makes
    it again from the table (tens of milliseconds at 50,000 rows: docs/recall.md), so a file an agent's shell wrote
    in a form the reader accepts never outlives a repair (review 58). Returns how many were removed."""
    gone = 0
    for f in path.glob(f"{_PREFIX}*.proj") if path.is_dir() else ():
        f.unlink(missing_ok=True)
        gone += 1
    return gone


def read_or_remove(db: Any, path: Path, name: str) -> Any | None:
    """Every row of table ``name`` as Arrow (a deletion's whole-index scrub rewrites it), or None when it cannot be
    read: a semantic table is then removed (:func:`remove`: no deleted text is left in it either), any other error
    raised."""
    try:
        sound_table(path / f"{name}.lance")  # never a FIFO's hang (review 81)
        return db.open_table(name).to_arrow()
    except MemoryError:
        raise
    except Exception as exc:
        if not name.startswith(_PREFIX):
            raise
        remove(path, {name: one_line(exc)})
        return None
