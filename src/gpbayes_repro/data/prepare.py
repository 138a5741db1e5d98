"""Preparation of a data set: covariates, labels, standardisation, events, writing (see ``gpbayes_repro.data``)."""

from __future__ import annotations

import csv
import io
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from .manifest import DataError, _MISSING, dataset_entry, sha256_file, verify_file
from .readers import _is_number, _norm_label, _open_text, _read_any, _read_table, _to_float

_log = logging.getLogger(__name__)

# --------------------------------------------------------------------------
# preparation
# --------------------------------------------------------------------------


def standardise(X: np.ndarray, names: Sequence[str]):
    """Standardise columns to zero mean and unit population s.d.

    Constant columns (zero range, or s.d. below 1e-12 of their scale) are
    dropped.  Returns ``(Z, kept_names, mean, scale, dropped_names)``.
    """
    X = np.asarray(X, dtype=np.float64)
    names = list(names)
    if X.ndim != 2 or X.shape[1] != len(names):
        raise DataError(f"standardise: X has shape {X.shape} but {len(names)} names were given")
    if X.shape[0] < 2:
        raise DataError(f"standardise: need at least 2 rows, got {X.shape[0]}")
    mean = X.mean(axis=0)
    sd = X.std(axis=0)  # population s.d. (ddof=0)
    const = (np.ptp(X, axis=0) == 0) | (sd <= 1e-12 * np.maximum(1.0, np.abs(mean)))
    keep = ~const
    dropped = [n for n, c in zip(names, const) if c]
    if not keep.any():
        raise DataError(f"standardise: every covariate is constant ({', '.join(dropped)})")
    Z = (X[:, keep] - mean[keep]) / sd[keep]
    return Z, [n for n, k in zip(names, keep) if k], mean[keep], sd[keep], dropped


def _covariates(names, rows, target, drop_columns, path, events: bool = False):
    if target not in names:
        raise DataError(f"target column '{target}' not found in {path}; columns: {', '.join(names)}")
    for c in drop_columns:
        if c not in names:
            raise DataError(f"column '{c}' (to be dropped) not found in {path}; columns: {', '.join(names)}")
    cols = list(zip(*rows)) if rows else [() for _ in names]
    tcol = [str(v) for v in cols[names.index(target)]]
    if events:  # the covariate of a point pattern is the event time itself
        return [target], _to_float(tcol, target, path)[:, None], tcol
    fnames = [n for n in names if n != target and n not in drop_columns]
    X = np.column_stack([_to_float(cols[names.index(n)], n, path) for n in fnames]) if fnames else None
    if X is None:
        raise DataError(f"{path}: no covariate columns left after removing target '{target}'")
    return fnames, X, tcol


def _binary_labels(tcol, labels: Mapping, target, path):
    pos = {_norm_label(v) for v in labels.get("positive", [])}
    neg = {_norm_label(v) for v in labels.get("negative", [])}
    drop = {_norm_label(v) for v in labels.get("drop", []) or []}
    t = [_norm_label(v) for v in tcol]
    known = pos | neg | drop
    unexpected = sorted({v for v in t if v not in known})
    if unexpected:
        raise DataError(
            f"unexpected label value(s) {unexpected} in column '{target}' of {path}; "
            f"expected positive {sorted(pos)}, negative {sorted(neg)}"
            + (f", dropped {sorted(drop)}" if drop else "")
        )
    keep = np.array([v not in drop for v in t], dtype=bool)
    y = np.array([1.0 if v in pos else -1.0 for v in t])[keep]
    if not (y > 0).any() or not (y < 0).any():
        raise DataError(f"only one class present in column '{target}' of {path} after mapping")
    mapping = f"{'/'.join(sorted(pos))} -> +1; {'/'.join(sorted(neg))} -> -1"
    if drop:
        mapping += f"; rows with {'/'.join(sorted(drop))} dropped"
    return y, keep, mapping


