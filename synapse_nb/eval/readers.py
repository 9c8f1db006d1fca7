"""Reading labelled files: bytes to text (with an error that names file, line and byte), CSV delimiter
sniffing, CSV/TSV, JSON Lines, JSON records and Parquet records, and column detection.

:mod:`synapse_nb.eval.data` turns the records into :class:`~synapse_nb.eval.data.LabelledData`.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Literal, overload

from synapse_nb.errors import DatasetError

__all__ = ["ENCODING_ERRORS", "EXTENSIONS", "pick_column", "sniff_delimiter"]

#: File extension -> reader.
EXTENSIONS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_ACCEPTED_FILES = "CSV/TSV (.csv .tsv .txt), JSON Lines (.jsonl .ndjson), JSON records (.json), Parquet (.parquet .pq)"
#: ``errors=`` values: stop at the first undecodable byte, or read it as U+FFFD.
ENCODING_ERRORS: tuple[str, ...] = ("strict", "replace")


def _decode(path: Path, raw: bytes, encoding: str, errors: str) -> str:
    """Bytes to text; a decoding error names the file, the line and the byte, and what to pass instead."""
    if errors not in ENCODING_ERRORS:
        raise DatasetError(f"errors={errors!r}; accepted: {', '.join(ENCODING_ERRORS)}")
    try:
        text = raw.decode(encoding, errors)
    except LookupError:
        raise DatasetError(
            f"encoding {encoding!r} is not known to Python; accepted: utf-8, latin-1, cp1252, ..."
        ) from None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(
            f"{path}: line {line}, column {col}: byte {raw[exc.start]:#04x} (file offset {exc.start}) is not valid "
            f"{encoding}; pass --encoding (encoding=) with the file's encoding, e.g. latin-1 or cp1252, or "
            "--errors replace (errors='replace') to read it with U+FFFD in place of such bytes"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_text(path: Path, encoding: str = "utf-8", errors: str = "strict") -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file; accepted: {_ACCEPTED_FILES}") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return _decode(path, raw, encoding, errors)


def sniff_delimiter(text: str, default: str = ",") -> str:
    r"""The field delimiter of delimited text: one of ``, ; TAB |`` (:class:`csv.Sniffer` on the first lines).

    Examples
    --------
    >>> sniff_delimiter("text;label\nbook a flight, please;travel\n")
    ';'
    >>> sniff_delimiter("text|label\nhi|greet\n")
    '|'
    """
    import csv

    sample = "\n".join(text.splitlines()[:50])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        header = sample.split("\n", 1)[0]
        counts = {d: header.count(d) for d in ",;\t|"}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else default


def _records_csv(path: Path, sep: str | None, encoding: str,
                 errors: str) -> tuple[list[str], list[dict[str, Any]], int]:
    import pandas as pd  # pandas: only to parse CSV/TSV files

    text = _read_text(path, encoding, errors)
    if sep is None:
        sep = sniff_delimiter(text, "\t" if path.suffix.lower() == ".tsv" else ",")
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise DatasetError(f"{path}: the file is empty; expected a header row and data rows") from None
    except pd.errors.ParserError as exc:
        shown = {"\t": "TAB"}.get(sep, sep)
        raise DatasetError(
            f"{path}: not valid delimited text with delimiter {shown!r} ({str(exc).strip().splitlines()[-1]}); "
            "pass --delimiter (delimiter=) to name the right one"
        ) from None
    columns = [str(c) for c in frame.columns]
    return columns, frame.to_dict(orient="records"), 2  # the header is row 1


def _records_jsonl(path: Path, encoding: str = "utf-8",
                   errors: str = "strict") -> tuple[list[str], list[dict[str, Any]], list[int]]:
    text = _read_text(path, encoding, errors)
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


def _records_json(path: Path, encoding: str, errors: str) -> tuple[list[str], list[dict[str, Any]], int]:
    """A JSON array of objects (records), or an object whose one list value is that array."""
    text = _read_text(path, encoding, errors)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if isinstance(obj, dict):
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(lists) == 1:
            obj = lists[0]
    if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
        raise DatasetError(
            f"{path}: expected JSON records (an array of objects such as [{{\"text\": ..., \"label\": ...}}]); "
            "for one object per line use the .jsonl extension"
        )
    columns: dict[str, None] = {}
    for rec in obj:
        for key in rec:
            columns.setdefault(str(key), None)
    return list(columns), obj, 1


def _records_parquet(path: Path) -> tuple[list[str], list[dict[str, Any]], int]:
    import pyarrow as pa  # pyarrow: only to read Parquet files
    import pyarrow.parquet as pq

    if not path.exists():
        raise DatasetError(f"{path}: no such file; accepted: {_ACCEPTED_FILES}")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:  # ArrowInvalid on a file that is not Parquet
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None
    return list(table.column_names), table.to_pylist(), 1


@overload
def pick_column(path: Path, columns: list[str], given: str | None, names: tuple[str, ...], what: str, flag: str,
                *, required: Literal[True] = ...) -> str: ...
@overload
def pick_column(path: Path, columns: list[str], given: str | None, names: tuple[str, ...], what: str, flag: str,
                *, required: bool) -> str | None: ...
def pick_column(path: Path, columns: list[str], given: str | None, names: tuple[str, ...], what: str, flag: str,
                *, required: bool = True) -> str | None:
    """The column holding ``what``: ``given`` when named (it must exist), else the first of ``names`` found in
    any case; None only when not ``required``."""
    if given:
        if given in columns:
            return given
        raise DatasetError(f"{path}: no column {given!r} ({flag}); found: {', '.join(columns) or 'none'}")
    lower = {c.lower().strip(): c for c in reversed(columns)}
    for name in names:
        if name in lower:
            return lower[name]
    if not required:
        return None
    raise DatasetError(
        f"{path}: no {what} column found; looked for {', '.join(names)} (any case); found: "
        f"{', '.join(columns) or 'none'}; pass {flag} to name yours"
    )


def _read_records(path: Path, kind: str, delimiter: str | None, encoding: str,
                  errors: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    if kind in ("csv", "tsv"):
        columns, records, first = _records_csv(path, delimiter, encoding, errors)
    elif kind == "jsonl":
        return _records_jsonl(path, encoding, errors)
    elif kind == "json":
        columns, records, first = _records_json(path, encoding, errors)
    else:
        columns, records, first = _records_parquet(path)
    return columns, records, list(range(first, first + len(records)))


