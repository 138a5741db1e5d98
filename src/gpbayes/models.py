"""Models of the public API: the user's data, checked at the door, with each paper's kernel and priors.

* :class:`GPRegressor` -- y = f(x) + e, e ~ N(0, lambda), exact marginal (R&W Alg. 2.1).
* :class:`GPClassifier` -- probit classification (F&G eqs. 1-3).
* :class:`PoissonGP` -- a log-Gaussian Cox process on binned counts (M&A Sec. 5).
* :class:`SparseGP` -- a sparse variational GP with any likelihood, sampled by MCMC (Hensman et al. 2015);
  :class:`SparseGPClassifier` chooses the likelihood from the labels (probit, robust-max).
* :class:`GPLVMRegressor` -- the supervised GPLVM (Gadd et al.), multi-output y from x through a latent z.
* :class:`LatentGP` -- a latent GP with any ``gpbayes.likelihoods.Likelihood`` (M&A eq. 3), f kept, optionally
  with a sampled constant m of f (M&A Sec. 5's log-rate offset).

Inputs are checked (shapes, NaN/inf, labels) and standardised by default, the
shift and scale recorded; ``gpbayes.api.sample`` runs a method on a model.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import warnings
from typing import Any

import numpy as np

from . import means, priors
from . import units as units_of_data
from .kernels import SquaredExponential
from .likelihoods import Likelihood, Logistic, Poisson, Probit
from .likelihoods import _check_outputs as _check_likelihood_outputs
from .regression import GPRegression

__all__ = ["GPRegressor", "GPClassifier", "PoissonGP", "SparseGP", "SparseGPClassifier", "GPLVMRegressor", "LatentGP",
           "Hyperparameter", "hyperparameter_layout"]


# relative diagonal term of the latent covariance (an F&G deviation:
# docs/reproduction/filippone_girolami_2014.md, "Nugget")
_NUGGET = 1e-6

#: GPRegressor's default prior on the noise variance lambda of the standardised target: InverseGamma(1, 0.01)
#: (mode of its density on log lambda at lambda = 0.01, 1 % of the target's variance).  Its density vanishes
#: faster than any power of lambda as lambda -> 0, so repeated inputs (a likelihood growing like lambda^-k/2)
#: still give a proper posterior; the former Gamma(1, 1) did not.
NOISE_PRIOR = priors.InverseGamma(1.0, 0.01)


# ---------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------
def _check_X(X, name: str = "X", min_rows: int = 2) -> np.ndarray:
    columns = _feature_names(X)
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] < min_rows:
        raise ValueError(f"{name} must be a 2-D array (n, d) with n >= {min_rows}, got shape {X.shape}")
    try:
        X = X.astype(np.float64)
    except (TypeError, ValueError) as err:
        for j in range(X.shape[1]):  # name the first column that is not numeric
            try:
                X[:, j].astype(np.float64)
            except (TypeError, ValueError):
                col = repr(columns[j]) if columns is not None else str(j)
                raise ValueError(f"{name} column {col} is not numeric ({err}); encode it as numbers or "
                                 "drop it") from None
        raise ValueError(f"{name} must be numeric: {err}") from None
    bad = ~np.isfinite(X)
    if bad.any():
        rows, cols = np.nonzero(bad)
        kind = "NaN" if np.isnan(X[rows[0], cols[0]]) else "infinite"
        raise ValueError(f"{name} has {int(bad.sum())} non-finite entries (first: row {rows[0]}, column "
                         f"{cols[0]} is {kind})")
    return X


def _feature_names(X) -> list[str] | None:
    """Column names of a table-like X (anything with ``.columns``, e.g. a pandas DataFrame), else None.

    Duck-typed: the library does not import pandas.  Names are strings
    (``/`` replaced, as NetCDF names cannot hold it); duplicated names give None.
    """
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = [str(c).replace("/", "_") for c in list(cols)]
    return names if len(set(names)) == len(names) else None


def _columns_by_name(X_new, feature_names: list[str] | None, owner: str):
    """``X_new`` with its columns in the training order, matched by name (issue 41): a table-like X_new
    (``.columns``) for a model fitted on named columns (``feature_names``, as :func:`_feature_names` writes
    them) is reordered; a missing or unknown name is refused, naming them.  Anything else is returned as
    given (matched by position)."""
    cols = getattr(X_new, "columns", None)
    if cols is None or feature_names is None:
        return X_new
    names = [str(c).replace("/", "_") for c in list(cols)]
    missing = [f for f in feature_names if f not in names]
    unknown = [c for c in names if c not in feature_names]
    if missing or unknown or len(set(names)) != len(names):
        what = [f"missing {missing}"] if missing else []
        what += [f"unknown {unknown}"] if unknown else []
        what += [] if len(set(names)) == len(names) else ["duplicated names"]
        raise ValueError(f"{owner}: X_new's columns do not match the training columns {feature_names}: "
                         f"{', '.join(what)}; give a DataFrame with exactly these columns (any order)")
    values = np.asarray(X_new)
    if values.ndim != 2:
        return X_new
    return values[:, [names.index(f) for f in feature_names]]


def _named_after_features(names: list[str], kernel, feature_names: list[str] | None) -> list[str]:
    """The posterior's names before the one scheme (issue 33): ``param_names`` with ``tau_0``.. renamed
    ``tau_<column>`` when X had column names and the kernel has one scale per input.  Still accepted, with a
    DeprecationWarning, in ``prior=`` and in an ``idata`` given to ``gb.predict``."""
    if feature_names is None or not getattr(kernel, "ard", False):
        return list(names)
    out = list(names)
    d = len(feature_names)
    for j, n in enumerate(names[:d]):
        prefix, _, idx = n.rpartition("_")
        if idx == str(j):
            out[j] = f"{prefix}_{feature_names[j]}"
    return out if len(set(out)) == len(out) else list(names)


# ---------------------------------------------------------------------------
# the hyperparameters' names in the posterior (one scheme across the models)
# ---------------------------------------------------------------------------
#: a parameter name indexed by an input column or a latent dimension: ``tau_3``, ``se_lengthscale_0``
_INDEXED = re.compile(r"(.+)_(\d+)")


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
    """One variable of ``gb.sample``'s ``posterior``: a hyperparameter, or one per input column / latent
    dimension over the dim ``dim``.

    ``name``: the posterior's variable (``lengthscale``, ``signal_variance``, ``noise_variance``, ...);
    ``index``: its coordinates in psi, in order; ``dim``/``coords``: None/() for a scalar, else the dim
    (``feature`` over X's columns, named after them when X had names, else 0..d-1; ``latent`` over the
    GPLVM's latent dimensions) and its coordinate values; ``raw``: the kernel's or model's own names of
    the same coordinates (``param_names``: ``tau_0``, ``sigma``, ...).
    """

    name: str
    index: tuple
    dim: str | None = None
    coords: tuple = ()
    raw: tuple = ()

    @property
    def labels(self) -> list[str]:
        """One per coordinate of psi, as ``arviz.summary`` labels the rows: ``lengthscale[age]``, ``signal_variance``."""
        return [self.name] if self.dim is None else [f"{self.name}[{c}]" for c in self.coords]


def hyperparameter_layout(raw_names, aliases=(), *, index_dims=None, group: bool = True) -> tuple:
    """The posterior's variables (:class:`Hyperparameter`) for parameters named ``raw_names`` (psi's order).

    A name is its descriptive alias when it has one (``gpbayes.priors.kernel_aliases``: F&G's ``sigma``
    is ``signal_variance``), else its own.  With ``group``, a run of names ``<stem>_<j>`` (one per input
    column j: ``tau_0, tau_1``) becomes one variable named after the stem's alias (``lengthscale``) over
    a dim: ``index_dims[stem]`` = (dim, coordinate values of j = 0, 1, ...) if given, else
    ``index_dims[None]``; the dim is the variable's own ``<name>_<dim>`` when it covers only some of
    them or in another order (a kernel's ``active_dims``).  Names that do not fit (a run split in two,
    an index past the coordinates, two variables of one name) stay one scalar variable each, as named.
    """
    raw_names = list(raw_names)
    aliases = list(aliases) + [None] * (len(raw_names) - len(aliases))
    index_dims = dict(index_dims or {})
    runs: list[list] = []  # [name, stem, dim, all coords, [(psi index, j)], raws] or [name, None, ..., [(i, None)]]
    for i, (raw, alias) in enumerate(zip(raw_names, aliases)):
        m = _INDEXED.fullmatch(raw) if group else None
        if m is not None:
            stem, j = m.group(1), int(m.group(2))
            dim, coords = index_dims.get(stem, index_dims.get(None, (None, ())))
            a = _INDEXED.fullmatch(alias) if alias else None
            if dim is not None and j < len(coords) and (alias is None or (a is not None and int(a.group(2)) == j)):
                name = a.group(1) if a else stem
                if runs and runs[-1][1] == stem:
                    runs[-1][4].append((i, j))
                    runs[-1][5].append(raw)
                else:
                    runs.append([name, stem, dim, coords, [(i, j)], [raw]])
                continue
        runs.append([alias or raw, None, None, (), [(i, None)], [raw]])
    out = []
    for name, stem, dim, coords, members, raws in runs:
        index = tuple(i for i, _ in members)
        if stem is None:
            out.append(Hyperparameter(name, index, raw=tuple(raws)))
            continue
        js = [j for _, j in members]
        own = js != list(range(len(coords)))
        out.append(Hyperparameter(name, index, f"{name}_{dim}" if own else dim, tuple(coords[j] for j in js),
                                  tuple(raws)))
    if len({h.name for h in out}) < len(out):  # two variables of one name: every parameter as it is named
        return tuple(Hyperparameter(n, (i,), raw=(n,)) for i, n in enumerate(raw_names))
    return tuple(out)


#: n x n float64 matrices a dense model holds at once (K, its Cholesky factor, a solve or an inverse)
_DENSE_MATRICES = 3


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``; else free physical pages), or None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _check_dense_size(n: int, model: str, alternative: str) -> None:
    """Stop before a dense model allocates its n x n matrices when they cannot fit in the available memory."""
    need = _DENSE_MATRICES * 8 * n * n
    avail = _available_memory()
    if avail is not None and need > avail:
        raise MemoryError(f"{model} with n = {n} rows needs about {need / 2**30:.1f} GiB ({need} bytes: "
                          f"{_DENSE_MATRICES} dense n x n float64 matrices) but only {avail / 2**30:.1f} GiB "
                          f"is available; {alternative}")


def _warn_duplicated_rows(X: np.ndarray, y: np.ndarray) -> None:
    """GP regression with repeated (x, y) pairs: the exact likelihood rises without bound as the noise variance
    goes to 0 (it grows like lambda^(-k/2) for k repeats), so a prior without a vanishing density there leaves
    the posterior improper."""
    rows = np.column_stack([X, y])
    k = rows.shape[0] - np.unique(rows, axis=0).shape[0]
    if k:
        warnings.warn(f"{k} duplicated (x, y) rows in the regression data: the noise variance may collapse "
                      "toward 0 (the likelihood grows without bound there); the default prior "
                      "noise_variance ~ InverseGamma(1, 0.01) keeps the posterior proper -- check a prior of "
                      "your own does too, or remove the duplicates", UserWarning, stacklevel=3)


def _check_vector(y, n: int, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with one entry per row of X ({n}), got shape {y.shape}")
    return y


def _standardiser(X: np.ndarray, standardize: bool, names: list[str] | None = None):
    if not standardize:
        return np.zeros(X.shape[1]), np.ones(X.shape[1])
    shift, scale = X.mean(axis=0), X.std(axis=0)
    const = scale == 0
    if const.any():
        which = [names[j] if names else int(j) for j in np.flatnonzero(const)]
        raise ValueError(f"X has constant columns {which}: drop them "
                         "(they carry no information and cannot be standardised)")
    return shift, scale


def _check_flag(value, name: str, owner: str):
    """A boolean option: True or False (a bool or a numpy bool), returned as given; anything else (``"no"``,
    1, None) is refused rather than read by its truth value (``standardize="no"`` meaning True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: {name} must be True or False, got {value!r} ({type(value).__name__}); pass "
                        f"{name}=True or {name}=False")
    return value


