"""scikit-learn estimators over gpbayes's samplers: ``BayesianGPClassifier`` and ``BayesianGPRegressor``.

::

    import gpbayes as gb
    from gpbayes.sklearn import BayesianGPClassifier
    clf = BayesianGPClassifier(method=gb.PseudoMarginal(approximation="ep"), draws=1000, chains=4, seed=1)
    clf.fit(X, y).predict_proba(X_new)       # posterior predictive, averaged over draws
    az.summary(clf.idata_)                    # the posterior of the hyperparameters, natural scale
    cross_val_score(clf, X, y)                # works in Pipeline, GridSearchCV, clone

``fit`` builds the library's model of the data (``gpbayes.GPClassifier`` /
``gpbayes.GPRegressor``, kept as ``model_``) and samples its hyperparameters with
``gpbayes.sample`` (the posterior as ``idata_``, an ``arviz.InferenceData``, on ArviZ 1.x an ``xarray.DataTree``);
``predict`` / ``predict_proba`` are ``gpbayes.predict``, the posterior predictive
averaged over up to ``predict_draws`` draws (F&G eq. 8 for the classifier; the
mixture of exact GP predictives, R&W eqs. 2.25-2.26, for the regressor).

Why these classes do not inherit from scikit-learn.  The library never imports
scikit-learn (``tests/test_boundary.py``): scikit-learn is a dependency of the
reproduction (its SVM baseline), not of the samplers.  scikit-learn's estimator
API is a protocol, not a base class -- ``get_params``/``set_params`` from the
constructor's signature, parameters stored unchanged by ``__init__``, fitted
attributes ending in ``_``, ``fit`` returning ``self`` -- so the estimators implement
it here with numpy alone, and scikit-learn's own ``clone``, ``Pipeline``,
``cross_val_score``, ``GridSearchCV`` and ``check_estimator`` accept them
(``tests/test_sklearn.py`` runs the checks).  The one method that needs
scikit-learn's classes is ``__sklearn_tags__``, which returns its ``Tags``
dataclass; it imports them inside the method, and only scikit-learn calls that
method, so scikit-learn is already loaded whenever the import runs.  That is the
single exception ``tests/test_boundary.py`` allows: importing this module,
fitting and predicting never load scikit-learn (tested).  Older scikit-learn
(< 1.6) reads ``_estimator_type`` and ``_more_tags`` instead; both are here too.
"""

from __future__ import annotations

import inspect
import sys
import warnings

import numpy as np
from scipy.sparse import issparse

__all__ = ["BayesianGPClassifier", "BayesianGPRegressor", "NotFittedError", "DataConversionWarning"]


class NotFittedError(ValueError, AttributeError):
    """A method that needs a fitted estimator was called before ``fit``.

    Subclasses ``ValueError`` and ``AttributeError``, as scikit-learn's own
    ``NotFittedError`` does, so code that catches either keeps working.
    """


def _not_fitted_error() -> type:
    """``NotFittedError``, also an instance of scikit-learn's when scikit-learn is loaded (its checks catch that)."""
    if "sklearn" not in sys.modules:  # never load scikit-learn from here
        return NotFittedError
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    return type("NotFittedError", (NotFittedError, SklearnNotFittedError), {"__module__": __name__})


class DataConversionWarning(UserWarning):
    """``y`` was given as a column vector (n, 1) and has been flattened to (n,).

    Named as scikit-learn's warning for the same conversion, which its
    estimator checks look for by name.
    """


