"""gpbayes.sklearn: scikit-learn's estimator checks, its meta-estimators, and agreement with the library API."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn", minversion="1.6")  # parametrize_with_checks(expected_failed_checks=...)
pytest.importorskip("arviz")

from sklearn.base import clone, is_classifier, is_regressor  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import gpbayes as gb  # noqa: E402
from gpbayes.sklearn import BayesianGPClassifier, BayesianGPRegressor  # noqa: E402

# Tiny runs: the checks test the protocol (shapes, errors, cloning, pickling, idempotence), plus
# scikit-learn's own accuracy bars (check_classifiers_train: > 0.83 on two blobs; check_regressors_train:
# R^2 > 0.5), which a 10-draw chain passes because the blobs and the linear target are easy.
TINY_CLASSIFIER = BayesianGPClassifier(gb.PseudoMarginal(n_imp=4), draws=10, n_warmup=10, chains=1)
TINY_REGRESSOR = BayesianGPRegressor(draws=10, n_warmup=10, chains=1)

#: checks scikit-learn runs that fail by design, with the reason (none today: every check that applies passes).
#: check_array_api_input is skipped by scikit-learn itself unless SCIPY_ARRAY_API=1: gpbayes computes in numpy.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@parametrize_with_checks([TINY_CLASSIFIER, TINY_REGRESSOR],
                         expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not inherit from `sklearn.base.BaseEstimator`")
        check(estimator)


def _blobs(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, "yes", "no")
    return X, y


def test_classifier_fit_is_gb_sample_and_predict_proba_is_gb_predict():
    """The estimator adds no numerics: its posterior is gb.sample's bit for bit, its probabilities gb.predict's."""
    X, y = _blobs()
    clf = BayesianGPClassifier(draws=20, n_warmup=20, chains=2, seed=3, options={"n_imp": 4}).fit(X, y)
    assert is_classifier(clf) and list(clf.classes_) == ["no", "yes"] and clf.n_features_in_ == 2
    model = gb.GPClassifier(X, y == "yes")
    idata = gb.sample(model, method=gb.PseudoMarginal(n_imp=4), chains=2, draws=20, n_warmup=20, seed=3,
                      progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(clf.idata_).values, gb.api.psi_draws(idata).values)
    for name in idata.posterior.data_vars:  # tau_0, tau_1, sigma on the natural scale
        np.testing.assert_array_equal(clf.idata_.posterior[name].values, idata.posterior[name].values)
    twin = BayesianGPClassifier(gb.PseudoMarginal(n_imp=4), draws=20, n_warmup=20, chains=2, seed=3).fit(X, y)
    np.testing.assert_array_equal(gb.api.psi_draws(twin.idata_).values, gb.api.psi_draws(idata).values)
    p = gb.predict(model, idata, X[:7], seed=3)["probability"].values
    proba = clf.predict_proba(X[:7])
    np.testing.assert_array_equal(proba[:, 1], p)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X[:7]), np.where(p > 0.5, "yes", "no"))
    assert clf.score(X, y) == np.mean(clf.predict(X) == y)


def test_regressor_predict_with_std_is_gb_predict():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(30, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=30)
    reg = BayesianGPRegressor(method="slice", draws=30, n_warmup=20, chains=2, seed=2).fit(X, y)
    assert is_regressor(reg) and reg.n_features_in_ == 1
    mean, sd = reg.predict(X[:5], return_std=True)
    pred = gb.predict(reg.model_, reg.idata_, X[:5], seed=2)
    np.testing.assert_array_equal(mean, pred["mean"].values)
    np.testing.assert_array_equal(sd, pred["sd_f"].values)
    np.testing.assert_array_equal(reg.predict(X[:5]), mean)
    resid = np.sum((y - reg.predict(X)) ** 2)
    assert reg.score(X, y) == pytest.approx(1 - resid / np.sum((y - y.mean()) ** 2))
    assert reg.score(X, y) > 0.9  # a smooth function, 30 points, noise 0.1


def test_cross_val_score_pipeline_grid_search_and_clone():
    X, y = _blobs(n=45)
    clf = BayesianGPClassifier(method="aa", draws=10, n_warmup=10, chains=1)
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)  # the classes are separated up to noise 0.3
    pipe = make_pipeline(StandardScaler(), clf).fit(X, y)
    assert pipe.score(X, y) > 0.6
    grid = GridSearchCV(clf, {"options": [{"keep_latent": False}], "draws": [5, 10]}, cv=2).fit(X, y)
    assert grid.best_params_["draws"] in (5, 10) and hasattr(grid.best_estimator_, "idata_")
    twin = clone(clf.set_params(seed=7))
    assert twin.get_params() == clf.get_params() and not hasattr(twin, "idata_")


def test_bad_arguments_are_refused_by_name():
    X, y = _blobs()
    with pytest.raises(ValueError, match="Invalid parameter 'n_draws'.*'draws'"):
        BayesianGPClassifier().set_params(n_draws=3)
    with pytest.raises(ValueError, match="choose one of"):
        BayesianGPClassifier(method="nuts", draws=5, n_warmup=5, chains=1).fit(X, y)
    with pytest.raises(ValueError, match="does not apply to GPClassifier"):
        BayesianGPClassifier(method=gb.NUTS(), draws=5, n_warmup=5, chains=1).fit(X, y)
    with pytest.raises(ValueError, match="set them as its fields"):
        BayesianGPClassifier(method=gb.PseudoMarginal(), options={"n_imp": 4}, draws=5, n_warmup=5).fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        BayesianGPClassifier().fit(X, np.arange(40) % 3)
    with pytest.raises(ValueError, match="not fitted"):
        BayesianGPRegressor().predict(X)


def test_the_estimators_never_load_scikit_learn():
    """gpbayes never imports scikit-learn (tests/test_boundary.py): fitting, predicting and the errors of an
    unfitted estimator run with scikit-learn absent from sys.modules."""
    code = (
        "import sys, numpy as np\n"
        "from gpbayes.sklearn import BayesianGPClassifier, NotFittedError\n"
        "X = np.random.default_rng(0).normal(size=(20, 2)); y = X[:, 0] > 0\n"
        "try:\n    BayesianGPClassifier().predict(X)\nexcept NotFittedError:\n    pass\n"
        "clf = BayesianGPClassifier(draws=5, n_warmup=5, chains=1, options={'n_imp': 2}).fit(X, y)\n"
        "clf.predict(X); repr(clf); clf.get_params()\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'sklearn'], 'scikit-learn was loaded'\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