def _check_integer(value, name: str, owner: str, minimum: int | None = 1, allowed: str = "") -> int:
    """A count option as an int >= ``minimum`` (None: any, the caller checks the range, described by
    ``allowed``): an int, numpy integer or whole float (5.0); a fraction (5.7), bool or string is refused
    rather than truncated."""
    whole = isinstance(value, (float, np.floating)) and bool(np.isfinite(value)) and float(value).is_integer()
    if isinstance(value, (bool, np.bool_)) or not (isinstance(value, (int, np.integer)) or whole):
        what = allowed if minimum is None else f" >= {minimum}"
        raise TypeError(f"{owner}: {name} must be a whole number{what}, got {value!r} ({type(value).__name__}), "
                        "which would be truncated or misread; pass an int")
    if minimum is not None and int(value) < minimum:
        raise ValueError(f"{owner}: {name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def _known_noise(noise, n: int) -> np.ndarray | None:
    """GPRegressor's ``noise=``: None, or known noise variances (y's units) as an (n,) float array -- one
    number repeated, or one per row; every value finite and > 0.  Anything else is refused, naming it."""
    if noise is None:
        return None
    if isinstance(noise, (str, bytes, bool, np.bool_)) or isinstance(noise, type):
        raise TypeError(f"GPRegressor: noise must be None (sampled), a noise variance > 0 or one per row of X "
                        f"({n}), got {noise!r} ({type(noise).__name__})")
    try:
        values = np.asarray(noise, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"GPRegressor: noise must be None (sampled), a noise variance > 0 or one per row of X "
                        f"({n}) as numbers, got {type(noise).__name__}") from None
    if values.ndim == 0:
        values = np.full(n, float(values))
    if values.shape != (n,):
        raise ValueError(f"GPRegressor: noise must be one variance or one per row of X ({n}), got shape "
                         f"{values.shape}; for an (n, 1) column pass noise.ravel()")
    bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
    if bad.size:
        raise ValueError(f"GPRegressor: noise must hold finite variances > 0 (variances: sd**2 for standard "
                         f"deviations), got {values[bad[0]]!r} at row {bad[0]} ({bad.size} such rows)")
    return values


#: names a user may write for a library kernel (lower-cased, without '_', '-', ' ') -> its class's name
_KERNEL_NAMES = {"rbf": "SquaredExponential", "se": "SquaredExponential", "sqexp": "SquaredExponential",
                 "gaussian": "SquaredExponential", "exponential": "Matern12", "matern": "Matern52",
                 "rq": "RationalQuadratic", "periodic": "Periodic", "linear": "Linear", "white": "White",
                 "noise": "White", "constant": "Constant", "bias": "Constant", "cosine": "Cosine", "cos": "Cosine",
                 "polynomial": "Polynomial", "poly": "Polynomial"}


def _library_kernel_classes() -> dict:
    from . import kernels

    names = ("SquaredExponential", "Matern12", "Matern32", "Matern52", "RationalQuadratic", "Periodic", "Linear",
             "White", "Constant", "Cosine", "Polynomial")
    return {n: getattr(kernels, n) for n in names}


def _check_kernel(kernel, owner: str, d: int) -> None:
    """``kernel=``: a kernel object (``gpbayes.kernels`` or any object of the ``Kernel`` protocol) whose
    columns exist in X (``d`` columns).  A string, a class, or another object is refused, saying what to
    pass; a library kernel's ``input_dim`` / ``active_dims`` are checked against X here, not in gb.sample."""
    from .kernels import KernelBase

    classes = _library_kernel_classes()
    example = f"gpbayes.kernels.SquaredExponential({d}, ard=True)"
    if isinstance(kernel, str):
        key = re.sub(r"[\s_\-/.]", "", kernel.lower())
        match = _KERNEL_NAMES.get(key) or next((n for n in classes if n.lower() == key), None)
        fix = (f"{kernel!r} names gpbayes.kernels.{match}: pass kernel=gb.kernels.{match}({d})" if match else
               f"the library's kernels are {list(classes)} (gpbayes.kernels), combined with + and *")
        raise TypeError(f"{owner}: kernel must be a kernel object, e.g. kernel={example}, not the string "
                        f"{kernel!r}; {fix}")
    if isinstance(kernel, type):
        raise TypeError(f"{owner}: kernel is the class {kernel.__name__}, not a kernel: instantiate it: "
                        f"{kernel.__name__}(...), e.g. kernel=gb.kernels.{kernel.__name__}({d})"
                        if kernel.__name__ in classes else
                        f"{owner}: kernel is the class {kernel.__name__}, not a kernel: instantiate it: "
                        f"{kernel.__name__}(...)")
    if not (callable(kernel) and all(hasattr(kernel, m) for m in ("n_params", "param_names", "diag"))):
        # not Kernel's full runtime check: a kernel of your own may leave out members a dense model never calls
        raise TypeError(f"{owner}: kernel must be a kernel object (gpbayes.kernels: {list(classes)}, or an object "
                        f"of the gpbayes.kernels.Kernel protocol), e.g. kernel={example}; got {kernel!r} "
                        f"({type(kernel).__name__})")
    if isinstance(kernel, KernelBase):
        _check_kernel_columns(kernel, owner, d)


def _check_kernel_columns(kernel, owner: str, d: int) -> None:
    """Each library component's columns against X's ``d``: ``active_dims`` within 0..d-1, else ``input_dim == d``."""
    parts = getattr(kernel, "kernels", None)
    if parts is not None:  # Sum, Product
        for k in parts:
            _check_kernel_columns(k, owner, d)
        return
    if type(kernel).__name__ in ("Scaled", "Fixed"):  # c * k, k.fix(...): k's columns
        _check_kernel_columns(kernel.kernel, owner, d)
        return
    if not hasattr(kernel, "active_dims"):  # a kernel of the bare protocol inside a sum: its own business
        return
    if getattr(kernel, "any_columns", False) and kernel.active_dims is None:  # Constant: reads no column
        return
    name = type(kernel).__name__
    dims = kernel.active_dims
    if dims is not None:
        out = [i for i in dims if i >= d]
        if out:
            raise ValueError(f"{owner}: kernel {name} has active_dims {list(dims)}, but X has {d} column(s) "
                             f"(indices 0..{d - 1}): column(s) {out} do not exist; give active_dims within "
                             f"0..{d - 1}")
    elif kernel.input_dim != d:
        raise ValueError(f"{owner}: kernel {name} has input_dim = {kernel.input_dim}, but X has {d} column(s); give "
                         f"input_dim={d}, or active_dims=[...] to act on some columns only")


def _check_likelihood_object(likelihood, owner: str, names: str):
    """``likelihood=``: a class is refused (instantiate it); returns the object unchanged otherwise."""
    if isinstance(likelihood, type):
        raise TypeError(f"{owner}: likelihood is the class {likelihood.__name__}, not a likelihood: instantiate "
                        f"it: {likelihood.__name__}(...) (or pass one of the names {names})")
    return likelihood


def _checked_targets(likelihood, y, owner: str):
    """``likelihood.check_targets(y)``, checked: one target per row (a check_targets that drops or adds
    rows is refused) and stable (checking the checked targets again gives them back: the samplers do)."""
    out = likelihood.check_targets(y)
    shape, new = np.shape(y), np.shape(out)
    cls = type(likelihood).__name__
    if new != shape:
        raise ValueError(f"{owner}: {cls}.check_targets changed the targets' shape from {shape} to {new}; it must "
                         "check y, one target per row of X, not drop or add rows -- remove rows from X and y "
                         "before building the model")
    try:
        again = likelihood.check_targets(out)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{owner}: {cls}.check_targets is not stable: it refuses its own output ({err}); gpbayes "
                         "checks the targets again in the samplers, so check_targets must accept the targets it "
                         "returns and give them back unchanged -- convert y before building the model "
                         "instead") from None
    if np.shape(again) != new or not np.array_equal(np.asarray(again, dtype=np.float64),
                                                    np.asarray(out, dtype=np.float64), equal_nan=True):
        raise ValueError(f"{owner}: {cls}.check_targets is not stable: checking its own output again changes it "
                         f"(shape {new} -> {np.shape(again)}); gpbayes checks the targets again in the samplers, so "
                         "check_targets must return targets it accepts unchanged -- convert y before building "
                         "the model instead")
    return out


