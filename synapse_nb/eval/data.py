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

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import DatasetError, ValidationError
from synapse_nb.eval.readers import (
    _ACCEPTED_FILES,
    ENCODING_ERRORS,
    EXTENSIONS,
    _read_records,
    _read_text,
    _records_jsonl,
    pick_column,
    sniff_delimiter,
)
from synapse_nb.gate.metrics import normalize_label

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import polars as pl

__all__ = [
    "ENCODING_ERRORS",
    "EXTENSIONS",
    "LABEL_COLUMNS",
    "SPLIT_COLUMNS",
    "TEXT_COLUMNS",
    "LabelledData",
    "bundled_datasets_dir",
    "load_dataset",
    "load_labelled",
    "load_split_folder",
    "sniff_delimiter",
    "split_of_file",
]

#: Column names (compared lower-cased) taken as the text, label and split columns when none is named.
TEXT_COLUMNS: tuple[str, ...] = ("text", "utterance", "query", "sentence", "question", "prompt")
LABEL_COLUMNS: tuple[str, ...] = ("label", "intent", "category", "class", "route")
SPLIT_COLUMNS: tuple[str, ...] = ("split", "partition", "subset", "set")
_SPLIT_FILE_PREFIXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("train", ("train",)),
    ("val", ("validation", "valid", "val", "dev")),
    ("test", ("test",)),
)
#: Split names that mean the validation split (``val_split`` finds one of these when ``val`` is absent).
VAL_ALIASES: tuple[str, ...] = ("val", "valid", "validation", "dev")
_SPLIT_ORDER = ("train", "val", "validation", "valid", "dev", "test")
_BUNDLED = ("agent_vault", "clinc150", "clinc150_oos_plus")


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

    def find_split(self, name: str) -> str | None:
        """The split called ``name``; for a validation name (:data:`VAL_ALIASES`) any of its aliases. Else ``None``.

        >>> LabelledData(("a", "b"), ("x", None), ("train", "dev")).find_split("val")
        'dev'
        """
        if name in self.splits:
            return name
        if name in VAL_ALIASES:
            return next((s for s in self.splits if s in VAL_ALIASES), None)
        return None

    def carve(self, fraction: float, *, into: str, source: str | None = None, seed: int = 0) -> LabelledData:
        """Move a label-stratified, seeded share of rows into a new split (a hold-out).

        Parameters
        ----------
        fraction
            Share of each label's rows moved (see :func:`synapse_nb.gate.folds.stratified_holdout`).
        into
            The new split's name (``"test"`` for ``--holdout``, ``"val"`` for a validation split).
        source
            The split the rows come from; ``None`` for data without splits, whose other rows become
            ``train``.
        seed
            The same data, fraction and seed always give the same split.

        Examples
        --------
        >>> d = LabelledData(tuple("abcdefghij"), ("x",) * 5 + ("y",) * 5).carve(0.2, into="test")
        >>> d.splits, len(d.split("test")[0])
        (('train', 'test'), 2)
        """
        from synapse_nb.gate.folds import stratified_holdout

        if source is None:
            if self.row_splits is not None:
                raise DatasetError(f"{self.source or self.name}: already has splits ({', '.join(self.splits)})")
            rows = list(range(len(self)))
            splits = ["train"] * len(self)
        else:
            if source not in self.splits:
                raise DatasetError(f"{self.source or self.name}: unknown split {source!r}; known splits: "
                                   f"{', '.join(self.splits)}")
            assert self.row_splits is not None
            rows = [i for i, s in enumerate(self.row_splits) if s == source]
            splits = list(self.row_splits)
        try:
            mask = stratified_holdout([self.labels[i] for i in rows], fraction, seed=seed)
        except ValidationError as exc:
            raise DatasetError(str(exc)) from None
        for i, held in zip(rows, mask, strict=True):
            if held:
                splits[i] = into
        return LabelledData(self.texts, self.labels, tuple(splits), source=self.source, name=self.name,
                            route_descriptions=self.route_descriptions, route_examples=self.route_examples)

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


