"""y-level predictions: predict's moments and log predictive density, posterior_predictive draws, log_likelihood.

Each is checked against an independent computation: brute-force leave-one-out
refits (R&W eqs. 5.10-5.12), the closed-form Gaussian predictive, the
probability of the observed label, and numerical integration of the
Poisson-log-normal mixture.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import integrate, stats

import gpbayes as gb
from gpbayes import predictive
from gpbayes.regression import GPRegression

az = pytest.importorskip("arviz")


def _reg(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.2 * rng.standard_normal(n) + 3.0


def _idata_at(model, psi, n_draws=1):
    """An InferenceData holding the one draw psi (repeated): the predictive is then the closed-form one."""
    names = model.hyperparameter_labels  # one scalar variable per coordinate of psi, in its order
    unc = xr.Dataset({n: (("chain", "draw"), np.full((1, n_draws), psi[j])) for j, n in enumerate(names)})
    post = xr.Dataset({n: np.exp(unc[n]) for n in names})
    return gb.io.make_idata({"posterior": post, "unconstrained_posterior": unc})


def test_leave_one_out_formula_matches_refitting_without_each_point():
    X, y = _reg()
    m = gb.GPRegressor(X, y)
    psi = np.array([-0.3, 0.2, 0.1, np.log(0.05)])
    mu, var = predictive.regression_loo(m.gp, psi)
    for i in (0, 7, 19):
        keep = np.arange(m.n) != i
        gp = GPRegression(m.X[keep], m.y[keep], m.kernel)
        mean_f, var_f = gp.predict(psi, m.X[i:i + 1])
        np.testing.assert_allclose(mu[i], mean_f[0], rtol=1e-9)
        np.testing.assert_allclose(var[i], var_f[0] + 0.05, rtol=1e-9)
    idata = gb.compute_log_likelihood(m, _idata_at(m, psi, 2))
    expected = stats.norm.logpdf(m.y, mu, np.sqrt(var)) - np.log(m.y_scale)  # on the original scale of y
    np.testing.assert_allclose(idata.log_likelihood["y"].values[0, 1], expected, rtol=1e-12)


def test_regression_predict_gives_the_gaussian_predictive_and_its_log_density_at_y_new():
    X, y = _reg()
    m = gb.GPRegressor(X[:15], y[:15])
    psi = np.array([-0.3, 0.2, 0.1, np.log(0.05)])
    out = gb.predict(m, _idata_at(m, psi), X[15:], y_new=y[15:])
    mean_f, var_f = m.gp.predict(psi, m.transform(X[15:]))
    mean, sd = mean_f * m.y_scale + m.y_shift, np.sqrt(var_f + 0.05) * m.y_scale
    np.testing.assert_allclose(out["y_mean"].values, mean, rtol=1e-12)
    np.testing.assert_allclose(out["y_variance"].values, sd**2, rtol=1e-10)
    np.testing.assert_allclose(out["log_predictive_density"].values, stats.norm.logpdf(y[15:], mean, sd), rtol=1e-10)
    assert out.attrs["lpd"] == pytest.approx(stats.norm.logpdf(y[15:], mean, sd).sum(), rel=1e-10)
    with pytest.raises(ValueError, match="y_new must have one target per row"):
        gb.predict(m, _idata_at(m, psi), X[15:], y_new=y[:3])


def test_regression_posterior_predictive_draws_have_the_predictive_moments():
    X, y = _reg(n=8)
    m = gb.GPRegressor(X, y)
    psi = np.array([-0.3, 0.2, 0.1, np.log(0.05)])
    idata = gb.sample_posterior_predictive(m, _idata_at(m, psi, 4000), seed=3)
    draws = idata.posterior_predictive["y"]
    assert draws.dims == ("chain", "draw", "obs") and draws.shape == (1, 4000, 8)
    K = m.kernel(psi[:-1], m.X)
    C = K + 0.05 * np.eye(8)
    mean = (K @ np.linalg.solve(C, m.y)) * m.y_scale + m.y_shift
    cov = (C - K @ np.linalg.solve(C, K)) * m.y_scale**2
    d = draws.values[0]
    se = np.sqrt(np.diag(cov) / 4000)
    assert np.all(np.abs(d.mean(axis=0) - mean) < 4.5 * se)
    np.testing.assert_allclose(np.cov(d.T), cov, atol=6 * np.sqrt(2.0 / 4000) * np.diag(cov).max())


def test_classifier_log_likelihood_predictive_draws_and_lpd_at_labels():
    X, y = _reg(n=16)
    labels = np.where(y > 3.0, "yes", "no")
    with pytest.warns(UserWarning, match="labels mapped"):
        m = gb.GPClassifier(X[:12], labels[:12])
    # 2 x 15 draws: ArviZ 1.x's az.loo needs a Pareto tail of 5 draws, at least 25 draws
    idata = gb.sample(m, method="aa", chains=2, draws=15, warmup=5, seed=1, progress=False, keep_latent=True)
    gb.compute_log_likelihood(m, idata)
    f = idata.posterior["f"].values
    np.testing.assert_allclose(idata.log_likelihood["y"].values, stats.norm.logcdf(m.y * f), rtol=1e-12)
    assert az.loo(idata) is not None
    gb.sample_posterior_predictive(m, idata, seed=0)
    assert set(np.unique(idata.posterior_predictive["y"].values)) <= {-1.0, 1.0}
    out = gb.predict(m, idata, X[12:], y_new=labels[12:])
    p = out["probability"].values
    np.testing.assert_allclose(out["log_predictive_density"].values, np.log(np.where(labels[12:] == "yes", p, 1 - p)))
    with pytest.raises(ValueError, match="not fitted on"):
        gb.predict(m, idata, X[12:], y_new=["maybe"] * 4)
    pm = gb.sample(m, method="pseudo-marginal", chains=1, draws=3, warmup=2, n_imp=4, progress=False)
    with pytest.raises(ValueError, match="keep_latent=True"):
        gb.compute_log_likelihood(m, pm)


def test_count_log_predictive_density_is_the_poisson_lognormal_integral():
    m, v = np.array([[0.3, 1.2]]), np.array([[0.4, 0.05]])
    out = predictive.y_level_counts(xr.Dataset(), [(m[0], v[0])], y_new=[2, 0])
    for j, y in enumerate((2, 0)):
        ref, _ = integrate.quad(lambda f: stats.poisson.pmf(y, np.exp(f)) * stats.norm.pdf(f, m[0, j],
                                                                                           np.sqrt(v[0, j])),
                                -12, 12)
        assert out["log_predictive_density"].values[j] == pytest.approx(np.log(ref), rel=1e-7)
    np.testing.assert_allclose(out["y_mean"].values, np.exp(m[0] + v[0] / 2))
    var = np.exp(m[0] + v[0] / 2) + (np.exp(v[0]) - 1) * np.exp(2 * m[0] + v[0])  # Poisson-log-normal variance
    np.testing.assert_allclose(out["y_variance"].values, var, rtol=1e-12)


def test_sample_adds_the_groups_on_request():
    X, y = _reg(n=12)
    m = gb.GPRegressor(X, y)
    idata = gb.sample(m, method="slice", chains=2, draws=5, warmup=2, seed=4, progress=False,
                      posterior_predictive=True, log_likelihood=True)
    assert {"posterior_predictive", "log_likelihood"} <= set(gb.io.group_names(idata))
    again = gb.sample(m, method="slice", chains=2, draws=5, warmup=2, seed=4, progress=False)
    np.testing.assert_array_equal(gb.sample_posterior_predictive(m, again, seed=4).posterior_predictive["y"].values,
                                  idata.posterior_predictive["y"].values)
    np.testing.assert_array_equal(gb.compute_log_likelihood(m, again).log_likelihood["y"].values,
                                  idata.log_likelihood["y"].values)
