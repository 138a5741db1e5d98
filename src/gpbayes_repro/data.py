"""Vendored data sets: checksums, parsing, preparation.

The raw files live in ``data/raw/`` next to ``data/raw/MANIFEST.yaml``, which
records for every data set the file, its SHA-256, where it came from (upstream
origin, registry package and version, path inside the package), the expected
shape, the task, the target column, how labels and covariates are derived and
whether the data set is a *stand-in* for the one a paper used.  See
``tools/vendor_data.py`` for how the files were taken from the registry
packages.

:func:`prepare_dataset` turns one manifest entry into an :class:`xarray.Dataset`

* ``X`` — dims ``("n", "feature")``, float64, covariates standardised to zero
  mean and unit *population* s.d. (constant columns dropped, recorded in the
  ``preprocessing`` attribute); ``X_mean`` and ``X_scale`` (dim ``feature``)
  hold what was subtracted and divided, so ``X * X_scale + X_mean`` gives the
  raw covariates back;
* ``y`` — dim ``n``, float64: exactly -1.0/+1.0 for ``classification``, the raw
  target for ``regression``, the event times for ``events`` (``coal``) and the
  class label (0..9) for ``multiclass`` (``mnist_subset``);
* coordinate ``feature`` with the covariate names;
* attributes ``name``, ``task``, ``source``, ``sha256``, ``preprocessing``,
  ``stand_in`` (0/1 int: NetCDF attributes cannot be bool), ``stand_in_note``,
  ``target``, and, where they apply, ``label_mapping``, ``original_file``,
  ``window_start``/``window_end`` (events), ``classes`` (multiclass).

Two exceptions to standardisation, both recorded in ``preprocessing``: the
``events`` task (``X`` holds the standardised event times, ``y`` the raw
times) and ``scaling: divide`` in the manifest (``mnist_subset``: pixels are
divided by 255 and all 784 are kept so that images reshape to 28×28).

Paper's originals
-----------------
A manifest entry that is a stand-in names, in ``original_file``, the file a
user who has the paper's version can drop into ``data/raw/``; its
``original_format`` says how it is read.  When that file is present,
:func:`prepare_dataset` uses it instead of the vendored file (no checksum is
known for it: its SHA-256 is computed and recorded) and sets ``stand_in=0``.
Supported formats:

``keel`` / ``csv``
    comma-separated text (``.gz`` is decompressed).  KEEL/ARFF-like header
    lines (``@relation``, ``@attribute``, ``@inputs``, ``@outputs``, ``@data``)
    and ``%`` comments before the data are skipped; ``header: true`` reads the
    column names from the first line, ``header: false`` takes them from
    ``column_names`` (or ``column_pattern``), ``header: auto`` skips a first line
    that is not all numbers; ``row_names: true`` drops a leading R row-name
    column.
``raetsch_mat``
    ``benchmarks.mat`` of G. Rätsch's IDA benchmarks (struct ``mat_key`` with
    fields ``x`` and ``t``; ``t`` in {-1, +1}).
``usps_mat``
    ``usps_resampled.mat`` of the GPML book (``train_patterns``,
    ``train_labels``, ``test_patterns``, ``test_labels``; labels one-hot in
    {-1, +1}); training and test parts are pooled.

Every failure raises :class:`DataError` with a message that names the
culprit: file path, data-set name, column or offending label values.
Nothing here writes files except :func:`write_dataset`.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

__all__ = [
    "DataError",
    "TASKS",
    "sha256_file",
    "load_manifest",
    "dataset_entry",
    "verify_file",
    "raw_file",
    "prepare_dataset",
    "prepare_user_dataset",
    "standardise",
    "bin_events",
    "write_dataset",
]

TASKS = ("classification", "regression", "events", "multiclass")

#: keys every manifest entry must have
REQUIRED_KEYS = (
    "file",
    "sha256",
    "origin",
    "registry",
    "format",
    "raw_rows",
    "raw_columns",
    "rows",
    "columns",
    "task",
    "target",
    "derivation",
    "stand_in",
    "note",
)
#: keys a stand-in entry must have in addition
STAND_IN_KEYS = ("stand_in_for", "original_file", "original_format")
REGISTRY_KEYS = ("package", "version", "path")
FORMATS = ("keel", "csv", "raetsch_mat", "usps_mat")

#: tokens read as a missing value
_MISSING = {"", "?", "na", "n/a", "nan", "null", "none"}
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


class DataError(ValueError):
    """A data file, manifest entry or data set is missing, corrupt or malformed."""


# --------------------------------------------------------------------------
# checksums and the manifest
# --------------------------------------------------------------------------


def sha256_file(path) -> str:
    """Return the hex SHA-256 of the file at ``path``.

    Raises :class:`DataError` if the file does not exist or cannot be read.
    """
    path = Path(path)
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except FileNotFoundError:
        raise DataError(f"data file not found: {path}") from None
    except OSError as exc:
        raise DataError(f"cannot read data file {path}: {exc}") from None
    return h.hexdigest()


def verify_file(path, expected_sha256: str) -> str:
    """Check that ``path`` exists and has SHA-256 ``expected_sha256``.

    Returns the checksum.  Raises :class:`DataError` naming the file if it is
    missing or its checksum differs.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    got = sha256_file(path)
    want = str(expected_sha256).strip().lower()
    if got != want:
        raise DataError(f"checksum mismatch for {path}: expected {want}, got {got}")
    return got


