"""Evaluation results kept on disk: one Parquet row per :class:`~synapse_nb.eval.router_eval.RouterEvaluation`."""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import DatasetError, NotFoundError
from synapse_nb.eval.router_eval import RouterEvaluation, _json_safe

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["load_results", "save_results"]


_SCALARS = (
    "in_scope_accuracy",
    "oos_recall",
    "oos_precision",
    "oos_f1",
    "accuracy",
    "criterion",
    "calibrated",
    "n_train",
    "n_val",
    "n_test",
    "n_oos_test",
    "queries_per_second",
)


def _result_row(result: RouterEvaluation | Mapping[str, Any], saved_at: str) -> dict[str, Any]:
    d = result.to_dict() if isinstance(result, RouterEvaluation) else _json_safe(dict(result))
    config = d.get("config") or {}
    row: dict[str, Any] = {
        "saved_at": saved_at,
        "dataset": config.get("dataset"),
        "router": config.get("router"),
    }
    for key in _SCALARS:
        row[key] = d.get(key)
    row["thresholds_json"] = json.dumps(d.get("thresholds"), sort_keys=True)
    row["ci_json"] = json.dumps(d.get("ci"), sort_keys=True)
    row["config_json"] = json.dumps(config, sort_keys=True)
    return row


_SCHEMA_TYPES = {
    "saved_at": "str",
    "dataset": "str",
    "router": "str",
    "criterion": "str",
    "calibrated": "bool",
    "n_train": "int",
    "n_val": "int",
    "n_test": "int",
    "n_oos_test": "int",
    "thresholds_json": "str",
    "ci_json": "str",
    "config_json": "str",
}


def save_results(
    result: RouterEvaluation | Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    saved_at: str | None = None,
) -> Path:
    """Append one evaluation (figures + configuration) as a row of a Parquet file, creating it if needed.

    Columns: ``saved_at`` (UTC ISO 8601), ``dataset``, ``router``, the headline figures, ``criterion``,
    ``calibrated``, sizes, ``queries_per_second``, and ``thresholds_json``, ``ci_json``, ``config_json``
    (JSON text with sorted keys). The file is rewritten atomically (temporary file + rename).

    Parameters
    ----------
    result
        A :class:`RouterEvaluation` or its :meth:`~RouterEvaluation.to_dict`.
    path
        The Parquet file.
    saved_at
        Timestamp to record; defaults to now (UTC).

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> save_results(result, "benchmarks/out/gate_runs.parquet")   # doctest: +SKIP
    >>> load_results("benchmarks/out/gate_runs.parquet")           # doctest: +SKIP
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    path = Path(path)
    stamp = saved_at or _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    row = _result_row(result, stamp)
    dtypes = {"str": pl.String, "bool": pl.Boolean, "int": pl.Int64}
    schema = {k: dtypes[_SCHEMA_TYPES[k]] if k in _SCHEMA_TYPES else pl.Float64 for k in row}
    new = pl.DataFrame([row], schema=schema)
    frame = pl.concat([load_results(path), new], how="diagonal_relaxed") if path.exists() else new
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DatasetError(f"{path}: cannot write results ({exc.strerror or exc})") from None
    return path


def load_results(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read the runs saved by :func:`save_results`, oldest first, as a polars DataFrame.

    Use ``.to_pandas()`` for pandas; ``json.loads`` the ``*_json`` columns for thresholds, intervals, config.
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    path = Path(path)
    if not path.is_file():
        raise NotFoundError(f"{path}: no results file; save_results(result, path) creates it")
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:  # ComputeError on a file that is not Parquet
        raise DatasetError(f"{path}: not a readable results Parquet file ({exc})") from None
