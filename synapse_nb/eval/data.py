"""Labelled routing data: load a CSV, JSON Lines or Parquet file, or a bundled dataset folder.

A labelled file has a text column, a label column and, optionally, a split column. A label that is
empty, ``"oos"``, ``"None"``, ``"null"`` (any case) or a missing value means *out of scope* and is
normalised to ``None``. Bad input raises :class:`~synapse_nb.errors.DatasetError` naming the file, the
row as a person counts it (CSV: the spreadsheet row, the header being row 1; JSON Lines: the line;
Parquet: the 1-based data row) and the problem.

Examples
--------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "q.csv"
>>> _ = p.write_text("text,label,split\\nrun the tests,testing,train\\nhello,,train\\n"
...                  "deploy now,deployment,test\\n", encoding="utf-8")
>>> data = load_labelled(p)
>>> data.splits, data.routes
(('train', 'test'), ('deployment', 'testing'))
>>> data.split("train")
(['run the tests', 'hello'], ['testing', None])
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import DatasetError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import polars as pl

__all__ = [
    "OOS_STRINGS",
    "LabelledData",
    "bundled_datasets_dir",
    "load_dataset",
    "load_labelled",
    "normalize_label",
]

#: label strings (compared lower-cased, stripped) that mean "out of scope"
OOS_STRINGS: tuple[str, ...] = ("", "none", "null", "oos")

_EXTENSIONS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_SPLIT_ORDER = ("train", "val", "validation", "dev", "test")
_BUNDLED = ("agent_vault", "clinc150", "clinc150_oos_plus")


def normalize_label(value: Any) -> str | None:
    """Return the route name of a raw label, or ``None`` for out of scope.

    Examples
    --------
    >>> [normalize_label(v) for v in ["auth", " auth ", "", "OOS", "None", None, float("nan")]]
    ['auth', 'auth', None, None, None, None, None]
    """
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, bool):
        raise DatasetError(f"label {value!r} is a boolean; accepted: a route name, or empty/'oos'/None for out of scope")
    text = str(value).strip()
    return None if text.lower() in OOS_STRINGS else text


def _split_sort_key(name: str) -> tuple[int, str]:
    return (_SPLIT_ORDER.index(name), "") if name in _SPLIT_ORDER else (len(_SPLIT_ORDER), name)


@dataclass(frozen=True)
class LabelledData:
    """Texts with route labels (``None`` = out of scope) and an optional split per row.

    Attributes
    ----------
    texts, labels, row_splits
        One entry per row, in file order; ``row_splits`` is ``None`` when there is no split column.
    source
        The file or folder it was read from.
    name
        A short name (the bundled dataset's name, or the file stem).
    route_descriptions
        Route name -> description (e.g. agent_vault's hub triggers); empty when the data has none.
    route_examples
        Route name -> example requests that define it (agent_vault's hub ``examples``); not in any split.

    Examples
    --------
    >>> d = LabelledData(("a b", "c"), ("x", None), ("train", "test"))
    >>> d.split("test"), len(d)
    ((['c'], [None]), 2)
    """

    texts: tuple[str, ...]
    labels: tuple[str | None, ...]
    row_splits: tuple[str, ...] | None = None
    source: str = ""
    name: str = ""
    route_descriptions: Mapping[str, str] = field(default_factory=dict)
    route_examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.labels):
            raise DatasetError(f"{self.source or self.name}: {len(self.texts)} texts but {len(self.labels)} labels")
        if self.row_splits is not None and len(self.row_splits) != len(self.texts):
            raise DatasetError(f"{self.source or self.name}: {len(self.texts)} texts but {len(self.row_splits)} splits")

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def splits(self) -> tuple[str, ...]:
        """Split names present, train/val/test first, then the others sorted; ``()`` without a split column."""
        if self.row_splits is None:
            return ()
        return tuple(sorted(set(self.row_splits), key=_split_sort_key))

    @property
    def routes(self) -> tuple[str, ...]:
        """Route names (labels other than out of scope), sorted."""
        return tuple(sorted({label for label in self.labels if label is not None}))

    @property
    def n_oos(self) -> int:
        """Number of out-of-scope rows."""
        return sum(1 for label in self.labels if label is None)

    def split(self, name: str | None = None) -> tuple[list[str], list[str | None]]:
        """Return ``(texts, labels)`` of one split, or of every row when ``name`` is ``None``.

        Raises
        ------
        DatasetError
            If the split is unknown; the message lists the known ones.
        """
        if name is None:
            return list(self.texts), list(self.labels)
        if name not in self.splits:
            known = ", ".join(self.splits) if self.splits else "none: the data has no split column"
            raise DatasetError(f"{self.source or self.name}: unknown split {name!r}; known splits: {known}")
        assert self.row_splits is not None
        idx = [i for i, s in enumerate(self.row_splits) if s == name]
        return [self.texts[i] for i in idx], [self.labels[i] for i in idx]

    def has_oos(self, name: str | None = None) -> bool:
        """Whether the split (or the whole data) has at least one out-of-scope row."""
        return any(label is None for label in self.split(name)[1])

    def to_polars(self) -> pl.DataFrame:
        """Columns ``text``, ``label`` (null = out of scope) and ``split`` (null without a split column)."""
        import polars as pl  # polars (about 1 s to import): only where a table is built

        return pl.DataFrame(
            {
                "text": list(self.texts),
                "label": list(self.labels),
                "split": list(self.row_splits) if self.row_splits is not None else [None] * len(self.texts),
            },
            schema={"text": pl.String, "label": pl.String, "split": pl.String},
        )

    def to_pandas(self) -> pd.DataFrame:
        """Same columns as :meth:`to_polars`, as a pandas DataFrame."""
        import pandas as pd  # pandas: only for this conversion

        return pd.DataFrame(
            {
                "text": list(self.texts),
                "label": list(self.labels),
                "split": list(self.row_splits) if self.row_splits is not None else [None] * len(self.texts),
            }
        )

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s}={len(self.split(s)[0])}" for s in self.splits) or f"rows={len(self)}"
        return f"LabelledData({self.name!r}, {sizes}, routes={len(self.routes)}, oos={self.n_oos})"


# ----------------------------------------------------------------------------------------------- reading


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file; accepted: a CSV, TSV, JSON Lines or Parquet file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DatasetError(
            f"{path}: line {line}: bytes that are not UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None


def _records_csv(path: Path, sep: str) -> tuple[list[str], list[dict[str, Any]], int]:
    import pandas as pd  # pandas: only to parse CSV/TSV files

    text = _read_text(path)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise DatasetError(f"{path}: the file is empty; expected a header row and data rows") from None
    except pd.errors.ParserError as exc:
        raise DatasetError(f"{path}: not valid CSV ({str(exc).strip().splitlines()[-1]})") from None
    columns = [str(c) for c in frame.columns]
    return columns, frame.to_dict(orient="records"), 2  # the header is row 1


def _records_jsonl(path: Path) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    text = _read_text(path)
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    columns: dict[str, None] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}")
        for key in obj:
            columns.setdefault(str(key), None)
        records.append(obj)
        lines.append(lineno)
    return list(columns), records, lines


def _records_parquet(path: Path) -> tuple[list[str], list[dict[str, Any]], int]:
    import pyarrow.parquet as pq  # pyarrow: only to read Parquet files

    if not path.exists():
        raise DatasetError(f"{path}: no such file; accepted: a CSV, TSV, JSON Lines or Parquet file")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError subclasses
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None
    return list(table.column_names), table.to_pylist(), 1


def load_labelled(
    path: str | os.PathLike[str],
    *,
    text_col: str = "text",
    label_col: str = "label",
    split_col: str | None = "split",
) -> LabelledData:
    """Read a labelled CSV (``.csv``, ``.tsv``), JSON Lines (``.jsonl``, ``.ndjson``) or Parquet file.

    Parameters
    ----------
    path
        The file; its extension chooses the reader.
    text_col, label_col
        Required columns. Labels empty/``"oos"``/``"None"``/null are out of scope (``None``).
    split_col
        Optional column naming each row's split (``train``, ``val``, ``test``, ...). When the file has no
        such column the data has no splits; ``None`` ignores the column even if present.

    Returns
    -------
    LabelledData

    Raises
    ------
    DatasetError
        Unknown extension, unreadable or non-UTF-8 file, missing column, empty text, empty split value,
        or a label set with fewer than two classes (out of scope counts as a class).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.jsonl"
    >>> _ = p.write_text('{"text": "a", "label": "x"}\\n{"text": "b", "label": null}\\n', encoding="utf-8")
    >>> load_labelled(p).labels
    ('x', None)
    """
    path = Path(path)
    kind = _EXTENSIONS.get(path.suffix.lower())
    if kind is None:
        accepted = ", ".join(sorted(_EXTENSIONS))
        raise DatasetError(f"{path}: unknown extension {path.suffix or '(none)'!r}; accepted: {accepted}")
    rownums: list[int]
    if kind in ("csv", "tsv"):
        columns, records, first = _records_csv(path, "," if kind == "csv" else "\t")
        rownums = list(range(first, first + len(records)))
    elif kind == "jsonl":
        columns, records, rownums = _records_jsonl(path)
    else:
        columns, records, first = _records_parquet(path)
        rownums = list(range(first, first + len(records)))
    unit = "line" if kind == "jsonl" else "row"
    if not records:
        raise DatasetError(f"{path}: no data rows; expected columns {text_col!r} and {label_col!r}")
    for col in (text_col, label_col):
        if col not in columns:
            where = "header (row 1)" if kind in ("csv", "tsv") else "columns"
            raise DatasetError(
                f"{path}: {where}: missing column {col!r}; found: {', '.join(columns) or 'none'}; "
                "pass text_col=/label_col= to name yours"
            )
    use_split = split_col is not None and split_col in columns
    texts: list[str] = []
    labels: list[str | None] = []
    splits: list[str] = []
    for rownum, rec in zip(rownums, records, strict=True):
        text = rec.get(text_col)
        if text is None or (isinstance(text, float) and math.isnan(text)):
            text = ""
        if not isinstance(text, str):
            raise DatasetError(f"{path}: {unit} {rownum}: {text_col!r} is {type(text).__name__}; expected text")
        text = text.strip()
        if not text:
            raise DatasetError(f"{path}: {unit} {rownum}: empty {text_col!r}; every row needs a text")
        try:
            label = normalize_label(rec.get(label_col))
        except DatasetError as exc:
            raise DatasetError(f"{path}: {unit} {rownum}: {exc}") from None
        texts.append(text)
        labels.append(label)
        if use_split:
            assert split_col is not None
            raw = rec.get(split_col)
            value = "" if raw is None else str(raw).strip()
            if not value:
                raise DatasetError(
                    f"{path}: {unit} {rownum}: empty {split_col!r}; every row needs a split when the column exists"
                )
            splits.append(value)
    _check_classes(path, labels)
    return LabelledData(
        tuple(texts),
        tuple(labels),
        tuple(splits) if use_split else None,
        source=str(path),
        name=path.stem,
    )


def _check_classes(source: Path | str, labels: Sequence[str | None]) -> None:
    classes = {label for label in labels if label is not None}
    has_oos = any(label is None for label in labels)
    if not classes:
        raise DatasetError(f"{source}: every label is out of scope; a routing set needs at least one route label")
    if len(classes) + has_oos < 2:
        only = sorted(classes)[0]
        raise DatasetError(
            f"{source}: the label set has one class ({only!r}); add another route or out-of-scope rows"
        )


# ----------------------------------------------------------------------------------------------- bundled


def bundled_datasets_dir() -> Path | None:
    """The repository's ``datasets/`` folder, or ``None`` when synapse_nb runs from an installed wheel.

    ``SYNAPSE_DATASETS`` overrides it. The datasets are evaluation data of the source repository and are
    never shipped in the wheel or sdist.
    """
    env = os.environ.get("SYNAPSE_DATASETS")
    if env:
        return Path(env)
    candidate = Path(__file__).resolve().parents[2] / "datasets"
    return candidate if candidate.is_dir() else None


def _load_clinc(folder: Path, variant: str) -> LabelledData:
    files = {"full": "data_full.json", "oos_plus": "data_oos_plus.json"}
    if variant not in files:
        raise DatasetError(f"{folder}: unknown CLINC150 variant {variant!r}; accepted: full, oos_plus")
    path = folder / files[variant]
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    texts: list[str] = []
    labels: list[str | None] = []
    splits: list[str] = []
    for split in ("train", "val", "test"):
        for key in (split, f"oos_{split}"):
            rows = data.get(key)
            if not isinstance(rows, list):
                raise DatasetError(f"{path}: missing list {key!r}; expected keys train, val, test, oos_train, ...")
            for i, row in enumerate(rows, start=1):
                if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and row[0].strip()):
                    raise DatasetError(f"{path}: {key!r} row {i}: expected [query, intent], got {row!r}")
                texts.append(row[0].strip())
                labels.append(None if key.startswith("oos_") else normalize_label(row[1]))
                splits.append(split)
    name = "clinc150" if variant == "full" else "clinc150_oos_plus"
    return LabelledData(tuple(texts), tuple(labels), tuple(splits), source=str(path), name=name)


def _load_agent_vault(folder: Path) -> LabelledData:
    data = load_labelled(folder / "queries.csv")
    hubs_path = folder / "hubs.jsonl"
    _, records, lines = _records_jsonl(hubs_path)
    descriptions: dict[str, str] = {}
    examples: dict[str, tuple[str, ...]] = {}
    for lineno, rec in zip(lines, records, strict=True):
        name, trigger = rec.get("name"), rec.get("trigger")
        if not (isinstance(name, str) and name and isinstance(trigger, str) and trigger.strip()):
            raise DatasetError(f"{hubs_path}: line {lineno}: expected non-empty 'name' and 'trigger' strings")
        descriptions[name] = trigger.strip()
        examples[name] = tuple(str(e).strip() for e in rec.get("examples", []) if str(e).strip())
    unknown = sorted(set(data.routes) - set(descriptions))
    if unknown:
        raise DatasetError(f"{folder / 'queries.csv'}: labels with no hub in hubs.jsonl: {', '.join(unknown)}")
    return LabelledData(
        data.texts,
        data.labels,
        data.row_splits,
        source=str(folder),
        name="agent_vault",
        route_descriptions=dict(sorted(descriptions.items())),
        route_examples=dict(sorted(examples.items())),
    )


def load_dataset(name_or_path: str | os.PathLike[str], *, variant: str | None = None) -> LabelledData:
    """Load a bundled dataset by name or folder, or any labelled file.

    Parameters
    ----------
    name_or_path
        ``"agent_vault"``, ``"clinc150"``, ``"clinc150_oos_plus"`` (looked up in the repository's
        ``datasets/`` folder, see :func:`bundled_datasets_dir`), a folder holding one of them, or a
        labelled file (see :func:`load_labelled`).
    variant
        CLINC150 only: ``"full"`` (default) or ``"oos_plus"`` (250 out-of-scope training rows).

    Notes
    -----
    CLINC150 (Larson et al., EMNLP 2019, CC BY 3.0) is loaded as the "Full" setting: its ``train``,
    ``val`` and ``test`` lists with ``oos_train``, ``oos_val``, ``oos_test`` merged into the matching
    split as out-of-scope rows (15,100 / 3,100 / 5,500 rows).

    Examples
    --------
    >>> d = load_dataset("agent_vault")  # doctest: +SKIP
    >>> d.splits  # doctest: +SKIP
    ('train', 'val', 'test')
    """
    raw = os.fspath(name_or_path)
    path = Path(raw)
    if not path.exists() and raw in _BUNDLED:
        root = bundled_datasets_dir()
        if root is None:
            raise DatasetError(
                f"dataset {raw!r}: the bundled datasets live in the source repository's datasets/ folder, "
                "which this installation does not have; pass its path or set SYNAPSE_DATASETS"
            )
        if raw == "clinc150_oos_plus":
            variant = variant or "oos_plus"
        path = root / ("clinc150" if raw.startswith("clinc150") else raw)
    if path.is_dir():
        if (path / "data_full.json").is_file():
            return _load_clinc(path, variant or "full")
        if (path / "queries.csv").is_file() and (path / "hubs.jsonl").is_file():
            return _load_agent_vault(path)
        raise DatasetError(
            f"{path}: not a known dataset folder; accepted: a CLINC150 folder (data_full.json) "
            "or an agent_vault folder (hubs.jsonl + queries.csv)"
        )
    if not path.exists() and path.suffix.lower() not in _EXTENSIONS:
        raise DatasetError(
            f"{raw}: no such file or dataset; accepted: {', '.join(_BUNDLED)}, a dataset folder, "
            f"or a labelled file ({', '.join(sorted(_EXTENSIONS))})"
        )
    return load_labelled(path)