class _BayesianGP:
    """The scikit-learn protocol shared by both estimators (parameters, input checks, fitted state)."""

    _default_method = ""

    # --- parameters: scikit-learn's get_params / set_params protocol -------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's parameters and their current values (``deep`` is accepted; there are no sub-estimators)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters by name; an unknown name is refused, naming the valid ones."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                                 f"Valid parameters are: {valid!r}.")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if defaults.get(k, object()) is not v
                   and not (isinstance(v, (int, float, str)) and v == defaults.get(k))]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "idata_")

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"requires_y": True, "binary_only": self._estimator_type == "classifier"}

    def __sklearn_tags__(self):
        """scikit-learn >= 1.6 estimator tags.  Called by scikit-learn only, so it is already imported."""
        from sklearn.utils import ClassifierTags, RegressorTags, Tags, TargetTags

        return Tags(estimator_type=self._estimator_type, target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(multi_class=False)
                    if self._estimator_type == "classifier" else None,
                    regressor_tags=RegressorTags() if self._estimator_type == "regressor" else None)

    # --- input checks ---------------------------------------------------------------------------
    def _check_X(self, X, *, reset: bool) -> np.ndarray:
        if X is None:
            raise ValueError(f"{type(self).__name__} needs X, an array of shape (n_samples, n_features); got None")
        if issparse(X):
            raise TypeError(f"Sparse data is not supported by {type(self).__name__}: a GP needs dense inputs "
                            "(X.toarray())")
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ValueError("Complex data not supported")
        X = np.asarray(X, dtype=np.float64)  # a non-numeric entry raises numpy's TypeError / ValueError
        if X.ndim != 2:
            raise ValueError(f"Expected a 2-D array X of shape (n_samples, n_features), got shape {X.shape}. "
                             "Reshape your data: X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a "
                             "single sample")
        if X.shape[1] == 0:
            raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
        if X.shape[0] == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
        if not np.all(np.isfinite(X)):
            kind = "NaN" if np.isnan(X).any() else "inf"
            raise ValueError(f"Input X contains {kind}: {type(self).__name__} needs finite inputs")
        if reset:
            self.n_features_in_ = X.shape[1]
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        return X

    def _check_y(self, y, n: int) -> np.ndarray:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape "
                          "of y to (n_samples,), for example using ravel().", DataConversionWarning, stacklevel=3)
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y should be a 1d array of length n_samples ({n}), got shape {y.shape}")
        if y.shape[0] != n:
            raise ValueError(f"X and y have inconsistent numbers of samples: {n} and {y.shape[0]}")
        if n < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples; got n_samples = 1")
        return y

    def _check_options(self) -> None:
        """The estimator's own options, checked when used (scikit-learn's convention: ``__init__`` stores them
        unchanged): ``ard`` / ``standardize`` bools (``"no"`` would read as True), ``predict_draws`` an
        integer >= 1."""
        owner = type(self).__name__
        for name in ("ard", "standardize"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{owner}: {name} must be True or False, got {value!r} ({type(value).__name__}); "
                                f"pass {name}=True or {name}=False")
        value = self.predict_draws
        whole = isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer()
        ok = (isinstance(value, (int, np.integer)) or whole) and not isinstance(value, (bool, np.bool_))
        if not ok or int(value) < 1:
            raise ValueError(f"{owner}: predict_draws must be an integer >= 1 (the posterior draws predict "
                             f"averages over; default 200), got {value!r}")

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            raise _not_fitted_error()(f"This {type(self).__name__} instance is not fitted yet: call fit(X, y) first.")

    def _sample(self, model):
        import gpbayes as gb

        options = dict(self.options or {})
        return gb.sample(model, method=self.method, chains=self.chains, draws=self.draws, n_warmup=self.n_warmup,
                         seed=self.seed, progress=self.progress, **options)

    def _predict(self, X):
        import gpbayes as gb

        self._check_fitted()
        self._check_options()
        X = self._check_X(X, reset=False)
        return gb.predict(self.model_, self.idata_, X, max_draws=int(self.predict_draws), seed=self.seed)


