"""The site's data files as JSON: the encoder, and the literal builders that turn whole columns
into JSON text with pyarrow (a shard's JSON is joined from its columns' literals)."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def write_data_file(path: Path, kind: str, key: int | None, payload: Any) -> int:
    """Write ``RR.load(kind, key, payload);`` to ``path``; return the bytes written."""
    text = f"RR.load({json.dumps(kind)},{json.dumps(key)},{to_json(payload)});\n"
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


def to_json(obj: Any) -> str:
    return _ENCODER.encode(obj)


def _plain(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return json_number(float(obj))
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


#: The data files' JSON: compact, UTF-8, no NaN; the payloads are trees (no cycle check).
_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False, default=_plain
)


def json_number(v: Any) -> Any:
    """A JSON-safe number: None for NaN / inf, floats to 10 significant digits."""
    if v is None:
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return None
    return float(f"{f:.10g}")


def large_text(value: str) -> pa.Scalar:
    """A pyarrow large-string scalar (what the JSON-building kernels here take)."""
    return pa.scalar(value, pa.large_string())


def int_literals(values: np.ndarray) -> pa.Array:
    """Integers as their JSON literals."""
    return pc.cast(pa.array(values, pa.int64()), pa.large_string())


def count_literals(df: pd.DataFrame, name: str, rows: np.ndarray) -> pa.Array:
    """Column ``name`` at ``rows`` as JSON integers (``null``: missing, or the column absent)."""
    if name not in df.columns:
        return pa.array(np.full(len(rows), "null", dtype=object), pa.large_string())
    values = pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float)[rows]
    ints = pa.array(np.nan_to_num(values).astype(np.int64), mask=np.isnan(values))
    return pc.fill_null(pc.cast(ints, pa.large_string()), "null")


def list_literals(values: np.ndarray | pa.Array, bounds: np.ndarray) -> pa.Array:
    """``"[v,v,...]"`` for each run ``values[bounds[j]:bounds[j + 1]]``: integers, or strings that
    are already JSON (a list of lists)."""
    if not isinstance(values, pa.Array):
        values = int_literals(values)
    elif values.type != pa.large_string():
        values = values.cast(pa.large_string())
    runs = pa.LargeListArray.from_arrays(pa.array(bounds, pa.int64()), values)
    joined = pc.binary_join(runs, large_text(","))
    return pc.binary_join_element_wise(large_text("["), joined, large_text("]"), large_text(""))


def runs_json(values: pa.Array, bounds: Sequence[int], per: int = 32) -> Iterator[str]:
    """:func:`list_literals` of each run ``values[bounds[j]:bounds[j + 1]]``, made ``per`` runs
    at a time (a site's texts are not all copied at once)."""
    for j in range(0, len(bounds) - 1, per):
        b = np.asarray(bounds[j : j + per + 1], dtype=np.int64)
        yield from list_literals(values.slice(int(b[0]), int(b[-1] - b[0])), b - b[0]).to_pylist()


def records_of(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if df is None else df.to_dict("records")


def _isna(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def str_list(df: pd.DataFrame, name: str, rows: np.ndarray, default: str = "") -> list[str]:
    """Column ``name`` at ``rows`` as Python strings (missing values as ``""``; ``default`` for
    every row when the column is absent)."""
    if name not in df.columns:
        return [default] * len(rows)
    s = df[name]
    if isinstance(s.dtype, pd.StringDtype):
        return s.to_numpy(dtype=object, na_value="")[rows].tolist()
    return ["" if _isna(v) else str(v) for v in s.to_numpy()[rows]]


def arrow_strings(df: pd.DataFrame, name: str, rows: np.ndarray, default: str = "") -> pa.Array:
    """Column ``name`` at ``rows`` as a pyarrow string array (missing values as ``""``; ``default``
    for every row when the column is absent)."""
    if name not in df.columns:
        return pa.array(np.full(len(rows), default, dtype=object), pa.large_string())
    s = df[name]
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow":
        values = pa.array(s)  # the column's own arrow data
    else:
        values = pa.array(str_list(df, name, np.arange(len(df))), pa.large_string())
    return pc.fill_null(values.take(pa.array(rows)), "")


def flag_literals(df: pd.DataFrame, name: str, rows: np.ndarray) -> pa.Array:
    """Column ``name`` at ``rows`` as ``true`` / ``false`` / ``null`` (missing, or the column absent)."""
    if name not in df.columns:
        return pa.array(np.full(len(rows), "null", dtype=object), pa.large_string())
    values = df[name].to_numpy()[rows]
    if values.dtype != bool:
        values = np.array([None if _isna(v) else bool(v) for v in values], dtype=object)
    return pc.fill_null(pc.cast(pa.array(values, pa.bool_()), pa.large_string()), "null")


def score_literals(scores: np.ndarray) -> pa.Array:
    """Scores as JSON numbers (:func:`json_number`: ``null`` for NaN; 0 and 1, most of them, as ``0``
    and ``1``)."""
    literals = np.where(scores == 1.0, "1", "0").astype(object)
    for i in np.flatnonzero(~np.isin(scores, (0.0, 1.0))).tolist():
        literals[i] = to_json(json_number(float(scores[i])))
    return pa.array(literals, pa.large_string())


def codes(df: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    """Column ``name`` at ``rows`` as numbers from 0 (one per distinct value; 0 when absent)."""
    if name not in df.columns:
        return np.zeros(len(rows), dtype=np.int64)
    return pd.factorize(df[name])[0][rows].astype(np.int64) + 1  # missing: -1 -> 0


def id_lists(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``doc_ids`` values as sequences of ids (arrays and lists as they are; a missing value as no
    ids, one string as one id) and how many ids each holds."""
    if not set(map(type, column)) <= {np.ndarray, list, tuple}:
        lists = np.empty(len(column), dtype=object)
        lists[:] = [as_list(v) for v in column]
        column = lists
    return column, np.fromiter(map(len, column), dtype=np.int64, count=len(column))


def as_list(v: Any) -> list[Any]:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    return list(v)


def char_diff(a: str, b: str) -> list[list[str]]:
    """``b`` against ``a`` character by character: ``[op, text]`` with op ``=``, ``-`` (only in
    ``a``) or ``+`` (only in ``b``)."""
    out: list[list[str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(["=", a[i1:i2]])
            continue
        if i2 > i1:
            out.append(["-", a[i1:i2]])
        if j2 > j1:
            out.append(["+", b[j1:j2]])
    return out


def json_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each string as its JSON literal (null as ``null``), made by pyarrow: quoted as it is unless
    it holds a quote, a backslash or a control character (those few through :data:`_ENCODER`)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.large_string())  # 64-bit offsets: a site's texts may pass 2 GiB
    special = pc.fill_null(pc.match_substring_regex(values, r'[\x00-\x1f"\\]'), False)
    out = pc.binary_join_element_wise(large_text('"'), values, large_text('"'), large_text(""))
    if pc.any(special).as_py():
        fixed = [_ENCODER.encode(v) for v in values.filter(special).to_pylist()]
        out = pc.replace_with_mask(out, special, pa.array(fixed, pa.large_string()))
    return pc.fill_null(out, "null")