def load_labelled(
    path: str | os.PathLike[str],
    *,
    text_col: str | None = None,
    label_col: str | None = None,
    split_col: str | None = None,
    delimiter: str | None = None,
    encoding: str = "utf-8",
    errors: str = "strict",
    split: str | None = None,
) -> LabelledData:
    r"""Read a labelled CSV/TSV, JSON Lines, JSON records or Parquet file.

    Parameters
    ----------
    path
        The file; its extension chooses the reader (:data:`EXTENSIONS`).
    text_col, label_col
        The text and label columns; by default the first column named (any case) one of
        :data:`TEXT_COLUMNS` / :data:`LABEL_COLUMNS`. Labels empty/``"oos"``/``"None"``/null are out of
        scope (``None``); numbers become their text.
    split_col
        The column naming each row's split (``train``, ``val``, ``test``, ...); by default one named one
        of :data:`SPLIT_COLUMNS` if present. ``""`` ignores any split column (the data has no splits).
    delimiter
        CSV/TSV field delimiter; by default sniffed from the first lines (``, ; TAB |``).
    encoding, errors
        How bytes become text (Python's codec names; ``errors`` ``"strict"`` or ``"replace"``).
    split
        Give every row this split (a folder of split files reads each file this way).

    Returns
    -------
    LabelledData

    Raises
    ------
    DatasetError
        Unknown extension, unreadable file, bytes not valid in ``encoding`` (naming line and byte),
        missing column, empty text, empty split value, or a label set with fewer than two classes (out of
        scope counts as a class).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.jsonl"
    >>> _ = p.write_text('{"utterance": "a", "intent": "x"}\n{"utterance": "b", "intent": null}\n', encoding="utf-8")
    >>> load_labelled(p).labels
    ('x', None)
    """
    path = Path(path)
    kind = EXTENSIONS.get(path.suffix.lower())
    if kind is None:
        raise DatasetError(f"{path}: unknown extension {path.suffix or '(none)'!r}; accepted: {_ACCEPTED_FILES}")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise DatasetError(f"delimiter={delimiter!r}; accepted: one character such as ',', ';', '|' or a TAB")
    columns, records, rownums = _read_records(path, kind, delimiter, encoding, errors)
    unit = "line" if kind == "jsonl" else "row"
    if not records:
        raise DatasetError(f"{path}: no data rows")
    tcol = pick_column(path, columns, text_col, TEXT_COLUMNS, "text", "--text-col (text_col=)")
    lcol = pick_column(path, columns, label_col, LABEL_COLUMNS, "label", "--label-col (label_col=)")
    scol = None if split_col == "" or split is not None else pick_column(
        path, columns, split_col, SPLIT_COLUMNS, "split", "--split-col (split_col=)", required=False)
    texts: list[str] = []
    labels: list[str | None] = []
    splits: list[str] = []
    for rownum, rec in zip(rownums, records, strict=True):
        text = rec.get(tcol)
        if text is None or (isinstance(text, float) and math.isnan(text)):
            text = ""
        if not isinstance(text, str):
            raise DatasetError(f"{path}: {unit} {rownum}: {tcol!r} is {type(text).__name__}; expected text")
        text = text.strip()
        if not text:
            raise DatasetError(f"{path}: {unit} {rownum}: empty {tcol!r}; every row needs a text")
        try:
            label = normalize_label(rec.get(lcol))
        except ValidationError as exc:
            raise DatasetError(f"{path}: {unit} {rownum}: {exc}") from None
        texts.append(text)
        labels.append(label)
        if scol is not None:
            raw = rec.get(scol)
            value = "" if raw is None else str(raw).strip()
            if not value:
                raise DatasetError(
                    f"{path}: {unit} {rownum}: empty {scol!r}; every row needs a split when the column exists "
                    "(pass --split-col '' to ignore the column)"
                )
            splits.append(value)
    if split is None:
        _check_classes(path, labels)
    row_splits = tuple(splits) if scol is not None else ((split,) * len(texts) if split is not None else None)
    return LabelledData(tuple(texts), tuple(labels), row_splits, source=str(path), name=path.stem)