def _check_labels(y, owner: str) -> np.ndarray:
    """Class labels with no missing value: a NaN, inf or None label is refused, naming its rows (np.unique
    would otherwise make NaN a class of its own)."""
    y = np.asarray(y)
    if y.dtype.kind in "fc":
        bad = ~np.isfinite(y)
    elif y.dtype.kind == "O":
        bad = np.array([v is None or (isinstance(v, (float, complex, np.number)) and not np.isfinite(v))
                        for v in y], dtype=bool)
    else:
        return y
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"{owner}: y has {rows.size} missing labels (NaN, inf or None) at rows "
                         f"{rows[:10].tolist()}{' ...' if rows.size > 10 else ''}: a missing label is not a "
                         "class -- drop those rows from X and y")
    return y


def _numeric_targets(y, name: str, owner: str, hint: str) -> np.ndarray:
    """Real-valued targets as float64: strings (even '1.5'), complex numbers and other objects are refused
    rather than converted (``astype(float)`` would read '1.5' silently and drop an imaginary part)."""
    y = np.asarray(y)
    if y.dtype.kind in "USc" or y.dtype.kind == "O":
        flat = y.ravel()
        bad = [i for i, v in enumerate(flat) if not isinstance(v, (int, float, np.integer, np.floating, bool,
                                                                    np.bool_))]
        if y.dtype.kind in "USc" or bad:
            i = bad[0] if bad else 0
            kind = "complex" if y.dtype.kind == "c" else type(flat[i]).__name__
            raise ValueError(f"{owner}: {name} must be real numbers, got {kind} values (first at row {i}: "
                             f"{flat[i]!r}); {hint}")
    return y.astype(np.float64)


def _binary_labels(y) -> tuple[np.ndarray, tuple]:
    """Map labels to {-1, +1}; return (y, (negative label, positive label))."""
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y has NaN or infinite labels")
    values = np.unique(y)
    if y.dtype.kind in "iufb":
        values = np.unique(y.astype(np.float64))
    if len(values) != 2:
        raise ValueError(f"binary classification needs exactly two label values, got {len(values)}: "
                         f"{values[:10].tolist()}")
    if y.dtype.kind in "iufb":
        v = values.tolist()
        if v == [-1.0, 1.0]:
            return y.astype(np.float64), (-1, 1)
        if v == [0.0, 1.0]:
            return np.where(y.astype(np.float64) == 1.0, 1.0, -1.0), (0, 1) if y.dtype.kind != "b" else (False, True)
        raise ValueError(f"numeric labels must be {{-1, +1}} or {{0, 1}}, got {v}")
    neg, pos = values.tolist()
    warnings.warn(f"labels mapped: {neg!r} -> -1 (negative class), {pos!r} -> +1 (positive class); "
                  "classes holds (negative, positive)", UserWarning, stacklevel=4)
    return np.where(y == pos, 1.0, -1.0), (neg, pos)