def _build(X, y, names, mean, scale, attrs) -> xr.Dataset:
    ds = xr.Dataset(
        {
            "X": (("n", "feature"), np.ascontiguousarray(X, dtype=np.float64)),
            "y": (("n",), np.asarray(y, dtype=np.float64)),
            "X_mean": (("feature",), np.asarray(mean, dtype=np.float64)),
            "X_scale": (("feature",), np.asarray(scale, dtype=np.float64)),
        },
        coords={"feature": np.array([str(n) for n in names], dtype=object)},
    )
    ds["X"].attrs["description"] = "covariates, see attribute 'preprocessing'"
    ds["X_mean"].attrs["description"] = "value subtracted from each raw covariate"
    ds["X_scale"].attrs["description"] = "value each centred covariate was divided by"
    ds.attrs.update({k: v for k, v in attrs.items() if v is not None})
    return ds


def _prepare_from_spec(name, path, spec, entry, sha, vendored: bool) -> xr.Dataset:
    task = entry["task"]
    target = str(spec["target"])
    names, rows = _read_any(path, spec)
    raw_n, raw_d = len(rows), len(names)
    drop_cols = [str(c) for c in (spec.get("drop_columns") or [])]
    fnames, Xraw, tcol = _covariates(names, rows, target, drop_cols, path, events=task == "events")
    steps = [f"read {path.name} ({raw_n} rows x {raw_d} columns, format {spec.get('format', 'csv')})"]
    if drop_cols:
        steps.append(f"columns excluded from the covariates: {', '.join(drop_cols)}")
    attrs = {}

    if task == "classification":
        y, keep, mapping = _binary_labels(tcol, spec["labels"], target, path)
        Xraw = Xraw[keep]
        steps.append(
            f"labels from column '{target}': {mapping} ({int((y > 0).sum())} positive, {int((y < 0).sum())} negative)"
        )
        attrs["label_mapping"] = mapping
    elif task == "regression":
        y = _to_float(tcol, target, path)
        steps.append(f"target: column '{target}', raw values (not standardised)")
    elif task == "events":
        y = _to_float(tcol, target, path)
        win = entry.get("window")
        if win:
            attrs["window_start"], attrs["window_end"] = float(win[0]), float(win[1])
        steps.append(
            f"events: y holds the {y.size} raw event times from column '{target}', "
            "X the same times standardised"
        )
    elif task == "multiclass":
        classes = [_norm_label(c) for c in entry["classes"]]
        t = [_norm_label(v) for v in tcol]
        unexpected = sorted({v for v in t if v not in classes})
        if unexpected:
            raise DataError(
                f"unexpected label value(s) {unexpected} in column '{target}' of {path}; expected {classes}"
            )
        y = np.array([float(v) for v in t])
        attrs["classes"] = np.array([float(c) for c in classes])
        counts = {c: t.count(c) for c in classes}
        steps.append(f"labels: class in column '{target}' as a number; counts {counts}")
    else:  # pragma: no cover - validated in load_manifest
        raise DataError(f"data set '{name}': unknown task {task!r}")

    scaling = spec.get("scaling", entry.get("scaling", "standardise"))
    if scaling == "standardise":
        X, kept, mean, scale, dropped = standardise(Xraw, fnames)
        steps.append(
            f"covariates: {len(kept)} columns standardised to zero mean and unit population s.d. "
            "(X_mean, X_scale hold the shift and scale)"
        )
        steps.append("constant columns dropped: " + (", ".join(dropped) if dropped else "none"))
    elif scaling == "divide":
        div = float(spec.get("scale_divisor", entry.get("scale_divisor", 1.0)))
        X, kept = Xraw / div, fnames
        mean, scale = np.zeros(len(kept)), np.full(len(kept), div)
        steps.append(
            f"covariates: all {len(kept)} columns divided by {div:g} (not standardised, none dropped)"
        )
    else:
        raise DataError(f"data set '{name}': unknown scaling {scaling!r}; use standardise or divide")

    if vendored:
        want = (int(entry["rows"]), int(entry["columns"]))
        if X.shape != want:
            raise DataError(
                f"data set '{name}': prepared shape {X.shape} from {path} differs from the manifest's {want}"
            )
    stand_in = bool(entry["stand_in"]) and vendored
    reg = entry["registry"]
    if vendored:
        source = (
            f"{entry['origin']}; vendored file data/raw/{entry['file']} from "
            f"{reg['package']}=={reg['version']}:{reg['path']}"
        )
        note = (
            f"STAND-IN for {str(entry['stand_in_for']).strip().rstrip('.')}. {str(entry['note']).strip()}"
            if stand_in
            else ""
        )
    else:
        source = f"user-supplied original file {path} (replaces the stand-in {entry['file']})"
        note = f"paper's original data from {path.name}"
    attrs.update(
        {
            "name": name,
            "task": task,
            "target": target,
            "source": source,
            "sha256": sha,
            "preprocessing": "; ".join(steps),
            "stand_in": int(stand_in),
            "stand_in_note": note,
            "original_file": entry.get("original_file", "") or "",
        }
    )
    return _build(X, y, kept, mean, scale, attrs)