def split_of_file(path: Path) -> str | None:
    """The split a file of a split folder holds, from its name: ``train*``, ``val*``/``valid*``/``dev*``, ``test*``.

    >>> (split_of_file(Path("train-00000-of-00001.parquet")), split_of_file(Path("dev.tsv")),
    ...  split_of_file(Path("x.csv")))
    ('train', 'val', None)
    """
    if path.suffix.lower() not in EXTENSIONS:
        return None
    stem = path.name[: -len(path.suffix)].lower()
    for split, prefixes in _SPLIT_FILE_PREFIXES:
        if stem.startswith(prefixes):
            return split
    return None


def load_split_folder(
    folder: str | os.PathLike[str],
    *,
    text_col: str | None = None,
    label_col: str | None = None,
    delimiter: str | None = None,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> LabelledData:
    """Read a folder of split files (``train.csv``, ``dev.tsv``, ``test.jsonl``, ``train-0000.parquet``, ...).

    A file's split comes from its name (:func:`split_of_file`): ``val``, ``valid``, ``validation`` and ``dev``
    all become ``val``. Several files of one split are read in name order. When the folder itself holds no
    split file, its ``data/`` subfolder is tried (the Hugging Face layout).

    Raises
    ------
    DatasetError
        No split file, or what :func:`load_labelled` raises for one of them.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and split_of_file(p))
    if not files and (folder / "data").is_dir():
        files = sorted(p for p in (folder / "data").iterdir() if p.is_file() and split_of_file(p))
    if not files:
        found = ", ".join(sorted(p.name for p in folder.iterdir())[:10]) or "nothing"
        raise DatasetError(
            f"{folder}: not a dataset folder; accepted: split files named train.*, val.*/valid*/validation*/dev.*, "
            f"test.* ({_ACCEPTED_FILES}), a CLINC150 folder (data_full.json) or an agent_vault folder "
            f"(hubs.jsonl + queries.csv); found: {found}"
        )
    parts = [load_labelled(p, text_col=text_col, label_col=label_col, delimiter=delimiter, encoding=encoding,
                           errors=errors, split=split_of_file(p)) for p in files]
    texts = tuple(t for d in parts for t in d.texts)
    labels = tuple(y for d in parts for y in d.labels)
    splits = tuple(s for d in parts for s in (d.row_splits or ()))
    _check_classes(folder, labels)
    return LabelledData(texts, labels, splits, source=str(folder), name=folder.name)


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


def load_dataset(
    name_or_path: str | os.PathLike[str],
    *,
    variant: str | None = None,
    text_col: str | None = None,
    label_col: str | None = None,
    split_col: str | None = None,
    delimiter: str | None = None,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> LabelledData:
    """Load a bundled dataset by name or folder, or any labelled file.

    Parameters
    ----------
    name_or_path
        ``"agent_vault"``, ``"clinc150"``, ``"clinc150_oos_plus"`` (looked up in the repository's
        ``datasets/`` folder, see :func:`bundled_datasets_dir`), a folder holding one of them, or a
        labelled file (see :func:`load_labelled`).
    variant
        CLINC150 only: ``"full"`` (default) or ``"oos_plus"`` (250 out-of-scope training rows).
    text_col, label_col, split_col, delimiter, encoding, errors
        For a labelled file or a folder of split files: see :func:`load_labelled`.

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
    options: dict[str, Any] = {"text_col": text_col, "label_col": label_col, "split_col": split_col,
                               "delimiter": delimiter, "encoding": encoding, "errors": errors}
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
        return load_split_folder(path, **{k: v for k, v in options.items() if k != "split_col"})
    clinc_files = {"data_full.json": "full", "data_oos_plus.json": "oos_plus"}
    if path.is_file() and path.name in clinc_files:  # CLINC150's own file, given directly
        return _load_clinc(path.parent, variant or clinc_files[path.name])
    if not path.exists() and path.suffix.lower() not in EXTENSIONS:
        raise DatasetError(
            f"{raw}: no such file or dataset; accepted: {', '.join(_BUNDLED)}, a folder of split files, "
            f"or a labelled file ({_ACCEPTED_FILES})"
        )
    return load_labelled(path, **options)
