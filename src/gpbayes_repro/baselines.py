"""Non-GP baseline classifiers for the comparison of Filippone & Girolami (2014), Sec. 5.2.

The probabilistic SVM.  F&G "used the SVM code in the e1071 R package, which
provides a front-end to the LIBSVM library where non-linear SVMs employ a
squared exponential isotropic kernel", with hyperparameters "optimized by
minimizing the cross-validation error across a set of candidate values"
(Sec. 6).  scikit-learn's ``SVC`` wraps the same LIBSVM.  e1071's
``svm(probability = TRUE)`` gives LIBSVM's probabilities: Platt's sigmoid
fitted to decision values obtained by an internal 5-fold cross-validation,
then applied to the SVM trained on all the data (Lin, Lin & Weng 2007).
``SVC(probability=True)`` did the same but is deprecated from scikit-learn
1.9; the equivalent used here is
``CalibratedClassifierCV(SVC(...), method="sigmoid", ensemble=False,
cv=StratifiedKFold(5))`` -- cross-validated decision values, Platt's
sigmoid (with his regularised targets), and the SVM refitted on all data.

Choices (F&G do not give their grid):

* kernel exp(-gamma |x - x'|^2), isotropic; it is the ``fg`` kernel with
  gamma = 1 / (2 tau^2) and the amplitude absorbed into C;
* grid: the LIBSVM guide's (Hsu, Chang & Lin), C = 2^-5, 2^-3, ..., 2^15 and
  gamma = 2^-15, 2^-13, ..., 2^3, for standardised covariates
  (``gpbayes_repro.data`` standardises them);
* selection by stratified k-fold cross-validated accuracy (``GridSearchCV``
  with ``StratifiedKFold(shuffle=True)``; k = min(5, size of the smaller
  class)), ties broken by the first grid point, i.e. the smallest C and then
  the smallest gamma (GridSearchCV's order);
* the grid search fits plain SVMs (selection is by the accuracy of
  sign(decision value), which the probability model does not enter), then
  the calibrated SVM is fitted once with the chosen (C, gamma);
* all randomness (the shuffling of the tuning folds and of the Platt-scaling
  folds) comes from one integer drawn from the given generator, so a fixed
  generator state gives identical probabilities.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import sklearn
from sklearn.calibration import CalibratedClassifierCV
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC

__all__ = ["SVMResult", "probabilistic_svm", "DEFAULT_C_GRID", "DEFAULT_GAMMA_GRID"]

DEFAULT_C_GRID = 2.0 ** np.arange(-5, 16, 2)
DEFAULT_GAMMA_GRID = 2.0 ** np.arange(-15, 4, 2)


@dataclasses.dataclass(frozen=True)
class SVMResult:
    """p(y_* = +1) and the tuning outcome."""

    p: np.ndarray
    C: float
    gamma: float
    cv_accuracy: float
    n_folds: int
    random_state: int


def probabilistic_svm(
    X,
    y,
    X_test,
    rng: np.random.Generator | int,
    *,
    C_grid=DEFAULT_C_GRID,
    gamma_grid=DEFAULT_GAMMA_GRID,
    n_folds: int = 5,
    return_result: bool = False,
):
    """LIBSVM probabilistic SVM with (C, gamma) tuned by cross-validation.

    Parameters
    ----------
    X, y : training inputs (n, d) and labels in {-1, +1}.
    X_test : test inputs (m, d).
    rng : generator (or an int seed for ``np.random.default_rng``); one
        integer drawn from it seeds the fold shuffling of the tuning and of
        the Platt-scaling cross-validation.
    C_grid, gamma_grid : candidate values (log grids by default).
    n_folds : cross-validation folds for tuning and for Platt scaling
        (reduced to the size of the smaller class).
    return_result : return an ``SVMResult`` instead of the probabilities.

    Returns
    -------
    p : (m,) probabilities of the class +1 (or ``SVMResult``).
    """
    X = np.asarray(X, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    X_test = np.asarray(X_test, dtype=np.float64).reshape(-1, X.shape[1])
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
    if bad.size:
        raise ValueError(f"labels must be in {{-1, +1}}; found {bad[:10].tolist()}")
    smaller = int(min(np.sum(y == 1), np.sum(y == -1)))
    if smaller < 2:
        raise ValueError("probabilistic_svm needs at least 2 training points of each class")
    k = int(min(n_folds, smaller))
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    seed = int(rng.integers(2**31 - 1))

    # scikit-learn re-validates the (finite, checked above) data and every estimator's parameters in
    # each of the grid's 5 x 110 fits and scorings; skipping those checks changes no number (they only
    # raise on bad input) and saves about a third of the search's CPU at these sizes
    with sklearn.config_context(assume_finite=bool(np.isfinite(X).all() and np.isfinite(X_test).all()),
                                skip_parameter_validation=True):
        return _probabilistic_svm(X, y, X_test, k, seed, C_grid, gamma_grid, return_result)


def _accuracy(estimator, X, y) -> float:
    """The fraction of correct predictions: scikit-learn's ``"accuracy"`` scorer (the mean of the 0/1
    array y == y_pred, a count over the fold's size either way, so the same float) without its
    per-call target-type checks (a third of the grid search's CPU at n = 10-50)."""
    return float(np.mean(estimator.predict(X) == y))


def _probabilistic_svm(X, y, X_test, k, seed, C_grid, gamma_grid, return_result):
    folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    search = GridSearchCV(
        SVC(kernel="rbf"),
        {"C": np.asarray(C_grid, dtype=float), "gamma": np.asarray(gamma_grid, dtype=float)},
        scoring=_accuracy,
        cv=folds,
        refit=False,
        n_jobs=None,
    )
    search.fit(X, y)
    C, gamma = float(search.best_params_["C"]), float(search.best_params_["gamma"])
    # Platt scaling on cross-validated decision values, SVM refitted on all data
    svm = CalibratedClassifierCV(
        SVC(kernel="rbf", C=C, gamma=gamma),
        method="sigmoid",
        ensemble=False,
        cv=StratifiedKFold(n_splits=k, shuffle=True, random_state=seed + 1),
    )
    svm.fit(X, y)
    col = int(np.flatnonzero(svm.classes_ == 1.0)[0])
    p = svm.predict_proba(X_test)[:, col]
    if not return_result:
        return p
    return SVMResult(p=p, C=C, gamma=gamma, cv_accuracy=float(search.best_score_),
                     n_folds=k, random_state=seed)