def _renamed(new: str, old: str) -> property:
    """A read-only, deprecated alias ``old`` of the attribute ``new`` (issue 25: the scikit-learn-style
    trailing underscore promised estimator behaviour the data-holding models do not have)."""

    def get(self):
        warnings.warn(f"{type(self).__name__}.{old} is deprecated; use .{new} (the models are not scikit-learn "
                      "estimators: gpbayes.sklearn has those)", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    return property(get, doc=f"Deprecated read-only alias of ``{new}``.")


def _resolve_prior(model, defaults):
    """``model.prior`` (None, an IndependentPrior or ``{name: prior}``) resolved against ``defaults``
    (``gpbayes.priors.resolve``): the keys are the posterior's names (``hyperparameters``: a variable, or
    one entry ``lengthscale[age]`` of one over ``feature``); the names of before (``tau_0``, ``sigma``,
    ``lengthscale_0``, ...) with a DeprecationWarning naming the new one (``gpbayes.priors.hyperparameter_keys``)."""
    keys = priors.hyperparameter_keys(model.hyperparameters, model._legacy_names(), model.param_names,
                                      model._aliases())
    owner = type(model).__name__
    if model.prior is None or getattr(model, "units", "standardized") != "data":
        return priors.resolve(model.prior, defaults, model.hyperparameter_labels, keys=keys, owner=owner)
    # units="data": the priors the user gives are on the data-unit value (gpbayes.priors.DataUnits); the
    # defaults stay on the standardised scale (told apart by identity from fresh copies of them)
    comps = tuple(getattr(defaults, "components", defaults))
    fresh = tuple(copy.copy(c) for c in comps)
    resolved = priors.resolve(model.prior, priors.IndependentPrior(fresh), model.hyperparameter_labels, keys=keys,
                              owner=owner)
    shifts = model.log_unit_shifts()
    if not isinstance(resolved, priors.IndependentPrior):
        if np.any(shifts != 0):
            raise units_of_data.UnitsError(
                f"{owner}: a prior over all hyperparameters that is not a gpbayes.priors.IndependentPrior cannot be "
                "read in the data's units (units='data'): give prior={name: component} or an IndependentPrior, or "
                "units='standardized' to state it on the standardised scale")
        return resolved
    labels = model.hyperparameter_labels
    out = []
    for i, c in enumerate(resolved.components):
        if i < len(fresh) and c is fresh[i]:
            out.append(comps[i])
        elif np.isnan(shifts[i]):
            raise units_of_data.UnitsError(
                f"{owner}: the prior of {labels[i]!r} is read in the data's units (units='data'), but "
                f"{labels[i]!r} has no single unit in X's and y's (one parameter shared by columns of X with "
                "different scales -- an isotropic kernel, Periodic's period -- or a kernel without a known unit "
                "rule, gpbayes.units): use ard=True, units='standardized' (the prior on the standardised scale) "
                "or standardize=False")
        else:
            out.append(c if shifts[i] == 0.0 else priors.DataUnits(c, float(shifts[i])))
    return priors.IndependentPrior(tuple(out))


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------
@dataclasses.dataclass(eq=False)  # identity equality: the fields hold arrays, whose == is elementwise
class _Model:
    X: np.ndarray
    kernel: Any
    prior: Any
    standardize: bool
    x_shift: np.ndarray = dataclasses.field(init=False)
    x_scale: np.ndarray = dataclasses.field(init=False)

    def _setup_inputs(self, ard: bool):
        owner = type(self).__name__
        _check_flag(ard, "ard", owner)
        _check_flag(self.standardize, "standardize", owner)
        self.feature_names = _feature_names(self.X)
        self.X_raw = _check_X(self.X)
        self.x_shift, self.x_scale = _standardiser(self.X_raw, self.standardize, self.feature_names)
        self.X = (self.X_raw - self.x_shift) / self.x_scale
        if self.kernel is None:
            self.kernel = SquaredExponential(self.X.shape[1], ard=ard, parameterisation="fg",
                                             nugget=getattr(self, "_nugget", 0.0))
        else:
            _check_kernel(self.kernel, owner, self.X.shape[1])

    #: the mean function (``gpbayes.means``), None for the zero mean; see :meth:`_setup_mean`
    mean = None

    def _setup_mean(self, mean, latent: bool = False):
        """``mean=``: a ``gpbayes.means.Mean`` integrated out (R&W eq. 2.40), so ``self.kernel`` becomes
        ``means.MeanKernel(kernel, mean)``; None (the default) leaves the model as it was."""
        if mean is None:
            return
        if isinstance(mean, type):
            raise TypeError(f"{type(self).__name__}: mean is the class {mean.__name__}, not a mean function: "
                            f"instantiate it: {mean.__name__}(...), e.g. mean=gb.means.{mean.__name__}()")
        if not isinstance(mean, means.Mean):
            raise TypeError(f"mean must be None, gb.means.Constant(...) or gb.means.Linear(...), got "
                            f"{type(mean).__name__}")
        b, _ = mean.prior(self.X.shape[1])
        if latent and np.any(b != 0):
            raise ValueError(f"{type(self).__name__}: mean prior_mean must be 0 (got {b.tolist()}): a latent GP's "
                             "likelihood takes no per-observation offset, so only a prior centred at 0 "
                             "integrates out into the kernel; give the coefficients prior_mean=0")
        self.mean = mean
        self.kernel = means.MeanKernel(self.kernel, mean, self.X.shape[1])

    def prior_mean_at(self, X_std) -> np.ndarray:
        """H(X) b, the mean function's prior mean at (standardised) inputs; zeros without a mean."""
        X_std = np.asarray(X_std, dtype=np.float64)
        if self.mean is None:
            return np.zeros(X_std.shape[0])
        return self.mean.basis(X_std) @ self.mean.prior(self.X.shape[1])[0]

    def transform(self, X_new) -> np.ndarray:
        """New inputs on the model's (standardised) scale.  A table-like ``X_new`` (a DataFrame) given to a
        model fitted on one is matched by column name (:func:`_columns_by_name`), else by position."""
        X_new = _columns_by_name(X_new, getattr(self, "feature_names", None), type(self).__name__)
        X_new = np.asarray(X_new)
        if X_new.ndim == 1:  # one input dimension: a vector of points; several: one point
            X_new = X_new[:, None] if self.X.shape[1] == 1 else X_new[None, :]
        X_new = _check_X(X_new, "X_new", min_rows=1)
        if X_new.shape[1] != self.X.shape[1]:
            raise ValueError(f"X_new has {X_new.shape[1]} columns, the model was fitted on {self.X.shape[1]}")
        return (X_new - self.x_shift) / self.x_scale

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def param_names(self) -> list[str]:
        return list(self.kernel.param_names)

    def _aliases(self) -> list:
        """The descriptive name of each of ``param_names`` (``gpbayes.priors.kernel_aliases``; None where the
        name says what it is already)."""
        return priors.kernel_aliases(self.kernel)

    def _index_dims(self) -> dict:
        """:func:`hyperparameter_layout`'s dims: per-input parameters over ``feature`` (X's column names, else
        0..d-1, as in ``constant_data``)."""
        return {None: ("feature", tuple(getattr(self, "feature_names", None) or range(self.X.shape[1])))}

    @property
    def hyperparameters(self) -> tuple:
        """The variables of ``gpbayes.sample``'s ``posterior`` (:class:`Hyperparameter`, in the order of psi).

        One scheme across the models: ``lengthscale`` (one variable over ``feature`` with ARD, a scalar
        without), ``signal_variance`` (k(x, x)), ``noise_variance``; a quantity that is not one of these
        keeps a name that says what it is (``signal_std``, ``inverse_squared_lengthscale``,
        ``noise_precision``, ``period``, ...; ``gpbayes.priors.kernel_aliases``).  A kernel of the library
        (or one with ``ard``) has its per-input parameters grouped over ``feature``; another kernel's
        parameters keep their own names.
        """
        return hyperparameter_layout(self.param_names, self._aliases(), index_dims=self._index_dims(),
                                     group=self._per_input_names())

    def _per_input_names(self) -> bool:
        """Are the kernel's names ``<stem>_<j>`` per input column j?  The library's kernels' are (and a
        ``gb.means`` mean's wrapping one); another kernel's when it says it has ``ard``."""
        kernel = self.kernel
        inner = kernel.kernel if type(kernel).__name__ == "MeanKernel" else kernel
        return type(inner).__module__.startswith("gpbayes.") or bool(getattr(kernel, "ard", False))

    @property
    def hyperparameter_names(self) -> list[str]:
        """The names of ``gpbayes.sample``'s posterior variables (:attr:`hyperparameters`), e.g.
        ``["lengthscale", "signal_variance", "noise_variance"]``."""
        return [h.name for h in self.hyperparameters]

    @property
    def hyperparameter_labels(self) -> list[str]:
        """One label per coordinate of psi, as ``arviz.summary`` names the rows (``lengthscale[age]``,
        ``lengthscale[0]``, ``signal_variance``): the ``param`` coordinate of ``gpbayes.api.psi_draws``."""
        return [label for h in self.hyperparameters for label in h.labels]

    def _legacy_names(self) -> list[str]:
        """The posterior's names before the one scheme, one per coordinate of psi (:func:`_named_after_features`)."""
        return _named_after_features(self.param_names, self.kernel, getattr(self, "feature_names", None))

    #: ``units=``: "data" (priors, fixed values and the posterior in X's and y's units) or "standardized"
    units = "standardized"

    def _set_units(self, units) -> None:
        self.units = units_of_data.check_units(units, type(self).__name__)

    def _y_log_scale(self) -> float:
        """log of f's scale in y's units: 0 here (y is not standardised); GPRegressor's log y_scale."""
        return 0.0

    def _extra_log_shifts(self, log_y_scale: float) -> list:
        """The shifts of psi's coordinates after the kernel's (:meth:`log_unit_shifts`): 0 by default."""
        return [0.0] * (len(self.param_names) - self.kernel.n_params)

    def log_unit_shifts(self) -> np.ndarray:
        """psi_data - psi for each coordinate of psi (``hyperparameter_labels`` order): log of the factor from
        the model's standardised scale to the data's units (``gpbayes.units``), NaN where a hyperparameter has
        no single unit in the data's (it is then reported standardised); zeros with ``units="standardized"``
        or unstandardised data."""
        p = len(self.param_names)
        lsx = np.log(np.asarray(self.x_scale, dtype=np.float64))
        ly = self._y_log_scale()
        if self.units != "data" or (not np.any(lsx != 0.0) and ly == 0.0):
            return np.zeros(p)
        out = units_of_data.kernel_log_shifts(self.kernel, lsx, ly, strict=False) + self._extra_log_shifts(ly)
        return np.array([np.nan if v is None else float(v) for v in out], dtype=np.float64)

    def _kernel_to_model_units(self) -> None:
        """Values the user wrote in the data's units inside the kernel (``k.fix(...)``, ``Constant(value=c)``)
        carried to the standardised scale the model samples on (``gpbayes.units.to_model_kernel``)."""
        lsx = np.log(np.asarray(self.x_scale, dtype=np.float64))
        ly = self._y_log_scale()
        if self.units != "data" or (not np.any(lsx != 0.0) and ly == 0.0):
            return
        self.kernel = units_of_data.to_model_kernel(self.kernel, lsx, ly, type(self).__name__)
        try:
            units_of_data.kernel_log_shifts(self.kernel, lsx, ly)
        except units_of_data.UnitsError as err:  # a kernel of the user's own without a unit rule: said once
            warnings.warn(f"{type(self).__name__}: {err}; until then its hyperparameters are reported on the "
                          "standardised scale (posterior.attrs['standardized_variables']) and a prior of them "
                          "is refused", UserWarning, stacklevel=4)

    def _attrs(self) -> dict:
        out = {"model": type(self).__name__, "standardized": int(self.standardize), "units": self.units,
               "x_shift": self.x_shift, "x_scale": self.x_scale, "kernel": repr(self.kernel),
               "prior": repr(self.prior)}
        if self.mean is not None:
            out["mean"] = repr(self.mean)
        return out


class GPRegressor(_Model):
    """GP regression with the exact marginal likelihood (R&W Alg. 2.1).

    y = f(x) + e, f ~ GP(0, k_psi), e ~ N(0, lambda).  Parameters psi =
    (log tau_1..d, log sigma, log lambda) with F&G's eq. 5 kernel, in the
    posterior ``lengthscale`` (tau_d, over ``feature``), ``signal_variance``
    (sigma = k(x, x)) and ``noise_variance`` (lambda); default
    priors F&G Sec. 4.4 plus lambda ~ InverseGamma(1, 0.01) on the
    standardised target (proper posterior even with repeated inputs; a
    warning names duplicated (x, y) rows).
    ``standardize`` (default True) centres and scales X's columns and y;
    predictions are returned on the original scale.  ``mean``: None (the
    zero mean) or ``gb.means.Constant(...)`` / ``gb.means.Linear(...)``,
    coefficients beta ~ N(b, B) integrated out (R&W eq. 2.40: ``kernel``
    becomes ``gpbayes.means.MeanKernel``), drawn given each posterior draw
    into ``mean_constant`` / ``mean_coef`` and included by ``predict`` (R&W
    eq. 2.41).

    ``noise``: None (the default: lambda is sampled), or the known noise
    variance in y's units -- one number (homoscedastic, lambda held at that
    value) or one per row of X (heteroscedastic: e_i ~ N(0, noise_i), e.g.
    measurement errors sd_i as ``noise=sd**2``; scikit-learn's ``alpha``,
    PyMC's ``sigma`` given as a vector).  Then ``noise_variance`` is not a
    hyperparameter (not in the posterior, no prior); for known errors plus
    an unknown common noise add ``gb.kernels.White(d)`` to the kernel.
    ``gb.predict``'s y intervals at new inputs use the known value when it
    is one number; per-point noise is not known at new inputs, so there they
    are those of f (a warning says so).
    """

    def __init__(self, X, y, *, kernel=None, prior=None, ard: bool = True, standardize: bool = True, mean=None,
                 noise=None, units: str = "data"):
        super().__init__(X, kernel, prior, standardize)
        self._set_units(units)
        self._setup_inputs(ard)
        self._setup_mean(mean)
        y = _numeric_targets(_check_vector(y, self.n, "y"), "y", "GPRegressor",
                             "regression needs real-valued targets -- for class labels use gb.GPClassifier; numbers "
                             "written as text: convert them first, np.asarray(y, dtype=float)")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
        self.y_raw = y
        self.y_shift, self.y_scale = (float(y.mean()), float(y.std())) if standardize else (0.0, 1.0)
        if self.y_scale == 0:
            raise ValueError("y is constant")
        self.y = (y - self.y_shift) / self.y_scale
        _check_dense_size(self.n, "GPRegressor", "subsample the data or use an inducing-point (sparse) model, "
                                                 "as gb.SparseGPClassifier does for classification")
        #: the known noise variances in y's units, one per row (None: lambda is sampled)
        self.noise = _known_noise(noise, self.n)
        if self.noise is None:
            _warn_duplicated_rows(self.X_raw, y)
        self._kernel_to_model_units()
        # with a mean, the marginal of y - H b has the covariance K + H B H^T + lambda I (R&W eq. 2.40)
        target = self.y if self.mean is None else self.y - self.prior_mean_at(self.X)
        self.gp = GPRegression(self.X, target, self.kernel,
                               noise=None if self.noise is None else self.noise / self.y_scale ** 2)
        extra = (NOISE_PRIOR,) if self.noise is None else ()
        self.prior = _resolve_prior(self, priors.default_kernel_prior(self.kernel, extra))
        if len(self.prior) != self.gp.n_params:
            raise ValueError(f"prior has {len(self.prior)} components, the model {self.gp.n_params}: "
                             f"{self.gp.param_names}")

    @property
    def param_names(self) -> list[str]:
        """The names of psi's coordinates: the kernel's (``tau_*``, ``sigma``), then ``noise_variance`` (unless
        the noise is known, ``noise=``)."""
        return self.gp.param_names

    def _y_log_scale(self) -> float:
        """log y_scale: f and y are standardised, so a variance's unit is y's squared."""
        return float(np.log(self.y_scale))

    def _extra_log_shifts(self, log_y_scale: float) -> list:
        """``noise_variance`` (sampled unless ``noise=``) is in y's units squared."""
        return [2.0 * log_y_scale] if self.noise is None else []

    def _attrs(self) -> dict:
        return {**super()._attrs(), "y_shift": self.y_shift, "y_scale": self.y_scale}


class GPClassifier(_Model):
    """Binary GP classification, probit (F&G eqs. 1-3, default) or logistic likelihood.

    Labels: {-1, +1}, {0, 1}, booleans or any two strings (the sorted second
    one is the positive class); ``classes`` holds (negative, positive) and
    the mapping is reported in a warning.  The latent covariance gets a relative nugget of
    1e-6 (as in our F&G reproduction) so that long lengthscales stay
    factorisable.  Priors: F&G Sec. 4.4.  Posterior: ``lengthscale`` (F&G's
    tau_d, over ``feature``) and ``signal_variance`` (their sigma).  EP (and so ``"ep-ml"`` and EP
    importance densities) is offered for the probit; with the logistic
    likelihood the Gaussian approximation is Laplace's.  ``likelihood`` may
    also be any binary ``gpbayes.likelihoods.Likelihood`` instance for labels
    in {-1, +1} (its ``approximations`` say which Gaussian approximations
    ``sample`` offers, its ``predictive_mean`` what ``predict`` reports).
    ``mean``: None or a ``gb.means`` mean of the latent f with prior_mean 0
    (integrated out into the kernel, R&W eq. 2.40; ``mean_constant`` /
    ``mean_coef`` in the posterior).
    """

    _nugget = _NUGGET

    def __init__(self, X, y, *, kernel=None, prior=None, ard: bool = True, standardize: bool = True,
                 likelihood="probit", mean=None, units: str = "data"):
        if isinstance(likelihood, str):
            if likelihood not in ("probit", "logistic"):
                raise ValueError(f"likelihood must be 'probit', 'logistic' or a gpbayes.likelihoods.Likelihood, "
                                 f"got {likelihood!r}")
            likelihood = Probit() if likelihood == "probit" else Logistic()
        elif not isinstance(_check_likelihood_object(likelihood, "GPClassifier", "'probit', 'logistic'"),
                            Likelihood):
            raise TypeError(f"likelihood must be 'probit', 'logistic' or a gpbayes.likelihoods.Likelihood, "
                            f"got {type(likelihood).__name__}")
        super().__init__(X, kernel, prior, standardize)
        self._set_units(units)
        self._setup_inputs(ard)
        self._setup_mean(mean, latent=True)
        self._kernel_to_model_units()
        y = _check_labels(_check_vector(y, self.n, "y"), "GPClassifier")
        k = len(np.unique(y))
        if k > 2:
            raise ValueError(f"binary classification needs exactly two label values, got {k}: "
                             f"{np.unique(y)[:10].tolist()}; GPClassifier is binary -- for several classes use "
                             "gb.SparseGPClassifier(X, y) (robust-max multiclass, Hensman et al. 2015)")
        _check_dense_size(self.n, "GPClassifier", "use gb.SparseGPClassifier(X, y, n_inducing=...) (inducing "
                                                  "points: memory n x M, not n x n)")
        self.y, self.classes = _binary_labels(y)
        self.likelihood = likelihood
        self.y = _checked_targets(self.likelihood, self.y, "GPClassifier")
        _check_likelihood_outputs(self.likelihood, self.y, "GPClassifier")
        self.prior = _resolve_prior(self, priors.default_kernel_prior(self.kernel))
        if len(self.prior) != self.kernel.n_params:
            raise ValueError(f"prior has {len(self.prior)} components, the kernel {self.kernel.n_params}")

    def _attrs(self) -> dict:
        return {**super()._attrs(), "classes": [str(c) for c in self.classes], "likelihood": self.likelihood.name}

    classes_ = _renamed("classes", "classes_")


class PoissonGP(_Model):
    """Log-Gaussian Cox process on binned counts (M&A Sec. 5).

    y_i ~ Poisson(exposure_i exp(f_i + m)), f ~ GP(0, k_psi), m = log of the
    mean rate sum(y) / sum(exposure) (fixed).  Counts must be non-negative
    integers.  Priors: F&G Sec. 4.4 on (tau, sigma).  ``mean``: None or a
    ``gb.means`` mean of f with prior_mean 0 (integrated out, R&W eq. 2.40);
    its ``mean_constant`` draws include the fixed offset m.
    """

    _nugget = _NUGGET

    def __init__(self, X, counts, *, exposure=1.0, kernel=None, prior=None, ard: bool = True,
                 standardize: bool = True, mean=None, units: str = "data"):
        super().__init__(X, kernel, prior, standardize)
        self._set_units(units)
        self._setup_inputs(ard)
        self._setup_mean(mean, latent=True)
        self._kernel_to_model_units()
        y = _numeric_targets(_check_vector(counts, self.n, "counts"), "counts", "PoissonGP",
                             "counts must be non-negative integers")
        if not np.all(np.isfinite(y)) or np.any(y < 0) or np.any(y != np.round(y)):
            raise ValueError("counts must be non-negative integers")
        exposure = _numeric_targets(exposure, "exposure", "PoissonGP", "exposure must be positive numbers (a scalar "
                                    "or one per count)")
        if exposure.ndim not in (0, 1) or (exposure.ndim == 1 and exposure.shape != y.shape):
            raise ValueError(f"exposure must be a scalar or one value per count ({y.size}), got shape {exposure.shape}")
        if np.any(exposure <= 0) or not np.all(np.isfinite(exposure)):
            raise ValueError("exposure must be positive and finite")
        _check_dense_size(self.n, "PoissonGP", "bin the counts more coarsely (fewer bins) or subsample")
        self.y = y
        self.offset = float(np.log(max(y.sum(), 0.5) / np.broadcast_to(exposure, y.shape).sum()))
        self.likelihood = Poisson(exposure=exposure, offset=self.offset)
        self.prior = _resolve_prior(self, priors.default_kernel_prior(self.kernel))

    def _attrs(self) -> dict:
        return {**super()._attrs(), "offset": self.offset, "likelihood": "poisson"}


class SparseGP(_Model):
    """A variationally sparse GP with any factorised likelihood, sampled with MCMC (Hensman et al. 2015).

    f ~ GP(0, k_psi), y_i ~ p(y_i | f_i) with the likelihood a ``gpbayes.likelihoods.Likelihood`` (or its
    name; ``gpbayes.sparse.multiclass.RobustMax`` for several latent functions), M = ``n_inducing``
    inducing inputs.  The sampler targets log q*(v, theta) of Hensman et al. (poster, "Optimal q*(u,
    theta)"; eq. of the collapsed bound with the expected log-likelihood by ``n_quad``-point
    Gauss-Hermite quadrature, whitened u = L v, "Tricks: whiten/center"), so the likelihood needs
    ``log_lik`` and ``d1`` only.  Their coal-mining Cox process is ``SparseGP(X, counts,
    likelihood=Poisson(exposure=...))``; for labels :class:`SparseGPClassifier` chooses the likelihood.

    A Gaussian likelihood's noise variance sigma^2 is a hyperparameter (``sample_noise``, the default
    for ``likelihood="gaussian"``): y_i = f(x_i) + e_i, e_i ~ N(0, sigma^2), the Gaussian row of
    Hensman et al.'s table (Titsias 2009), sampled jointly with the kernel's parameters and v as psi's
    last coordinate, the posterior variable ``noise_variance`` (GPRegressor's name), in y's units
    squared (y is not standardised here).  The expectation in q* is then exact, eq. (G1) of
    ``gpbayes.sparse.svgp``; with Z = X the sampled posterior of theta is the exact GP's (up to the
    jitter).  Default prior sigma^2 ~ InverseGamma(1, 0.01 var(y)): GPRegressor's InverseGamma(1, 0.01)
    on the standardised target carried to y's units; ``prior={"noise_variance": ...}`` sets another.

    Parameters
    ----------
    X : (n, d) array or DataFrame
        Inputs; standardised by default (``standardize``), shift and scale recorded.
    y : (n,) array
        Targets, passed to the likelihood as given (``likelihood.check_targets`` checks them).
    likelihood : Likelihood, RobustMax or str
        The observation model ('probit', 'logistic', 'gaussian', 'poisson' by name); its parameters
        are fixed (not sampled), except a Gaussian's noise variance with ``sample_noise``, for which
        its ``noise_variance`` is only where the Gaussian fit starts.
    n_inducing : int, default 20
        M, the inducing inputs: M random rows of X from ``seed``, then optimised with the Gaussian
        (SVGP) approximation, whose fit (``svgp_fit``) also starts the chains.
    kernel, prior, ard :
        Default kernel M&A's SE parameterisation sigma_f^2 exp(-1/2 sum (x_d - x'_d)^2 / l_d^2)
        (``SquaredExponential(d, parameterisation="ma")``, isotropic unless ``ard``); in the
        posterior ``lengthscale`` and ``signal_std`` (sigma_f, a standard deviation).  Any
        stationary library kernel may be given (``SquaredExponential``, ``Matern12``, ``Matern32``,
        ``Matern52``, ``RationalQuadratic``, ``Periodic``: ``gpbayes.sparse.svgp.SPARSE_KERNELS``,
        through the kernel protocol's ``cross_covariance_vjp`` and ``diag_vjp``); others (``Linear``,
        ``White``, sums and products) are refused here, naming them.  Default priors (ours, as in
        our reproduction's image study): every kernel parameter ~ Gamma(2, 0.5), and the noise's
        above; ``prior={"signal_std": ...}`` sets one by name.
    sample_noise : bool or None, default None
        Sample a Gaussian likelihood's noise variance (above).  None: True for a Gaussian likelihood
        (with ``svgp_fit`` given: True if its psi has the noise's coordinate after the kernel's),
        False otherwise; False keeps the likelihood's ``noise_variance`` fixed (known noise).
    standardize : bool, default True
        Centre and scale X's columns (y is never standardised).
    n_quad, jitter : int, float, default 20, 1e-6
        Gauss-Hermite points of the expected log-likelihood; the jitter added to K_uu.
    seed, maxiter : int, default 0, 300
        The inducing inputs' draw and the L-BFGS-B iterations of the SVGP fit (half with Z fixed).
    svgp_fit : SVGPFit or SVGPParams, optional
        A Gaussian fit made elsewhere (m (M, C), R (C, M, M), Z (M, d), psi): the sparse target then
        uses its Z and the chains start from its q(v) and psi (``n_inducing``, ``seed`` and ``maxiter``
        are unused).

    Examples
    --------
    >>> import numpy as np, gpbayes as gb
    >>> t = np.linspace(0.0, 10.0, 40)[:, None]
    >>> counts = np.random.default_rng(0).poisson(np.exp(np.sin(t[:, 0])))
    >>> model = gb.SparseGP(t, counts, likelihood=gb.likelihoods.Poisson(), n_inducing=8, maxiter=40)
    >>> model.target.Z.shape
    (8, 1)
    >>> y = np.sin(t[:, 0]) + 0.1 * np.random.default_rng(1).normal(size=40)
    >>> gb.SparseGP(t, y, likelihood="gaussian", n_inducing=8, maxiter=40).hyperparameter_names
    ['lengthscale', 'signal_std', 'noise_variance']
    """

    #: whether psi's last coordinate is a Gaussian likelihood's log noise variance (``sample_noise``)
    sample_noise = False

    def __init__(self, X, y, *, likelihood, n_inducing: int = 20, kernel=None, prior=None, ard: bool = False,
                 standardize: bool = True, n_quad: int = 20, jitter: float = 1e-6, seed: int = 0, maxiter: int = 300,
                 svgp_fit=None, sample_noise: bool | None = None, units: str = "data"):
        from .likelihoods import make_likelihood
        from .sparse.multiclass import RobustMax

        if isinstance(likelihood, str):
            likelihood = make_likelihood(likelihood)
        elif not isinstance(_check_likelihood_object(likelihood, type(self).__name__, "'probit', 'logistic', "
                                                     "'gaussian', 'poisson'"), (Likelihood, RobustMax)):
            raise TypeError(f"{type(self).__name__}: likelihood must be a gpbayes.likelihoods.Likelihood instance, "
                            "a gpbayes.sparse.multiclass.RobustMax, or one of the names 'probit', 'logistic', "
                            f"'gaussian', 'poisson', got {type(likelihood).__name__}")
        self._sparse_inputs(X, kernel, prior, standardize, ard, units)
        y = _check_vector(y, self.n, "y")
        self.likelihood = likelihood
        self.y = np.asarray(_checked_targets(likelihood, y, type(self).__name__), dtype=np.float64)
        if not isinstance(likelihood, RobustMax):
            _check_likelihood_outputs(likelihood, self.y, type(self).__name__)
        self.classes = None
        self.sample_noise = self._resolve_sample_noise(sample_noise, svgp_fit)
        self._sparse_fit(n_inducing, n_quad, jitter, seed, maxiter, svgp_fit)

    def _resolve_sample_noise(self, sample_noise, svgp_fit) -> bool:
        """``sample_noise`` checked against the likelihood (a Gaussian only); None decided as the class
        docstring says."""
        from .likelihoods import Gaussian
        from .sparse import svgp

        owner = type(self).__name__
        gaussian = isinstance(self.likelihood, Gaussian)
        if sample_noise is None:
            if not gaussian:
                return False
            if svgp_fit is not None:
                params = svgp_fit.params if isinstance(svgp_fit, svgp.SVGPFit) else svgp_fit
                return np.shape(getattr(params, "psi", ())) == (self.kernel.n_params + 1,)
            return True
        _check_flag(sample_noise, "sample_noise", owner)
        if sample_noise and not gaussian:
            raise ValueError(f"{owner}: sample_noise=True samples a Gaussian likelihood's noise variance, but the "
                             f"likelihood is {type(self.likelihood).__name__}; use likelihood='gaussian' or "
                             "sample_noise=False")
        return bool(sample_noise)

    @property
    def param_names(self) -> list[str]:
        """The names of psi's coordinates: the kernel's, then ``noise_variance`` with ``sample_noise``."""
        return list(self.kernel.param_names) + (["noise_variance"] if self.sample_noise else [])

    def _sparse_inputs(self, X, kernel, prior, standardize, ard, units):
        """X checked and standardised; the kernel (M&A's SE by default; a stationary library kernel,
        ``gpbayes.sparse.svgp.check_kernel``)."""
        from .sparse import svgp

        owner = type(self).__name__
        _check_flag(ard, "ard", owner)
        _check_flag(standardize, "standardize", owner)
        super().__init__(X, kernel, prior, standardize)
        self._set_units(units)
        self.feature_names = _feature_names(self.X)
        self.X_raw = _check_X(self.X)
        self.x_shift, self.x_scale = _standardiser(self.X_raw, standardize, self.feature_names)
        self.X = (self.X_raw - self.x_shift) / self.x_scale
        if self.kernel is None:
            self.kernel = SquaredExponential(self.X.shape[1], ard=ard, parameterisation="ma")
        else:
            _check_kernel(self.kernel, owner, self.X.shape[1])
        self._kernel_to_model_units()
        svgp.check_kernel(self.kernel, owner)

    def _sparse_fit(self, n_inducing, n_quad, jitter, seed, maxiter, svgp_fit):
        """The default prior, the Gaussian (SVGP) fit -- given, or from M random rows of X, half the
        iterations with Z fixed -- and the sparse target on its Z."""
        from .sparse import svgp
        from .sparse.target import SparseTarget

        owner = type(self).__name__
        n_inducing = _check_integer(n_inducing, "n_inducing", owner, minimum=None,
                                    allowed=f" between 1 and n = {self.n}")
        n_quad = _check_integer(n_quad, "n_quad", owner)
        seed = _check_integer(seed, "seed", owner, minimum=0)
        maxiter = _check_integer(maxiter, "maxiter", owner, minimum=0)
        defaults = (priors.Gamma(2.0, 0.5),) * self.kernel.n_params
        if self.sample_noise:  # GPRegressor's InverseGamma(1, 0.01) on the standardised y, in y's units
            var_y = float(np.var(self.y))
            defaults += (priors.InverseGamma(1.0, 0.01 * var_y if var_y > 0 else 0.01),)
        self.prior = _resolve_prior(self, priors.IndependentPrior(defaults))
        n_params = len(self.param_names)
        if svgp_fit is not None:  # a fit made elsewhere: its Z places the target, its q(v) and psi start the chains
            self.svgp_fit = _given_svgp_fit(svgp_fit, self.X.shape[1], n_params,
                                            getattr(self.likelihood, "n_latent", 1))
        else:
            if not 1 <= int(n_inducing) <= self.n:
                raise ValueError(f"n_inducing must be between 1 and n = {self.n}, got {n_inducing}")
            model = svgp.SVGPModel(self.X, self.y, self.kernel, self.likelihood, self.prior, n_quad=n_quad,
                                   jitter=jitter, sample_noise=self.sample_noise)
            Z0 = svgp.initial_inducing_inputs(np.random.default_rng(seed), self.X, int(n_inducing))
            psi0 = self.kernel.initial_psi(self.X)
            if self.sample_noise:  # the fit starts at the likelihood's noise_variance
                psi0 = np.append(psi0, np.log(self.likelihood.noise_variance))
            first = svgp.fit(model, Z0, psi0, fit_Z=False, maxiter=maxiter // 2)
            p = first.params
            self.svgp_fit = svgp.fit(model, p.Z, p.psi, m0=p.m, R0=p.R, fit_Z=True, maxiter=maxiter // 2)
        self.target = SparseTarget(self.X, self.y, self.svgp_fit.params.Z, self.kernel, self.likelihood, self.prior,
                                   n_quad=n_quad, jitter=jitter, sample_noise=self.sample_noise)

    def _attrs(self) -> dict:
        classes = {} if self.classes is None else {"classes": [str(c) for c in self.classes]}
        return {**super()._attrs(), **classes,
                "likelihood": getattr(self.likelihood, "name", type(self.likelihood).__name__),
                "n_inducing": int(self.target.Z.shape[0]), "svgp_elbo": float(self.svgp_fit.elbo)}

    fit_ = _renamed("svgp_fit", "fit_")


class SparseGPClassifier(SparseGP):
    """Variationally sparse GP classification, sampled with MCMC (Hensman et al. 2015).

    :class:`SparseGP` with the likelihood chosen from the labels.  Two labels: as for
    :class:`GPClassifier` (probit).  More than two: the robust-max likelihood (their MNIST study;
    label-noise probability ``epsilon``), classes sorted and mapped to 0..K-1 (``classes``).
    M = ``n_inducing`` inducing inputs chosen at random from X and then optimised with the Gaussian
    (SVGP) approximation; the sampler then targets log q*(v, theta) (poster, "Optimal q*(u, theta)",
    in whitened coordinates, "Tricks: whiten/center"; Gauss-Hermite expectations).  Kernel (any
    stationary library kernel may be given, as for :class:`SparseGP`): by default M&A's SE
    parameterisation sigma_f^2 exp(-1/2 sum (x_d - x'_d)^2 / l_d^2), isotropic by default; in the
    posterior ``lengthscale`` (l, over ``feature`` with ``ard=True``) and ``signal_std`` (sigma_f, a
    standard deviation: k(x, x) = sigma_f^2); priors (ours, as in our reproduction's image study)
    lengthscale, signal_std ~ Gamma(2, 0.5).  The Gaussian (SVGP) fit that places the inducing
    inputs and starts the chains is ``svgp_fit``: fitted here (M = ``n_inducing`` random rows of X
    from ``seed``, psi from the kernel's ``initial_psi``, then ``maxiter`` L-BFGS-B iterations, half
    with Z fixed), or made elsewhere and given as ``svgp_fit=`` (a ``gpbayes.sparse.svgp.SVGPFit``,
    or its ``SVGPParams``: m (M, C), R (C, M, M), Z (M, d), psi), e.g. a fit started from other
    inducing inputs or hyperparameters; the sparse target then uses its Z and the chains start from
    its q(v) and psi (``n_inducing``, ``seed`` and ``maxiter`` are unused).
    """

    def __init__(self, X, y, *, n_inducing: int = 20, kernel=None, prior=None, ard: bool = False,
                 standardize: bool = True, n_quad: int = 20, jitter: float = 1e-6, seed: int = 0, maxiter: int = 300,
                 epsilon: float = 1e-3, svgp_fit=None, units: str = "data"):
        from .sparse.multiclass import RobustMax

        self._sparse_inputs(X, kernel, prior, standardize, ard, units)
        y = _check_labels(_check_vector(y, self.n, "y"), "SparseGPClassifier")
        classes = np.unique(y)
        if len(classes) > 2:  # robust-max multiclass (Hensman et al. 2015, MNIST)
            self.classes = tuple(classes.tolist())
            self.y = np.searchsorted(classes, y).astype(np.float64)
            self.likelihood = RobustMax(len(classes), float(epsilon))
            warnings.warn(f"labels mapped: classes {list(self.classes)} -> 0..{len(classes) - 1} (robust-max "
                          "likelihood); classes holds them in order", UserWarning, stacklevel=2)
        else:
            self.y, self.classes = _binary_labels(y)
            self.likelihood = Probit()
        self._sparse_fit(n_inducing, n_quad, jitter, seed, maxiter, svgp_fit)

    classes_ = _renamed("classes", "classes_")


def _given_svgp_fit(fit, d: int, n_params: int, n_latent: int):
    """``SparseGPClassifier(svgp_fit=...)``: an ``SVGPFit`` (or its ``SVGPParams``) checked against the
    model -- Z (M, d), m (M, C), R (C, M, M), psi (n_params,), all finite -- as an ``SVGPFit``."""
    from .sparse import svgp

    if isinstance(fit, svgp.SVGPParams):
        fit = svgp.SVGPFit(fit, float("nan"), True, 0, "given as SVGPParams")
    if not isinstance(fit, svgp.SVGPFit):
        raise TypeError(f"svgp_fit must be a gpbayes.sparse.svgp.SVGPFit or SVGPParams (m, R, Z, psi), got "
                        f"{type(fit).__name__}")
    p = fit.params
    Z = np.asarray(p.Z, dtype=np.float64)
    M = Z.shape[0] if Z.ndim == 2 else -1
    want = {"Z": (M, d), "m": (M, n_latent), "R": (n_latent, M, M), "psi": (n_params,)}
    arrays = {"Z": Z, "m": np.asarray(p.m, dtype=np.float64), "R": np.asarray(p.R, dtype=np.float64),
              "psi": np.asarray(p.psi, dtype=np.float64)}
    for name, a in arrays.items():
        if M < 1 or a.shape != want[name]:
            raise ValueError(f"svgp_fit.params.{name} must have shape {want[name]} (M inducing inputs of d = {d} "
                             f"features, C = {n_latent} latent functions, {n_params} hyperparameters), got "
                             f"{a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"svgp_fit.params.{name} holds NaN or infinite values")
    return fit._replace(params=svgp.SVGPParams(arrays["m"], arrays["R"], arrays["Z"], arrays["psi"]))


class GPLVMRegressor(_Model):
    """The supervised GPLVM of Gadd et al.: multi-output y from inputs x through a latent z.

    z | x ~ GP with an SE-ARD kernel on x (precisions sigma_l), y | z ~ GP with
    an SE-ARD kernel on z (precisions theta_j, amplitude theta_S) plus noise of
    precision beta; q(Z) is fitted by variational Bayes with ``n_inducing``
    inducing points (their Alg. 1).  Parameters psi = log(sigma_1..k_x,
    theta_1..k_z, theta_S, beta); in the posterior, named for what they are
    (``gpbayes.priors.gplvm_aliases``): ``latent_inverse_squared_lengthscale``
    (sigma_l = 1 / l^2 of k_z, over ``feature``), ``output_inverse_squared_lengthscale``
    (theta_j of k_f, over ``latent``), ``signal_variance`` (theta_S = k_f(z, z)) and
    ``noise_precision`` (beta = 1 / noise variance).  Default priors (ours, as in our
    reproduction; the paper says only "a Gamma prior on all hyperparameters,
    with a suitably large support"): Gamma(1, 0.1) on sigma, theta, theta_S and
    Gamma(1, 0.001) on beta.  X's columns and Y's columns are standardised by
    default.  The type-II ML fit (``ml_fit``) starts the chains: fitted here (``ml_restarts``
    starts from ``seed``, ``ml_max_iter`` L-BFGS-B iterations each), or made elsewhere and given as
    ``ml_fit=`` (a ``gpbayes.gplvm.vb.MLResult`` of ``fit_type2_ml`` on this model's data, e.g.
    from other starting hyperparameters; its psi and q(Z) are used as they are, and ``seed``,
    ``ml_restarts`` and ``ml_max_iter`` are unused).
    """

    def __init__(self, X, Y, *, latent_dim: int = 2, n_inducing: int = 10, prior=None, standardize: bool = True,
                 seed: int = 0, ml_restarts: int = 2, ml_max_iter: int = 500, ml_fit=None,
                 units: str = "standardized"):
        from .gplvm.vb import SupervisedGPLVM, fit_type2_ml

        if units_of_data.check_units(units, "GPLVMRegressor") == "data":
            raise ValueError("GPLVMRegressor: units='data' is not offered: Y's columns are standardised each with its "
                             "own scale, so the output variance theta_S and the noise precision beta have no single "
                             "unit in Y's, and the latent inverse squared lengthscales sigma_l are read on the "
                             "standardised X; pass units='standardized' (the default), or standardize=False to work "
                             "in the data's units throughout")

        _check_flag(standardize, "standardize", "GPLVMRegressor")
        latent_dim = _check_integer(latent_dim, "latent_dim", "GPLVMRegressor")
        n_inducing = _check_integer(n_inducing, "n_inducing", "GPLVMRegressor", minimum=None,
                                    allowed=" between 1 and n (the rows of X)")
        seed = _check_integer(seed, "seed", "GPLVMRegressor", minimum=0)
        ml_restarts = _check_integer(ml_restarts, "ml_restarts", "GPLVMRegressor", minimum=0)
        ml_max_iter = _check_integer(ml_max_iter, "ml_max_iter", "GPLVMRegressor", minimum=0)
        super().__init__(X, None, prior, standardize)
        self.units = "standardized"
        self.feature_names = _feature_names(self.X)
        self.X_raw = _check_X(self.X)
        self.x_shift, self.x_scale = _standardiser(self.X_raw, standardize, self.feature_names)
        self.X = (self.X_raw - self.x_shift) / self.x_scale
        Y = _numeric_targets(Y, "Y", "GPLVMRegressor", "the outputs must be real numbers")
        Y = Y[:, None] if Y.ndim == 1 else Y
        if Y.ndim != 2 or Y.shape[0] != self.n:
            raise ValueError(f"Y must be (n, k_y) with n = {self.n} rows, got shape {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise ValueError("Y contains NaN or infinite values")
        self.y_shift, self.y_scale = _standardiser(Y, standardize)
        self.y = (Y - self.y_shift) / self.y_scale
        if not 1 <= int(n_inducing) <= self.n:
            raise ValueError(f"n_inducing must be between 1 and n = {self.n}, got {n_inducing}")
        self.gplvm = SupervisedGPLVM(self.X, self.y, int(latent_dim), int(n_inducing))
        names = self.gplvm.param_names
        self.prior = _resolve_prior(self, priors.IndependentPrior(tuple(priors.Gamma(1.0, 0.001 if n == "beta" else 0.1)
                                                                        for n in names)))
        if len(self.prior) != len(names):
            raise ValueError(f"prior has {len(self.prior)} components, the model {len(names)}: {names}")
        if ml_fit is not None:  # a fit made elsewhere
            self.ml_fit = _given_ml_fit(ml_fit, self.gplvm)
        else:
            start = np.log(np.array([100.0 if n == "beta" else 1.0 for n in names]))
            self.ml_fit = fit_type2_ml(np.random.default_rng(seed), self.gplvm, start, n_restarts=ml_restarts,
                                       max_iter=ml_max_iter)
        self.kernel = None

    @property
    def param_names(self) -> list[str]:
        """The names of psi's coordinates: ``sigma_*`` (z | x), ``theta_*`` (y | z), ``theta_S``, ``beta``."""
        return list(self.gplvm.param_names)

    def _aliases(self) -> list:
        """``gpbayes.priors.gplvm_aliases``: what Gadd et al.'s sigma_l, theta_j, theta_S and beta are."""
        return priors.gplvm_aliases(self.param_names)

    def _per_input_names(self) -> bool:
        return True  # sigma_l per column of X, theta_j per latent dimension

    def _index_dims(self) -> dict:
        """sigma_l over X's columns (``feature``), theta_j over the latent dimensions (``latent``, as Z's)."""
        return {"sigma": ("feature", tuple(self.feature_names or range(self.X.shape[1]))),
                "theta": ("latent", tuple(range(self.gplvm.latent_dim)))}

    def blocks(self) -> tuple:
        """Gadd et al.'s two Gibbs blocks: the kernel of z | x with theta_1..k_z, then (theta_S, beta)."""
        names = self.param_names
        return (self.gplvm.block([n for n in names if n not in ("theta_S", "beta")]),
                self.gplvm.block(["theta_S", "beta"]))

    def _attrs(self) -> dict:
        return {"model": type(self).__name__, "standardized": int(self.standardize), "units": self.units,
                "x_shift": self.x_shift, "x_scale": self.x_scale, "y_shift": self.y_shift, "y_scale": self.y_scale,
                "latent_dim": int(self.gplvm.latent_dim), "n_inducing": int(self.gplvm.n_inducing),
                "prior": repr(self.prior), "ml_bound": float(self.ml_fit.bound)}

    fit_ = _renamed("ml_fit", "fit_")


def _given_ml_fit(fit, gplvm):
    """``GPLVMRegressor(ml_fit=...)``: an ``MLResult`` checked against the model -- psi (p,), q(Z)'s
    whitened mean and log lambda (N, k_z), inducing inputs (M, k_z), all finite."""
    from .gplvm.vb import MLResult

    if not isinstance(fit, MLResult):
        raise TypeError(f"ml_fit must be a gpbayes.gplvm.vb.MLResult (fit_type2_ml's result), got {type(fit).__name__}")
    n, kz, m, p = gplvm.n, gplvm.latent_dim, gplvm.n_inducing, gplvm.n_params
    want = {"psi": (fit.psi, (p,)), "params.whitened_mean": (fit.params.whitened_mean, (n, kz)),
            "params.log_lambda": (fit.params.log_lambda, (n, kz)), "params.inducing": (fit.params.inducing, (m, kz))}
    for name, (a, shape) in want.items():
        a = np.asarray(a, dtype=np.float64)
        if a.shape != shape:
            raise ValueError(f"ml_fit.{name} must have shape {shape} (N = {n} points, k_z = {kz} latent dimensions, "
                             f"M = {m} inducing points, {p} hyperparameters {gplvm.param_names}), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"ml_fit.{name} holds NaN or infinite values")
    return fit


class LatentGP(_Model):
    """A GP prior on a latent f with any factorised likelihood: f ~ GP(0, k_psi), y_i ~ p(y_i | f_i).

    The latent-Gaussian model of Murray & Adams (eq. 3) and Filippone & Girolami
    (eq. 1) with the observation model a ``gpbayes.likelihoods.Likelihood``
    object -- one of the library's (``Probit``, ``Logistic``, ``Gaussian``,
    ``Poisson``, or its name) or a class of your own (``docs/examples/own_likelihood.py``:
    a Student-t).  ``gb.sample(model)`` samples psi and f jointly and keeps f
    (``posterior["f"]`` over ``obs``); ``gb.predict`` and
    ``gb.sample_posterior_predictive(model, idata, X_new=...)`` read it.

    Parameters
    ----------
    X : (n, d) array or DataFrame
        Inputs; standardised by default (``standardize``), shift and scale recorded.
    y : (n,) array
        Targets, passed to the likelihood as given (``likelihood.check_targets`` checks them);
        they are not standardised, since the likelihood's own parameters (a Student-t scale, a
        noise variance) are in y's units.
    likelihood : Likelihood or str
        The observation model; a string is ``gpbayes.likelihoods.make_likelihood(name)``.
        Its parameters are fixed (not sampled).  What it defines decides the methods:
        ``log_lik`` alone serves ``"aa"``, ``"slice-fixed"`` and ``"slice-prior-white"``;
        ``"surr"`` and the other ``"slice-<rep>"`` representations (surrogate data, posterior:
        ``"slice-surr-site"``, ``"slice-post-taylor"``, ...) need the site fits of M&A eqs. 12-13,
        whose quadrature fallbacks centre their nodes by Newton's method on ``d1`` and ``d2`` (or
        define ``site_fit`` / ``taylor_fit`` yourself); ``"nuts-whitened"`` needs ``d1`` and, for
        its start at the Laplace mode, ``d2`` -- so the default method (one of these two) needs
        both; a
        method that needs a member the class does not define stops in ``gb.sample`` with a
        NotImplementedError naming it.  ``log_lik`` and ``d1`` must return one value per
        observation (checked here, at f = 0), and ``check_targets`` one target per row, its own
        output accepted unchanged (checked here).  The Laplace / EP methods (``"pseudo-marginal"``,
        ``"nuts-is"``) are offered when its ``approximations`` list them -- a likelihood that is
        not log-concave (Student-t) should list none (``approximations = ()``), as the Laplace
        approximation needs W = -d2 >= 0 (R&W Sec. 3.4).  ``predictive_mean`` is what
        ``gb.predict`` reports as ``y_mean`` and ``sample_targets`` draws y.
    kernel, prior, ard :
        As for :class:`GPClassifier`: default SE kernel in F&G's parameterisation (eq. 5) with a
        relative nugget of 1e-6, ARD by default; priors F&G Sec. 4.4.
    standardize : bool, default True
        Centre and scale X's columns (y is never standardised).
    sample_offset : bool, default False
        Sample a constant m added to f, y_i ~ p(y_i | f_i + m), jointly with psi: Murray & Adams
        2010 Sec. 5's Cox-process model ("We sampled the hyperparameters in (2) and a mean offset to
        the log-rate"), m slice-sampled as psi's last coordinate by Alg. 4 in every representation
        (with "fixed" its target is eq. 4 times L(f + m)).  m is the likelihood's ``with_offset``
        (the Poisson's log-rate, the Gaussian's mean; others refuse).  It is the posterior variable
        ``mean_constant`` -- the name of ``gb.means.Constant``'s constant elsewhere -- reported as it
        is (``posterior`` and ``unconstrained_posterior`` both hold m, not exp(m)), and added to
        the likelihood's own fixed offset, if any.  Default prior m ~ N(c, s^2) with (c, s) =
        ``likelihood.offset_moments(y)`` (Poisson: c = log of the mean count per unit exposure, the
        log link's inverse at the mean response, s = 1; Gaussian: mean and sd of y), written
        ``gpbayes.priors.LogNormal(c, s)`` (its density on psi is the Gaussian of psi = m itself);
        ``prior={"mean_constant": LogNormal(mu, sd)}`` sets another.  Chains start at m = c (plus
        the N(0, 0.1^2) noise of ``init="kernel"``) or at a prior draw (``init="prior"``).
        ``gb.predict`` and ``gb.sample_posterior_predictive`` add m per draw to f (``f_mean``, ...
        are of f + m).  Methods: ``"slice-<representation>"``, ``"aa"``, ``"surr"`` (the others
        refuse, naming these).

    Notes
    -----
    The default method keeps f: slice sampling in the surrogate-data representation (M&A Alg. 4)
    with few hyperparameters, NUTS on the whitened joint posterior above
    (:func:`gpbayes.methods.default_method`); with ``sample_offset`` always the slice sampler.

    Examples
    --------
    >>> import numpy as np, gpbayes as gb
    >>> t = np.linspace(0.0, 1.0, 8)[:, None]
    >>> model = gb.LatentGP(t, [3, 5, 4, 6, 2, 3, 5, 4], likelihood="poisson", sample_offset=True)
    >>> model.param_names
    ['tau_0', 'sigma', 'mean_constant']
    """

    _nugget = _NUGGET

    def __init__(self, X, y, *, likelihood, kernel=None, prior=None, ard: bool = True, standardize: bool = True,
                 sample_offset: bool = False, units: str = "data"):
        from .likelihoods import make_likelihood

        if not isinstance(sample_offset, (bool, np.bool_)):
            raise TypeError(f"LatentGP: sample_offset must be True or False, got {sample_offset!r}")
        self.sample_offset = bool(sample_offset)
        if isinstance(likelihood, str):
            likelihood = make_likelihood(likelihood)
        elif not isinstance(_check_likelihood_object(likelihood, "LatentGP", "'probit', 'logistic', 'gaussian', "
                                                     "'poisson'"), Likelihood):
            raise TypeError(f"LatentGP: likelihood must be a gpbayes.likelihoods.Likelihood instance (a subclass "
                            f"of the protocol) or one of the names 'probit', 'logistic', 'gaussian', 'poisson', "
                            f"got {type(likelihood).__name__}")
        super().__init__(X, kernel, prior, standardize)
        self._set_units(units)
        self._setup_inputs(ard)
        self._kernel_to_model_units()
        y = _check_vector(y, self.n, "y")
        _check_dense_size(self.n, "LatentGP", "subsample or bin the data")
        self.likelihood = likelihood
        self.y = np.asarray(_checked_targets(self.likelihood, y, "LatentGP"), dtype=np.float64)
        _check_likelihood_outputs(self.likelihood, self.y, "LatentGP")
        extra = ()
        if self.sample_offset:
            try:
                self.likelihood.with_offset(0.0)
            except NotImplementedError:
                raise ValueError(f"LatentGP: sample_offset=True needs a likelihood with an offset on f "
                                 f"(with_offset: the Poisson's log-rate, the Gaussian's mean); the "
                                 f"{self.likelihood.name} likelihood has none -- use 'poisson' or 'gaussian', "
                                 "define with_offset(m) on your class, or sample_offset=False") from None
            centre, scale = (float(v) for v in self.likelihood.offset_moments(self.y))
            self.offset_centre = centre
            # m ~ N(centre, scale^2): LogNormal's density on psi is the Gaussian of psi = m itself
            extra = (priors.LogNormal(centre, scale),)
        self.prior = _resolve_prior(self, priors.default_kernel_prior(self.kernel, extra))
        if len(self.prior) != self.n_params:
            raise ValueError(f"prior has {len(self.prior)} components, psi {self.n_params}: {self.param_names}")

    @property
    def n_params(self) -> int:
        """The length of psi: the kernel's log-parameters, then m with ``sample_offset``."""
        return self.kernel.n_params + int(self.sample_offset)

    @property
    def param_names(self) -> list[str]:
        """The names of psi's coordinates: the kernel's, then ``mean_constant`` (m) with ``sample_offset``."""
        return list(self.kernel.param_names) + (["mean_constant"] if self.sample_offset else [])

    @property
    def unlogged_names(self) -> tuple[str, ...]:
        """Coordinates of psi sampled on their own scale, not as log theta: ``posterior`` reports them as
        they are (``mean_constant`` with ``sample_offset``), not exp(psi)."""
        return ("mean_constant",) if self.sample_offset else ()

    def kernel_params(self, psi) -> np.ndarray:
        """The kernel's log-parameters of psi (..., n_params): psi without m."""
        return np.asarray(psi, dtype=np.float64)[..., : self.kernel.n_params]

    def latent_offset(self, psi) -> np.ndarray | float:
        """m of psi (..., n_params) with ``sample_offset`` (its last coordinate), else 0: f + m is what the
        likelihood sees (M&A Sec. 5)."""
        psi = np.asarray(psi, dtype=np.float64)
        return psi[..., -1] if self.sample_offset else np.zeros(psi.shape[:-1])

    def initial_psi(self) -> np.ndarray:
        """The chains' start before ``init="kernel"``'s noise: the kernel's ``initial_psi(X)``, then, with
        ``sample_offset``, m = the centre of ``likelihood.offset_moments(y)`` (Poisson: the log of the mean
        count per unit exposure)."""
        psi = np.asarray(self.kernel.initial_psi(self.X), dtype=np.float64)
        return np.append(psi, self.offset_centre) if self.sample_offset else psi

    def _attrs(self) -> dict:
        out = {**super()._attrs(), "likelihood": self.likelihood.name, "likelihood_object": repr(self.likelihood)}
        if self.sample_offset:
            out["sample_offset"] = 1
        return out