def load_manifest(path) -> dict:
    """Read and validate ``MANIFEST.yaml``; return ``{name: entry}``.

    The file holds a mapping with key ``datasets`` (name -> entry).  Every
    entry must have the keys in :data:`REQUIRED_KEYS` (and, if ``stand_in``
    is true, :data:`STAND_IN_KEYS`); ``registry`` must give ``package``,
    ``version`` and ``path``; ``task`` must be one of :data:`TASKS`; a
    classification entry must give ``labels.positive`` and
    ``labels.negative``.  Any violation raises :class:`DataError` naming the
    manifest, the data set and the key.
    """
    import yaml

    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except FileNotFoundError:
        raise DataError(f"manifest not found: {path}") from None
    except yaml.YAMLError as exc:
        raise DataError(f"manifest {path} is not valid YAML: {exc}") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("datasets"), Mapping):
        raise DataError(f"manifest {path} has no 'datasets' mapping")
    entries = {}
    for name, entry in doc["datasets"].items():
        _validate_entry(str(name), entry, path)
        entries[str(name)] = dict(entry)
    if not entries:
        raise DataError(f"manifest {path} lists no data sets")
    return entries


def _validate_entry(name: str, entry, path: Path) -> None:
    where = f"manifest {path}, data set '{name}'"
    if not isinstance(entry, Mapping):
        raise DataError(f"{where}: entry is not a mapping")
    missing = [k for k in REQUIRED_KEYS if k not in entry]
    if entry.get("stand_in"):
        missing += [k for k in STAND_IN_KEYS if k not in entry]
    if missing:
        raise DataError(f"{where}: missing required key(s) {', '.join(missing)}")
    reg = entry["registry"]
    if not isinstance(reg, Mapping) or any(k not in reg for k in REGISTRY_KEYS):
        raise DataError(f"{where}: 'registry' must give {', '.join(REGISTRY_KEYS)}")
    if not _SHA_RE.match(str(entry["sha256"]).lower()):
        raise DataError(f"{where}: 'sha256' is not 64 hex digits: {entry['sha256']!r}")
    if entry["task"] not in TASKS:
        raise DataError(f"{where}: unknown task {entry['task']!r}; known: {', '.join(TASKS)}")
    if entry["format"] not in FORMATS:
        raise DataError(f"{where}: unknown format {entry['format']!r}; known: {', '.join(FORMATS)}")
    if not isinstance(entry["stand_in"], bool):
        raise DataError(f"{where}: 'stand_in' must be true or false")
    specs = [("", entry)]
    if entry.get("stand_in"):
        if not isinstance(entry["original_format"], Mapping):
            raise DataError(f"{where}: 'original_format' must be a mapping")
        specs.append(("original_format.", entry["original_format"]))
    for prefix, spec in specs:
        fmt = spec.get("format", entry["format"])
        if fmt not in FORMATS:
            raise DataError(f"{where}: unknown {prefix}format {fmt!r}; known: {', '.join(FORMATS)}")
        if entry["task"] == "classification":
            labels = spec.get("labels")
            if not isinstance(labels, Mapping) or not labels.get("positive") or not labels.get("negative"):
                raise DataError(
                    f"{where}: classification needs {prefix}labels.positive and {prefix}labels.negative"
                )
    if entry["task"] == "multiclass" and not entry.get("classes"):
        raise DataError(f"{where}: multiclass needs 'classes'")


def _entries(manifest) -> dict:
    if isinstance(manifest, (str, Path)):
        return load_manifest(manifest)
    if isinstance(manifest, Mapping) and "datasets" in manifest and isinstance(manifest["datasets"], Mapping):
        return dict(manifest["datasets"])
    if isinstance(manifest, Mapping):
        return dict(manifest)
    raise DataError(f"manifest must be a path or a mapping, not {type(manifest).__name__}")


def dataset_entry(manifest, name: str) -> dict:
    """Return the manifest entry for ``name``.

    ``manifest`` is a path or the mapping :func:`load_manifest` returns.
    An unknown name raises :class:`DataError` listing the known ones.
    """
    entries = _entries(manifest)
    if name not in entries:
        raise DataError(f"unknown data set '{name}'; known data sets: {', '.join(sorted(entries))}")
    return entries[name]


def raw_file(name: str, raw_dir, manifest) -> Path:
    """The file :func:`prepare_dataset` would read for ``name``.

    The paper's original (``original_file``) if the user has put it in
    ``raw_dir``, else the vendored ``file``.
    """
    entry = dataset_entry(manifest, name)
    raw_dir = Path(raw_dir)
    orig = entry.get("original_file")
    if orig and (raw_dir / orig).is_file():
        return raw_dir / orig
    return raw_dir / entry["file"]


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
    fnames, Xraw, tcol = _covariates(names, rows, target, [], path)
    steps = [f"read {path.name} ({len(rows)} rows x {len(names)} columns)"]
    attrs = {}
    if task == "classification":
        values = [str(v).strip() for v in tcol]
        bad = [v for v in values if v.lower() in _MISSING]
        if bad:
            raise DataError(f"missing value in target column '{target}' of {path}")
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
    else:
        y = _to_float(tcol, target, path)
        steps.append(f"target: column '{target}', raw values (not standardised)")
    X, kept, mean, scale, dropped = standardise(Xraw, fnames)
    steps.append(f"covariates: {len(kept)} columns standardised to zero mean and unit population s.d.")
    steps.append("constant columns dropped: " + (", ".join(dropped) if dropped else "none"))
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

    Uses :func:`gpbayes.io.write_netcdf_atomic`.
    """
    from gpbayes.io import write_netcdf_atomic

    return write_netcdf_atomic(ds, path)
