"""The calibration search: the threshold that maximises a criterion, found exactly over every distinct score.

Both criteria (:data:`~synapse_nb.gate.defaults.CRITERIA`) are sums of per-row gains with integer weights
(:func:`criterion_weights`), so every candidate threshold is counted exactly with
:func:`~synapse_nb.gate.metrics.threshold_counts` and ties are broken by position, never by float noise.

Pure: numpy only.

Examples
--------
>>> import numpy as np
>>> top = np.array([0.9, 0.8, 0.2, 0.1])
>>> correct = np.array([True, True, False, False]); oos = np.array([False, False, True, True])
>>> search_threshold(top, correct, oos, 1, 1, None, np.random.default_rng(0))
(0.5, 4)
>>> criterion_weights("balanced", n_in=30, n_oos=10)
(10, 30)
"""

from __future__ import annotations

import math

import numpy as np

from synapse_nb.errors import ValidationError
from synapse_nb.gate.defaults import CRITERIA
from synapse_nb.gate.metrics import threshold_counts

__all__ = ["criterion_weights", "search_threshold"]


def criterion_weights(criterion: str, *, n_in: int, n_oos: int) -> tuple[int, int]:
    """Integer weights ``(w_in, w_oos)`` of a routed-correct and a rejected-out-of-scope row for ``criterion``.

    ``balanced``: ``(C / n_in + R / n_oos) / 2`` scaled by ``2 * n_in * n_oos``; ``accuracy``: one each.
    """
    if criterion not in CRITERIA:
        raise ValidationError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    if criterion == "balanced":
        if n_in == 0 or n_oos == 0:
            raise ValidationError(
                "criterion 'balanced' needs both in-scope and out-of-scope rows in the calibration data")
        return n_oos, n_in
    return 1, 1


def search_threshold(top: np.ndarray, correct: np.ndarray, is_oos: np.ndarray, w_in: int, w_oos: int,
                     max_candidates: int | None, rng: np.random.Generator) -> tuple[float, int]:
    """``(threshold, gain)`` maximising ``w_in * routed_correct + w_oos * rejected_oos``, exactly.

    Candidates: +inf (reject all), the midpoints between consecutive distinct scores, -inf (route all).
    Of equally good thresholds the middle one (in that order) is taken.
    """
    if len(top) == 0:
        return -math.inf, 0
    s = np.unique(top)[::-1]  # distinct scores, descending
    cand = np.concatenate([[math.inf], (s[:-1] + s[1:]) / 2.0, [-math.inf]])
    keep = np.arange(len(cand))
    if max_candidates is not None and len(cand) > max_candidates:
        keep = np.sort(rng.choice(keep, size=max_candidates, replace=False))
    counts = threshold_counts(top, correct, is_oos, cand[keep])
    gain = w_in * counts["routed_correct"].astype(np.int64) + w_oos * counts["rejected_oos"].astype(np.int64)
    ties = np.flatnonzero(gain == gain.max())
    return float(cand[keep][ties[len(ties) // 2]]), int(gain.max())
