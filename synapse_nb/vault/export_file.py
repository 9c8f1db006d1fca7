"""Writing an export to a path without putting the earlier file there at risk (review 89).

``memory export PATH`` (``Vault.export_jsonl(dest)``) used to truncate the file at ``PATH`` and write the new export
in its place: a full disk, or the process killed, destroyed the last good backup and left a torn file, and a cut on
a line boundary imported silently as a partial vault. Now the export goes to a temporary file in the same folder,
flushed to disk, then ``os.replace`` d over ``PATH``: a reader (or a later import) sees the earlier export or the
new one, whole. On any failure the temporary file is removed and the error says the earlier file is untouched.

A symlink at ``PATH`` is followed (its target is replaced, as the plain write did); a path that is not a regular
file (``/dev/stdout``, a FIFO) cannot be replaced and is written as before.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from synapse_nb.errors import StoreError
from synapse_nb.own_files import write_atomic

__all__ = ["write_export"]


def write_export(dest: Path, text: str, *, shown: str) -> None:
    """Write ``text`` (an export) to ``dest`` (its folder exists) all at once: the earlier file there is replaced
    only by the whole new export, keeping its permission bits (a new file gets the process's default, as
    ``open()`` gives it); ``shown`` names the path in the error (a :class:`StoreError`)."""
    target = dest.resolve() if dest.is_symlink() else dest
    try:
        st: os.stat_result | None = os.stat(target)
    except OSError:
        st = None
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):  # a device or a FIFO: nothing to replace
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
        write_atomic(target, text, mode=mode, fsync=True)
    except OSError as exc:
        kept = ("the earlier file there is untouched" if st is not None and stat.S_ISREG(st.st_mode)
                else "no file was left there" if st is None else "it may hold part of the export")
        raise StoreError(f"cannot write the export to {shown!r}: {exc.strerror or exc}; {kept}") from exc


def _umask() -> int:
    """The process's umask, read without setting it (``os.umask`` sets it for every thread); 0o022 when unknown."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