def prepare_dataset(name: str, raw_dir, manifest) -> xr.Dataset:
    """Prepare the data set ``name`` from the raw files in ``raw_dir``.

    ``manifest`` is the path to ``MANIFEST.yaml`` or the mapping that
    :func:`load_manifest` returns.  The vendored file's checksum is verified
    first.  If the entry names an ``original_file`` and that file is in
    ``raw_dir``, it is read (format ``original_format``) instead and the
    result has ``stand_in=0``.  See the module docstring for the layout of the
    returned dataset.
    """
    entry = dataset_entry(manifest, name)
    raw_dir = Path(raw_dir)
    orig = entry.get("original_file")
    if orig and (raw_dir / orig).is_file():
        path = raw_dir / orig
        spec = dict(entry.get("original_format") or {})
        spec.setdefault("target", entry["target"])
        return _prepare_from_spec(name, path, spec, entry, sha256_file(path), vendored=False)
    path = raw_dir / entry["file"]
    sha = verify_file(path, entry["sha256"])
    return _prepare_from_spec(name, path, entry, entry, sha, vendored=True)


def prepare_user_dataset(csv_path, target: str, task: str, name: str | None = None) -> xr.Dataset:
    """Prepare a user's own CSV file (header row required).

    Every column other than ``target`` is a covariate and must be numeric; a
    leading column with an empty header (R row names) is dropped.  For
    ``task="classification"`` the target must take exactly two distinct
    values; the smaller (numerically if both are numbers, else
    alphabetically) maps to -1, the larger to +1, and the mapping is recorded
    in the ``label_mapping`` attribute.  For ``task="regression"`` the target
    must be numeric.  Covariates are standardised as in
    :func:`prepare_dataset`; ``stand_in`` is 0.
    """
    path = Path(csv_path)
    if task not in ("classification", "regression"):
        raise DataError(f"task for user data set {path} must be classification or regression, not {task!r}")
    name = name or path.stem.split(".")[0]
    sha = sha256_file(path)
    text_head = _open_text(path).splitlines()[:1]
    row_names = bool(text_head) and next(csv.reader(io.StringIO(text_head[0])), [None])[0] in ("",)
    names, rows = _read_table(path, {"header": True, "row_names": row_names})
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{path}: duplicate column name(s) {dup}; every column needs its own name")
    fnames, Xraw, tcol = _covariates(names, rows, target, [], path)
    steps = [f"read {path.name} ({len(rows)} rows x {len(names)} columns)"]
    attrs = {}
    if task == "classification":
        # labels compared as values: '-1' and '-1.0' are one label
        values = [_norm_label(v) for v in tcol]
        bad = [i + 1 for i, v in enumerate(values) if v.lower() in _MISSING]
        if bad:
            raise DataError(f"missing value in target column '{target}' of {path} (data row(s) {_rows(bad)})")
        # an infinite label is a broken value, not a class ('inf' would otherwise become label +1)
        inf = [i + 1 for i, v in enumerate(values) if _is_number(v) and math.isinf(float(v))]
        if inf:
            raise DataError(f"infinite value in target column '{target}' of {path} (data row(s) {_rows(inf)})")
        distinct = sorted(set(values))
        if len(distinct) != 2:
            raise DataError(
                f"classification target '{target}' of {path} must take exactly two values, "
                f"found {len(distinct)}: {distinct[:10]}"
            )
        if all(_is_number(v) for v in distinct):
            distinct.sort(key=float)
        neg, pos = distinct
        y = np.array([1.0 if v == pos else -1.0 for v in values])
        mapping = f"{neg} -> -1; {pos} -> +1"
        attrs["label_mapping"] = mapping
        steps.append(
            f"labels from column '{target}': {mapping} ({int((y > 0).sum())} positive, {int((y < 0).sum())} negative)"
        )
        _log.warning("user data set %s: labels of column '%s' mapped %s", name, target, mapping)
    else:
        y = _to_float(tcol, target, path)
        steps.append(f"target: column '{target}', raw values (not standardised)")
    X, kept, mean, scale, dropped = standardise(Xraw, fnames)
    steps.append(f"covariates: {len(kept)} columns standardised to zero mean and unit population s.d.")
    steps.append("constant columns dropped: " + (", ".join(dropped) if dropped else "none"))
    if dropped:
        _log.warning("user data set %s: constant column(s) dropped: %s", name, ", ".join(dropped))
    attrs.update(
        {
            "name": name,
            "task": task,
            "target": target,
            "source": f"user-supplied file {path}",
            "sha256": sha,
            "preprocessing": "; ".join(steps),
            "stand_in": 0,
            "stand_in_note": "",
            "original_file": "",
        }
    )
    return _build(X, y, kept, mean, scale, attrs)


