"""The data manifest: checksums, entries, raw-file lookup (see ``gpbayes_repro.data``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path


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


