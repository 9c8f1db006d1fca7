"""Schema v10 of a local vault: the digest of each of recall's rank files, kept in the database (review 58).

Recall's structure arrays on disk (``.synapse/cache/rank-*.bin``, :mod:`synapse_nb.recall.rankfile`) are a cache
any process with a shell can rewrite: a CRC-32 and a content check let through a file rewritten consistently (a
person's rule given a BM25 length of 1e7, or its row removed and the file saved at the store's current state), and
such a file hid the rule from every recall and hook. ``rank_files`` holds, per mind, the SHA-256 of the file last
written (and of the one before: a reader between the digest's write and the file's rename reads that one) and the
ranking generation it was written at; recall reads a file only when its digest is the one held
here, so a rewrite needs an edit of ``synapse.db`` too (the admitted "edit the database" class).

A digest is written after the recall's read snapshot, in a write transaction of its own that never waits for the
write lock (busy: the file is not written this time), and moves no data version of the writing process
(:meth:`~synapse_nb.store.sqlite.db.Database.write_if_free`). A row naming a file that is not there, or another one,
is harmless: the file is rebuilt from the rows, as a bad checksum is.
"""

from __future__ import annotations

__all__ = ["GET_RANK_DIGEST", "SET_RANK_DIGEST", "V10_RANK_FILES"]

V10_RANK_FILES = """
CREATE TABLE rank_files(
    mind TEXT PRIMARY KEY,
    gen INTEGER NOT NULL,
    digest TEXT NOT NULL,
    prev TEXT
) WITHOUT ROWID;
"""
GET_RANK_DIGEST = "SELECT digest, prev FROM rank_files WHERE mind = ?"
# the digest before it stays usable: a file is renamed into place just after its digest is kept, and a reader in
# between reads the file the package wrote before (honest, and patched forward by the log)
SET_RANK_DIGEST = ("INSERT INTO rank_files(mind, gen, digest) VALUES (?, ?, ?) ON CONFLICT(mind) DO UPDATE SET "
                   "prev = rank_files.digest, gen = excluded.gen, digest = excluded.digest")
