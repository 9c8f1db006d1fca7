"""Deterministic, label-stratified folds and hold-outs (cross-fitting, ``--holdout``).

Rows of each label (out of scope is a label of its own) are shuffled with numpy's PCG64 seeded by
``seed`` and dealt in turn, so every fold or part gets its share of every label. The same labels and
seed give the same split on every machine, whatever ``PYTHONHASHSEED``: labels are visited in sorted
order, never in set order.

Examples
--------
>>> stratified_folds(["a", "a", "b", "b", None, None], 2, seed=0).tolist()
[0, 1, 0, 1, 0, 1]
>>> int(stratified_holdout(["a"] * 5 + ["b"] * 5, 0.2, seed=0).sum())
2
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from synapse_nb.errors import ValidationError

__all__ = ["stratified_folds", "stratified_holdout"]


def _groups(labels: Sequence[str | None]) -> list[np.ndarray]:
    by: dict[str, list[int]] = {}
    for i, y in enumerate(labels):
        by.setdefault("\x00" if y is None else "\x01" + str(y), []).append(i)
    return [np.array(by[k], dtype=np.int64) for k in sorted(by)]


def stratified_folds(labels: Sequence[str | None], n_folds: int, *, seed: int = 0) -> np.ndarray:
    """The fold (0 .. ``n_folds`` - 1) of each row, label by label.

    Within a label the shuffled rows are dealt round-robin, starting where the previous label stopped,
    so labels with fewer rows than folds still spread over different folds.

    Raises
    ------
    ValidationError
        ``n_folds`` below 2, or more folds than rows.
    """
    if not isinstance(n_folds, int) or isinstance(n_folds, bool) or n_folds < 2:
        raise ValidationError(f"n_folds must be an int >= 2, got {n_folds!r}")
    if n_folds > len(labels):
        raise ValidationError(f"{n_folds} folds but only {len(labels)} rows; use fewer folds")
    rng = np.random.default_rng(seed)
    fold = np.empty(len(labels), dtype=np.int64)
    start = 0
    for rows in _groups(labels):
        perm = rows[rng.permutation(len(rows))]
        fold[perm] = (start + np.arange(len(perm))) % n_folds
        start = (start + len(perm)) % n_folds
    return fold


def stratified_holdout(labels: Sequence[str | None], fraction: float, *, seed: int = 0) -> np.ndarray:
    """A boolean mask of the rows held out: ``round(fraction * n)`` rows of each label of ``n`` rows.

    A label with a single row is never held out (it would vanish from the rest); every other label keeps
    at least one row on each side.

    Raises
    ------
    ValidationError
        ``fraction`` outside (0, 1).
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 < fraction < 1.0:
        raise ValidationError(f"the hold-out fraction must be a number strictly between 0 and 1, got {fraction!r}")
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for rows in _groups(labels):
        perm = rows[rng.permutation(len(rows))]
        if len(rows) < 2:
            continue
        take = min(max(1, round(fraction * len(rows))), len(rows) - 1)
        mask[perm[:take]] = True
    return mask
