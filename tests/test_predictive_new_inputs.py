"""``gb.sample_posterior_predictive(model, idata, X_new=...)``: draws of y at new inputs (issue 33, item 4).

At a fixed posterior draw (an InferenceData holding one psi, and f, repeated) the draws are checked
against closed forms within Monte Carlo error:

* GPRegressor: y_* ~ N(K_*^T C^-1 y, K_** - K_*^T C^-1 K_* + lambda I), C = K + lambda I
  (R&W eqs. 2.23-2.24 plus the noise), jointly over the new points, on the original scale of y;
* LatentGP with a Gaussian likelihood: f_* | f ~ N(K_*^T K^-1 f, K_** - K_*^T K^-1 K_*) plus the noise;
* GPClassifier: P(y_* = +1) = E[Phi(f_*)] = Phi(m / sqrt(1 + v)) (R&W eq. 3.80);
* PoissonGP: E[y_*] = exp(m + offset + v / 2) (the log-normal mean), unit exposure.

And the ArviZ layout: ``posterior_predictive`` over ``(chain, draw, point)``, or the out-of-sample
groups ``predictions`` / ``predictions_constant_data`` with ``predictions=True``; a result without the
latent draws a model needs is refused, naming the methods that keep them.  (SparseGPClassifier and
GPLVMRegressor: ``test_predictive_sparse_gplvm.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.stats import norm

import gpbayes as gb
from gpbayes import likelihoods

az = pytest.importorskip("arviz")

try:
    SCHEMA = set(az.data.inference_data.SUPPORTED_GROUPS_ALL)
except AttributeError:  # ArviZ 1.x (results are DataTrees): the same schema's groups, as ArviZ 0.23 lists them
    SCHEMA = {f"{w}{g}" for w in ("", "warmup_") for g in ("posterior", "posterior_predictive", "predictions",
                                                           "log_likelihood", "log_prior", "sample_stats")} | {
        "prior", "prior_predictive", "sample_stats_prior", "observed_data", "constant_data",
        "predictions_constant_data", "unconstrained_posterior", "unconstrained_prior"}
N_DRAWS = 4000


def _idata_at(model, psi, n_draws=N_DRAWS, f=None):
    """An InferenceData holding the one draw psi (and f) repeated: the predictive is then a closed form."""
    names = model.hyperparameter_labels  # one scalar variable per coordinate of psi, in its order
    unc = xr.Dataset({n: (("chain", "draw"), np.full((1, n_draws), psi[j])) for j, n in enumerate(names)})
    post = xr.Dataset({n: np.exp(unc[n]) for n in names})
    if f is not None:
        post["f"] = (("chain", "draw", "obs"), np.broadcast_to(f, (1, n_draws, f.size)).copy())
    return gb.io.make_idata({"posterior": post, "unconstrained_posterior": unc})


def _x(n, seed, d=2):
    return np.random.default_rng(seed).uniform(-2, 2, size=(n, d))


def _within_mc_error(draws, mean, var):
    """Sample mean and variance of independent draws against (mean, var) within 4.5 standard errors."""
    n = draws.shape[0]
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * np.sqrt(var / n)), (draws.mean(axis=0), mean)
    assert np.all(np.abs(draws.var(axis=0) - var) < 4.5 * var * np.sqrt(2.0 / (n - 1))), (draws.var(axis=0), var)


def test_regression_draws_at_new_inputs_have_the_moments_of_rw_2_23_2_24_plus_noise():
    X = _x(15, 0)
    y = np.sin(2 * X[:, 0]) + 0.2 * np.random.default_rng(1).standard_normal(15) + 3.0
    m = gb.GPRegressor(X, y)
    psi = np.array([-0.3, 0.2, 0.1, np.log(0.05)])
    Xn = _x(4, 2)
    idata = gb.sample_posterior_predictive(m, _idata_at(m, psi), X_new=Xn, seed=3)
    d = idata.posterior_predictive["y"]
    assert d.dims == ("chain", "draw", "point") and d.shape == (1, N_DRAWS, 4)
    # R&W eqs. 2.23-2.24 on the standardised scale, written out here
    Xs = m.transform(Xn)
    K, Ks, Kss = m.kernel(psi[:-1], m.X), m.kernel(psi[:-1], m.X, Xs), m.kernel(psi[:-1], Xs)
    C = K + 0.05 * np.eye(15)
    mean = (Ks.T @ np.linalg.solve(C, m.y)) * m.y_scale + m.y_shift
    cov = (Kss - Ks.T @ np.linalg.solve(C, Ks) + 0.05 * np.eye(4)) * m.y_scale**2
    _within_mc_error(d.values[0], mean, np.diag(cov))
    # jointly drawn: the covariance between the new points too
    np.testing.assert_allclose(np.cov(d.values[0].T), cov, atol=6 * np.sqrt(2.0 / N_DRAWS) * np.diag(cov).max())
    # the same moments as gb.predict's Gaussian predictive at that draw
    out = gb.predict(m, _idata_at(m, psi, 1), Xn)
    np.testing.assert_allclose(out["y_mean"].values, mean, rtol=1e-10)
    np.testing.assert_allclose(out["y_variance"].values, np.diag(cov), rtol=1e-8)


def test_latent_gp_draws_are_the_gp_conditional_of_f_plus_the_likelihood():
    X = _x(10, 4, d=1)
    m = gb.LatentGP(X, np.sin(X[:, 0]), likelihood=likelihoods.Gaussian(0.2), ard=False)
    psi = np.array([np.log(0.7), np.log(1.3)])
    f = np.sin(m.X[:, 0]) * 0.9
    Xn = np.array([[-1.0], [0.3], [2.5]])
    idata = gb.sample_posterior_predictive(m, _idata_at(m, psi, f=f), X_new=Xn, seed=5)
    d = idata.posterior_predictive["y"].values[0]
    Xs = m.transform(Xn)
    K, Ks, Kss = m.kernel(psi, m.X), m.kernel(psi, m.X, Xs), m.kernel(psi, Xs)
    mean = Ks.T @ np.linalg.solve(K, f)
    var = np.diag(Kss - Ks.T @ np.linalg.solve(K, Ks)) + 0.2
    _within_mc_error(d, mean, var)
    # in-sample replicates of a LatentGP: y_rep = f + noise from the likelihood's sample_targets
    rep = gb.sample_posterior_predictive(m, _idata_at(m, psi, f=f), seed=6, extend=False)["y"].values[0]
    _within_mc_error(rep, f, np.full(10, 0.2))


def test_classifier_and_cox_draws_at_new_inputs():
    X = _x(12, 6)
    clf = gb.GPClassifier(X, np.sin(2 * X[:, 0]) > 0)
    psi = np.array([0.0, 0.3, 0.5])
    f = np.where(clf.y > 0, 1.0, -1.0) * 0.8
    Xn = _x(3, 7)
    Xs = clf.transform(Xn)
    K, Ks, Kss = clf.kernel(psi, clf.X), clf.kernel(psi, clf.X, Xs), clf.kernel(psi, Xs)
    mean = Ks.T @ np.linalg.solve(K, f)
    var = np.diag(Kss - Ks.T @ np.linalg.solve(K, Ks))
    d = gb.sample_posterior_predictive(clf, _idata_at(clf, psi, f=f), X_new=Xn, seed=8).posterior_predictive["y"]
    assert set(np.unique(d.values)) <= {-1.0, 1.0}
    p = norm.cdf(mean / np.sqrt(1.0 + var))  # R&W eq. 3.80
    freq = (d.values[0] > 0).mean(axis=0)
    assert np.all(np.abs(freq - p) < 4.5 * np.sqrt(p * (1 - p) / N_DRAWS)), (freq, p)

    counts = np.random.default_rng(9).poisson(3.0, size=12)
    cox = gb.PoissonGP(X[:, :1], counts)
    psi = np.array([0.2, -0.5])
    f = 0.3 * np.sin(cox.X[:, 0])
    Xs = cox.transform(Xn[:, :1])
    K, Ks, Kss = cox.kernel(psi, cox.X), cox.kernel(psi, cox.X, Xs), cox.kernel(psi, Xs)
    mean = Ks.T @ np.linalg.solve(K, f)
    var = np.diag(Kss - Ks.T @ np.linalg.solve(K, Ks))
    d = gb.sample_posterior_predictive(cox, _idata_at(cox, psi, f=f), X_new=Xn[:, :1], seed=10)
    y = d.posterior_predictive["y"].values[0]
    rate = np.exp(mean + cox.offset + var / 2)  # E[y_*] of the Poisson-log-normal
    var_y = rate + (np.exp(var) - 1) * np.exp(2 * (mean + cox.offset) + var)
    assert np.all(np.abs(y.mean(axis=0) - rate) < 4.5 * np.sqrt(var_y / N_DRAWS))


def test_the_arviz_layout_and_the_models_without_draws():
    X = _x(12, 11)
    y = np.sin(2 * X[:, 0])
    m = gb.GPRegressor(X, y)
    idata = gb.sample(m, method="slice", chains=2, draws=6, n_warmup=3, seed=1, progress=False,
                      posterior_predictive=True)
    assert idata.posterior_predictive["y"].dims == ("chain", "draw", "obs")
    Xn = _x(5, 12)
    gb.sample_posterior_predictive(m, idata, X_new=Xn, seed=2, predictions=True)
    assert {"predictions", "predictions_constant_data", "posterior_predictive"} <= set(gb.io.group_names(idata))
    assert set(gb.io.group_names(idata)) <= SCHEMA
    assert idata.predictions["y"].dims == ("chain", "draw", "point") and idata.predictions["y"].shape == (2, 6, 5)
    np.testing.assert_allclose(idata.predictions_constant_data["X"].values, m.transform(Xn))
    assert idata.posterior_predictive["y"].dims == ("chain", "draw", "obs")  # the replicates stay
    same = gb.sample_posterior_predictive(m, idata, X_new=Xn, seed=2, extend=False)
    np.testing.assert_array_equal(same["y"].values, idata.predictions["y"].values)  # seeded: repeatable
    for g in ("predictions", "posterior_predictive"):
        assert all(not d.startswith("y_dim") for d in idata[g].dims)
    az.summary(gb.io.group(idata, "predictions"))  # ArviZ reads the group
    with pytest.raises(ValueError, match="give X_new"):
        gb.sample_posterior_predictive(m, idata, predictions=True)

    clf = gb.GPClassifier(X, y > 0, ard=False)
    pm = gb.sample(clf, method="pseudo-marginal", chains=1, draws=3, n_warmup=2, n_imp=4, seed=1, progress=False)
    with pytest.raises(ValueError, match="at X_new of GPClassifier needs the latent draws f.*nuts-whitened"):
        gb.sample_posterior_predictive(clf, pm, X_new=Xn)
    sparse = gb.SparseGPClassifier(X, y > 0, n_inducing=3, maxiter=10)
    with pytest.raises(ValueError, match=r"model class: the result's \"GPClassifier\", the model's \"SparseGPClassifier"):
        gb.sample_posterior_predictive(sparse, pm, X_new=Xn)  # another model's result: refused (model_spec)
    del pm.attrs["gpbayes_model"]  # a result that carries no model is read with the model given, as before
    with pytest.raises(ValueError, match=r"SparseGPClassifier need the whitened inducing values v.*'joint-hmc'"):
        gb.sample_posterior_predictive(sparse, pm, X_new=Xn)  # a result without v (here another model's)
