"""The router's defaults, written once: what ``Router()``, ``calibrate``, ``evaluate_router``, ``run_gate_eval``,
``synapse-nb gate eval`` and the notebooks' headline row use when nothing else is said.

Every one of them reads :data:`DEFAULTS` (``tests/test_gate_defaults.py`` checks that the CLI, the API and the
notebook's headline agree). How they were chosen -- on CLINC150's val split and agent_vault's val split only, never
on a test split -- and the alternatives' figures: ``docs/gate.md``, "Defaults".

Pure: no I/O, no scikit-learn.

Examples
--------
>>> DEFAULTS.criterion, DEFAULT_CRITERION
('balanced', 'balanced')
>>> DEFAULTS.embedder is None      # semantic features are an option, off by default
True
>>> DEFAULTS.weight_for("e5-small"), DEFAULTS.weight_for("my-own-model")
(2.0, 1.0)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["BLEND_GRID", "CRITERIA", "DEFAULTS", "DEFAULT_CRITERION", "LINEAR_MIN_EXAMPLES", "METHODS",
           "RouterDefaults"]

#: Scoring methods a router accepts.
METHODS: tuple[str, ...] = ("auto", "centroid", "knn", "linear")
#: Calibration criteria: ``balanced`` (mean of in-scope accuracy and out-of-scope recall: prior-free) or
#: ``accuracy`` (out of scope as its own class, at the calibration data's share of out-of-scope rows).
CRITERIA: tuple[str, ...] = ("accuracy", "balanced")
#: The blends ``method="auto"`` tries when calibrating (0 = linear only, 1 = centroid only).
BLEND_GRID: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
#: ``method="auto"`` before calibration: linear only when the median route has at least this many examples,
#: else centroid only (a linear model needs examples; a described centroid does not).
LINEAR_MIN_EXAMPLES = 20


@dataclass(frozen=True)
class RouterDefaults:
    """One set of router defaults (a frozen record; :data:`DEFAULTS` is the one in force).

    Attributes
    ----------
    criterion
        The calibration criterion (``Router.calibrate``, ``fit_calibrated``, ``evaluate_router``,
        ``run_gate_eval``, ``--criterion``).
    method, C, linear_idf, oos_negatives, min_route_examples, description_weight
        :class:`synapse_nb.gate.Router`'s constructor defaults.
    per_route
        Per-route thresholds when calibrating.
    folds
        Folds of ``fit_calibrated`` / ``--cross-fit`` when asked for without a number.
    embedder
        The embedder spec of the semantic features, or ``None``: off (the lexical router).
    semantic_weight
        Length of a row's semantic block beside its unit-length TF-IDF block, for an embedder not in
        ``semantic_weights``.
    semantic_weights
        ``(embedder name, weight)`` pairs: the weight chosen on val for each built-in embedder (a better
        embedder earns a longer block). :meth:`weight_for` reads them.
    """

    criterion: str = "balanced"
    method: str = "auto"
    C: float = 2.0
    linear_idf: float = 0.5
    oos_negatives: bool = True
    min_route_examples: int = 10
    description_weight: float = 0.5
    per_route: bool = False
    folds: int = 5
    embedder: str | None = None
    semantic_weight: float = 1.0
    semantic_weights: tuple[tuple[str, float], ...] = (("e5-small", 2.0), ("wordllama", 1.0))

    def weight_for(self, embedder_name: str | None) -> float:
        """The semantic block's default length for an embedder called ``embedder_name``."""
        return dict(self.semantic_weights).get(embedder_name or "", self.semantic_weight)

    def as_dict(self) -> dict[str, Any]:
        """The defaults as a plain dict (records of an evaluation, the CLI's help)."""
        return asdict(self)

    def router_kwargs(self) -> dict[str, Any]:
        """The :class:`~synapse_nb.gate.Router` constructor arguments these defaults give."""
        return {"method": self.method, "C": self.C, "linear_idf": self.linear_idf,
                "oos_negatives": self.oos_negatives, "min_route_examples": self.min_route_examples,
                "description_weight": self.description_weight}


#: The defaults in force.
DEFAULTS = RouterDefaults()
#: ``DEFAULTS.criterion``, for signatures.
DEFAULT_CRITERION: str = DEFAULTS.criterion
