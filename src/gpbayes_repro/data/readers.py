"""Readers of the vendored and original raw formats (see ``gpbayes_repro.data``)."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .manifest import DataError, FORMATS, _MISSING

# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------


def _norm_label(value) -> str:
    """Canonical string form of a label: stripped; integral numbers without '.0'."""
    s = str(value).strip()
    try:
        f = float(s)
    except ValueError:
        return s
    if math.isfinite(f) and f == int(f):
        return str(int(f))
    return repr(f)


def _open_text(path: Path) -> str:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"data file not found: {path}") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read data file {path}: {exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _read_table(path: Path, spec: Mapping) -> tuple[list[str], list[list[str]]]:
    """Read a comma-separated table (KEEL/ARFF-like header allowed).

    Returns column names and rows of stripped string fields.
    """
    text = _open_text(path)
    lines = text.splitlines()
    header_attrs: list[str] = []
    start = 0
    # KEEL/ARFF-like header: '@...' lines and '%' comments up to '@data'
    if any(line.lstrip().startswith("@") for line in lines[:5]) or (
        lines and lines[0].lstrip().startswith("%")
    ):
        start = len(lines)  # a header without '@data' and without rows: no data
        for i, line in enumerate(lines):
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if s.startswith("@"):
                key = s.split(None, 1)[0].lower()
                if key == "@attribute":
                    parts = s.split(None, 2)
                    if len(parts) >= 2:
                        header_attrs.append(parts[1].strip("'\""))
                if key == "@data":
                    start = i + 1
                    break
                continue
            start = i
            break
    body = [ln for ln in lines[start:] if ln.strip() and not ln.lstrip().startswith("%")]
    try:
        rows = [[f.strip() for f in r] for r in csv.reader(body, skipinitialspace=True)]
    except csv.Error as exc:
        raise DataError(f"cannot parse {path} as comma-separated text: {exc}") from None
    if not rows:
        raise DataError(f"data file {path} holds no data rows")

    header = spec.get("header", False)
    names: list[str] | None = None
    if header is True:
        names = rows.pop(0)
    elif header == "auto":
        if not all(_is_number(f) for f in rows[0]):
            rows.pop(0)
    elif header is not False:
        raise DataError(f"bad 'header' setting {header!r} for {path}: use true, false or auto")
    if not rows:
        raise DataError(f"data file {path} holds no data rows")

    ncol = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != ncol:
            raise DataError(
                f"{path}: data row {i + 1} has {len(r)} fields, expected {ncol} (as in the first row)"
            )

    if names is None:
        names = _column_names(spec, ncol, path, header_attrs)
    if spec.get("row_names"):
        if len(names) == ncol - 1:  # R write.table: no header cell for the row names
            names = ["__row_names__", *names]
        names = names[1:]
        rows = [r[1:] for r in rows]
        ncol -= 1
    if len(names) != ncol:
        raise DataError(f"{path}: {ncol} fields per row but {len(names)} column names")
    return names, rows


def _column_names(spec: Mapping, ncol: int, path: Path, header_attrs: list[str]) -> list[str]:
    if spec.get("column_names"):
        names = [str(c) for c in spec["column_names"]]
        if len(names) != ncol:
            raise DataError(f"{path}: {ncol} fields per row but the manifest names {len(names)} columns")
        if header_attrs and len(header_attrs) != ncol:
            raise DataError(
                f"{path}: KEEL header declares {len(header_attrs)} attributes, rows have {ncol} fields"
            )
        return names
    if spec.get("column_pattern"):
        target = str(spec["target"])
        pattern = str(spec["column_pattern"])
        feats = [pattern.format(i) for i in range(ncol - 1)]
        pos = spec.get("target_position", "last")
        if pos == "last":
            return [*feats, target]
        if pos == "first":
            return [target, *feats]
        raise DataError(f"bad target_position {pos!r} for {path}: use first or last")
    if header_attrs:
        if len(header_attrs) != ncol:
            raise DataError(
                f"{path}: KEEL header declares {len(header_attrs)} attributes, rows have {ncol} fields"
            )
        return header_attrs
    raise DataError(f"{path} has no header and the manifest gives no column names")


def _to_float(values: Sequence[str], column: str, path) -> np.ndarray:
    """Convert one column of strings to float64; DataError names column and row."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except ValueError:
        arr = np.empty(len(values))
        for i, v in enumerate(values):
            s = str(v).strip()
            if s.lower() in _MISSING:
                arr[i] = np.nan
                continue
            try:
                arr[i] = float(s)
            except ValueError:
                raise DataError(
                    f"non-numeric value {s!r} in column '{column}' of {path} (data row {i + 1})"
                ) from None
    inf = np.flatnonzero(np.isinf(arr))
    if inf.size:
        rows = ", ".join(str(i + 1) for i in inf[:5]) + (" ..." if inf.size > 5 else "")
        raise DataError(f"infinite value in column '{column}' of {path} ({inf.size} row(s): {rows})")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        rows = ", ".join(str(i + 1) for i in bad[:5]) + (" ..." if bad.size > 5 else "")
        raise DataError(f"missing/NaN value in column '{column}' of {path} ({bad.size} row(s): {rows})")
    return arr