def _rows(rows: Sequence[int]) -> str:
    return ", ".join(map(str, rows[:5])) + (" ..." if len(rows) > 5 else "")


# --------------------------------------------------------------------------
# events
# --------------------------------------------------------------------------


def bin_events(times, start: float, end: float, n_bins: int):
    """Count events in ``n_bins`` equal bins over ``[start, end]``.

    Returns ``(counts, edges)``: ``counts`` int64 of length ``n_bins``,
    ``edges`` float64 of length ``n_bins + 1``.  Bins are half-open
    ``[e_i, e_{i+1})`` except the last, which includes ``end`` (as
    :func:`numpy.histogram`).  Events outside ``[start, end]`` raise
    :class:`DataError` rather than being lost silently.
    """
    t = np.asarray(times, dtype=np.float64).ravel()
    if not np.all(np.isfinite(t)):
        raise DataError("bin_events: event times contain NaN or infinite values")
    if not (np.isfinite(start) and np.isfinite(end) and start < end):
        raise DataError(f"bin_events: need finite start < end, got start={start}, end={end}")
    if int(n_bins) != n_bins or n_bins < 1:
        raise DataError(f"bin_events: n_bins must be a positive integer, got {n_bins!r}")
    outside = (t < start) | (t > end)
    if outside.any():
        raise DataError(
            f"bin_events: {int(outside.sum())} event(s) outside [{start}, {end}] "
            f"(range of times {t.min()}..{t.max()})"
        )
    edges = np.linspace(float(start), float(end), int(n_bins) + 1)
    counts, _ = np.histogram(t, bins=edges)
    return counts.astype(np.int64), edges


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def write_dataset(ds: xr.Dataset, path) -> Path:
    """Write ``ds`` to NetCDF at ``path`` atomically (temporary file, then rename).

    Uses :func:`gpbayes_repro.io.write_netcdf_atomic`.
    """
    from gpbayes_repro.io import write_netcdf_atomic

    return write_netcdf_atomic(ds, path)
