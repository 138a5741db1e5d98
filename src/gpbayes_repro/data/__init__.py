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

from .manifest import (
    TASKS,
    DataError,
    dataset_entry,
    load_manifest,
    raw_file,
    sha256_file,
    verify_file,
)
from .prepare import bin_events, prepare_dataset, prepare_user_dataset, standardise, write_dataset

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