class BayesianGPClassifier(_BayesianGP):
    """Binary Gaussian-process classification with the hyperparameters sampled, as a scikit-learn estimator.

    The model is ``gpbayes.GPClassifier`` (probit likelihood, F&G eq. 3; ARD
    squared exponential, F&G eq. 5; F&G Sec. 4.4 priors); the default method is
    Filippone & Girolami's pseudo-marginal MH (Alg. 1, the importance estimate of
    eq. 25), and ``predict_proba`` is eq. 8 averaged over posterior draws.

    Parameters
    ----------
    method : method object or str, default "pseudo-marginal"
        A method object of ``gpbayes.methods`` that applies to
        ``GPClassifier`` (``gb.PseudoMarginal(approximation="ep", n_imp=64)``,
        ``gb.PMAMIS()``, ``gb.LatentGibbs()``, ``gb.SliceSampler()``, ``gb.EPML()``;
        its fields are the options, with their defaults) or a string alias of one,
        any of ``gpbayes.methods(GPClassifier)``: "pseudo-marginal", "pm-amis",
        "aa", "surr", "slice-<representation>", "ep-ml".
    draws, n_warmup, chains : int, default 1000, 500, 4
        Kept draws per chain, warm-up iterations per chain (``gpbayes.sample``'s
        ``n_warmup``: tuning, then discarded), chains.
    seed : int, default 0
        Chain c uses the c-th child of ``SeedSequence(seed)``; the same seed gives
        the same fit bit for bit on one machine.
    options : dict or None, default None
        With a string ``method``: the fields of its method object, passed to
        ``gpbayes.sample`` (e.g. ``{"approximation": "ep", "n_imp": 64}``); with a
        method object, leave it None and set its fields instead.
    ard : bool, default True
        One lengthscale per input (False: one shared lengthscale).
    standardize : bool, default True
        Standardise the inputs (constant columns are refused).
    predict_draws : int, default 200
        Posterior draws averaged by ``predict_proba``.
    progress : bool, default False
        Show a progress bar while sampling.
    units : {"data", "standardized"}, default "data"
        The scale of the posterior in ``idata_``: X's units for the lengthscales ("data", the models'
        default) or the standardised scale ("standardized"); passed to the model (``gpbayes.units``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels, sorted; ``classes_[1]`` is the positive class.
    n_features_in_ : int
    model_ : gpbayes.GPClassifier
    idata_ : arviz.InferenceData or xarray.DataTree (ArviZ 1.x)
        The posterior of the hyperparameters (``az.summary(clf.idata_)``).

    Only two classes: for more, ``gpbayes.SparseGPClassifier`` (robust-max) or
    scikit-learn's ``OneVsRestClassifier`` around this estimator.
    """

    _estimator_type = "classifier"

    def __init__(self, method="pseudo-marginal", *, draws: int = 1000, n_warmup: int = 500, chains: int = 4,
                 seed: int = 0, options: dict | None = None, ard: bool = True, standardize: bool = True,
                 predict_draws: int = 200, progress: bool = False, units: str = "data"):
        self.method = method
        self.draws = draws
        self.n_warmup = n_warmup
        self.chains = chains
        self.seed = seed
        self.options = options
        self.ard = ard
        self.standardize = standardize
        self.predict_draws = predict_draws
        self.progress = progress
        self.units = units

    def fit(self, X, y):
        """Sample the posterior of the hyperparameters given training inputs X (n, d) and two-valued labels y."""
        import gpbayes as gb

        self._check_options()
        X = self._check_X(X, reset=True)
        y = self._check_y(y, X.shape[0])
        if y.dtype.kind == "f" and (not np.all(np.isfinite(y)) or np.any(y != np.round(y))):
            raise ValueError("Unknown label type: continuous. BayesianGPClassifier needs class labels "
                             "(two distinct values); for a real-valued target use BayesianGPRegressor")
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"y has one class ({classes[0]!r}): classification needs two classes")
        if len(classes) > 2:
            raise ValueError(f"Only binary classification is supported. y has {len(classes)} classes: for more, use "
                             "gpbayes.SparseGPClassifier (robust-max) or sklearn's OneVsRestClassifier")
        self.classes_ = classes
        model = gb.GPClassifier(X, y == classes[1], ard=self.ard, standardize=self.standardize, units=self.units)
        self.idata_ = self._sample(model)
        self.model_ = model
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Posterior predictive class probabilities, shape (n, 2), columns in the order of ``classes_``."""
        p = self._predict(X)["probability"].values
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The more probable class under the posterior predictive (probability > 1/2)."""
        positive = self.predict_proba(X)[:, 1] > 0.5
        return self.classes_[positive.astype(int)]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``predict(X)`` against y (weighted by ``sample_weight`` if given)."""
        return float(np.average(self.predict(X) == np.asarray(y).ravel(), weights=sample_weight))


class BayesianGPRegressor(_BayesianGP):
    """Gaussian-process regression with the hyperparameters sampled, as a scikit-learn estimator.

    The model is ``gpbayes.GPRegressor`` (exact marginal, R&W Alg. 2.1; ARD squared
    exponential; F&G Sec. 4.4 priors on the standardised target); the default
    method is NUTS (Hoffman & Gelman 2014, Alg. 6) on the exact posterior.
    ``predict`` is the mean of the posterior predictive, a mixture over draws of
    the exact GP predictives (R&W eqs. 2.25-2.26), on the scale of y.

    Parameters
    ----------
    method : method object or str, default "nuts"
        A method object that applies to ``GPRegressor`` (``gb.NUTS()``,
        ``gb.HMC()``, ``gb.RandomWalkMH()``, ``gb.Slice()``, ``gb.AMIS()``,
        ``gb.MAMIS()``, ``gb.AMISToMAMIS()``, ``gb.TypeIIML()``) or a string alias,
        any of ``gpbayes.methods(GPRegressor)``: "nuts", "hmc", "rwmh", "slice",
        "amis", "mamis", "amis-mamis", "type2-ml".
    draws, n_warmup, chains, seed, options, ard, standardize, predict_draws, progress, units
        As for :class:`BayesianGPClassifier` (with ``units="data"`` a variance is in y's units squared).

    Attributes
    ----------
    n_features_in_ : int
    model_ : gpbayes.GPRegressor
    idata_ : arviz.InferenceData or xarray.DataTree (ArviZ 1.x)
    """

    _estimator_type = "regressor"

    def __init__(self, method="nuts", *, draws: int = 1000, n_warmup: int = 500, chains: int = 4,
                 seed: int = 0, options: dict | None = None, ard: bool = True, standardize: bool = True,
                 predict_draws: int = 200, progress: bool = False, units: str = "data"):
        self.method = method
        self.draws = draws
        self.n_warmup = n_warmup
        self.chains = chains
        self.seed = seed
        self.options = options
        self.ard = ard
        self.standardize = standardize
        self.predict_draws = predict_draws
        self.progress = progress
        self.units = units

    def fit(self, X, y):
        """Sample the posterior of the hyperparameters given training inputs X (n, d) and real targets y."""
        import gpbayes as gb

        self._check_options()
        X = self._check_X(X, reset=True)
        y = self._check_y(y, X.shape[0])
        if y.dtype.kind in "USc" or (y.dtype.kind == "O" and any(isinstance(v, (str, bytes, complex)) for v in y)):
            raise ValueError(f"BayesianGPRegressor: y must be real numbers, got {y.dtype} values (first: {y[0]!r}); "
                             "for class labels use BayesianGPClassifier; numbers written as text: convert them "
                             "first, np.asarray(y, dtype=float)")
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or inf: BayesianGPRegressor needs finite targets")
        model = gb.GPRegressor(X, y, ard=self.ard, standardize=self.standardize, units=self.units)
        self.idata_ = self._sample(model)
        self.model_ = model
        return self

    def predict(self, X, return_std: bool = False):
        """Posterior predictive mean at X; with ``return_std`` also the posterior standard deviation of f(x)
        (the latent function, noise excluded; over draws of the hyperparameters and of f)."""
        pred = self._predict(X)
        mean = pred["mean"].values
        return (mean, pred["sd_f"].values) if return_std else mean

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of ``predict(X)`` against y (weighted by ``sample_weight``)."""
        y = np.asarray(y, dtype=np.float64).ravel()
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        resid = np.sum(w * (y - self.predict(X)) ** 2)
        total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
        return float(1.0 - resid / total) if total > 0 else (1.0 if resid == 0 else 0.0)