def _read_mat(path: Path):
    import scipy.io

    try:
        return scipy.io.loadmat(str(path))
    except FileNotFoundError:
        raise DataError(f"data file not found: {path}") from None
    except Exception as exc:  # scipy raises several types for bad files
        raise DataError(f"cannot read MATLAB file {path}: {exc}") from None


def _read_raetsch_mat(path: Path, spec: Mapping) -> tuple[list[str], list[list[str]]]:
    key = spec.get("mat_key")
    mat = _read_mat(path)
    if key not in mat:
        raise DataError(f"{path} has no variable '{key}'")
    try:
        rec = mat[key][0, 0]
        x = np.asarray(rec["x"], dtype=np.float64)
        t = np.asarray(rec["t"], dtype=np.float64).ravel()
    except Exception as exc:
        raise DataError(f"{path}: variable '{key}' is not a struct with fields x and t ({exc})") from None
    if x.ndim != 2 or x.shape[0] != t.size:
        raise DataError(f"{path}: '{key}.x' has shape {x.shape} but '{key}.t' has {t.size} entries")
    target = str(spec["target"])
    names = [f"x{i:02d}" for i in range(x.shape[1])] + [target]
    rows = [[repr(float(v)) for v in xi] + [_norm_label(ti)] for xi, ti in zip(x, t)]
    return names, rows


def _read_usps_mat(path: Path, spec: Mapping) -> tuple[list[str], list[list[str]]]:
    mat = _read_mat(path)
    xs, ys = [], []
    for part in ("train", "test"):
        px, lb = f"{part}_patterns", f"{part}_labels"
        if px not in mat or lb not in mat:
            raise DataError(f"{path} lacks '{px}' or '{lb}' (expected GPML usps_resampled.mat)")
        patterns = np.asarray(mat[px], dtype=np.float64)
        labels = np.asarray(mat[lb], dtype=np.float64)
        if patterns.shape[1] != labels.shape[1] or labels.shape[0] != 10:
            raise DataError(f"{path}: '{px}' {patterns.shape} and '{lb}' {labels.shape} do not match")
        xs.append(patterns.T)
        ys.append(np.argmax(labels, axis=0))
    x = np.vstack(xs)
    digit = np.concatenate(ys)
    target = str(spec["target"])
    names = [f"px{i:03d}" for i in range(x.shape[1])] + [target]
    rows = [[repr(float(v)) for v in xi] + [str(int(d))] for xi, d in zip(x, digit)]
    return names, rows


def _read_any(path: Path, spec: Mapping) -> tuple[list[str], list[list[str]]]:
    fmt = spec.get("format", "csv")
    if fmt in ("keel", "csv"):
        return _read_table(path, spec)
    if fmt == "raetsch_mat":
        return _read_raetsch_mat(path, spec)
    if fmt == "usps_mat":
        return _read_usps_mat(path, spec)
    raise DataError(f"unknown format {fmt!r} for {path}; known: {', '.join(FORMATS)}")


