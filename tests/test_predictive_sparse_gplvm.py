"""``gb.sample_posterior_predictive`` for SparseGPClassifier and GPLVMRegressor (issue 33: draws of y for every model).

At a fixed posterior draw (an InferenceData holding one psi, and v or Z, repeated) the draws are checked
against answers computed independently:

* sparse, Z = X (M = n) and tiny jitter: f_* | u is the exact GP conditional N(K_*X K^-1 u, K_** -
  K_*X K^-1 K_X*) (R&W eq. 2.19 noise-free; Hensman et al. 2015's p(f_* | u)), mean and covariance of
  the draws within Monte Carlo error, the formula by ``numpy.linalg.solve``;
* sparse probit: the frequency of y_* = +1 against the Gauss-Hermite ``predict_class_probabilities``
  within binomial error, at new and at the training inputs;
* robust-max: ``RobustMax.sample_targets`` at fixed f against (1 - eps, eps / (K - 1)) exactly, and the
  class frequencies at new inputs against ``RobustMax.predict_proba`` (``predict_class_probabilities``);
* GPLVM at new inputs: mean and variance of y_* against Gadd et al.'s eq. 7 component integrated over
  z_* ~ eq. 8 by Gauss-Hermite quadrature (k_z = 1, naive formulas), and against ``gb.predict``'s
  mixture moments; at the training inputs against the GP of Y given Z (eq. 1: mean K_f C^-1 Y,
  covariance C - K_f C^-1 K_f, C = K_f + beta^-1 I), marginals and one covariance.

And the layout: dims, coords, ``predictions=True`` groups, the same seed giving the same draws, named errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.stats import norm

import gpbayes as gb
from gpbayes.gplvm.vb import latent_posterior
from gpbayes.kernels import SquaredExponential
from gpbayes.sparse import svgp
from gpbayes.sparse.multiclass import RobustMax
from gpbayes.sparse.target import predict_class_probabilities, sample_latent_draws

az = pytest.importorskip("arviz")

N_DRAWS = 4000


def _idata_at(model, psi, n_draws=N_DRAWS, **latent):
    """An InferenceData holding the one draw psi (and v or Z) repeated: the predictive is then a fixed law."""
    names = model.hyperparameter_labels  # one scalar variable per coordinate of psi, in its order
    unc = xr.Dataset({n: (("chain", "draw"), np.full((1, n_draws), psi[j])) for j, n in enumerate(names)})
    post = xr.Dataset({n: np.exp(unc[n]) for n in names})
    dims = {"v": ("inducing", "latent_gp"), "Z": ("obs", "latent")}
    for name, a in latent.items():
        post[name] = (("chain", "draw", *dims[name]), np.broadcast_to(a, (1, n_draws, *a.shape)).copy())
    return gb.io.make_idata({"posterior": post, "unconstrained_posterior": unc})


def _within_mc_error(draws, mean, var):
    """Sample mean and variance of independent draws (axis 0) against (mean, var) within 4.5 standard errors."""
    n = draws.shape[0]
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * np.sqrt(var / n)), (draws.mean(axis=0), mean)
    assert np.all(np.abs(draws.var(axis=0) - var) < 4.5 * var * np.sqrt(2.0 / (n - 1))), (draws.var(axis=0), var)


def _within_binomial_error(freq, p, n):
    sd = np.sqrt(np.maximum(p * (1.0 - p), 1e-4) / n)
    assert np.all(np.abs(freq - p) < 4.5 * sd), (freq, p)


def _sparse(X, y, Z, psi, jitter=1e-6, **kw):
    """A SparseGPClassifier at the given inducing inputs and psi (svgp_fit given: no SVGP fit is made)."""
    M, C = Z.shape[0], (len(np.unique(y)) if len(np.unique(y)) > 2 else 1)
    params = svgp.SVGPParams(np.zeros((M, C)), np.tile(np.eye(M), (C, 1, 1)), Z, np.asarray(psi, dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # robust-max's "labels mapped" note
        return gb.SparseGPClassifier(X, y, standardize=False, svgp_fit=params, jitter=jitter, **kw)


def _x(n, seed, d=2):
    return np.random.default_rng(seed).uniform(-2, 2, size=(n, d))


def test_sparse_latent_draws_with_z_equal_x_are_the_exact_gp_conditional():
    X = _x(8, 0)
    psi = np.array([np.log(1.2), np.log(1.5)])  # M&A's SE: lengthscale, signal sd
    m = _sparse(X, X[:, 0] > 0, X, psi, jitter=1e-10)
    v = np.random.default_rng(1).standard_normal((8, 1))
    Xn = np.array([[0.3, -0.2], [1.9, 1.9], [0.35, -0.1]])
    k = SquaredExponential(2, ard=False, parameterisation="ma")
    K = k(psi, X)
    u = np.linalg.cholesky(K + 1e-10 * np.exp(2 * psi[1]) * np.eye(8)) @ v[:, 0]  # u = L v
    Ks = k(psi, X, Xn)
    mean = Ks.T @ np.linalg.solve(K, u)
    cov = k(psi, Xn) - Ks.T @ np.linalg.solve(K, Ks)
    f = sample_latent_draws(np.random.default_rng(2), m.target, np.broadcast_to(v, (N_DRAWS, 8, 1)),
                            np.tile(psi, (N_DRAWS, 1)), Xn)[:, :, 0]
    assert f.shape == (N_DRAWS, 3)
    _within_mc_error(f, mean, np.diag(cov))
    # the joint law: the covariance of the two nearby points (correlation ~0.97) within its standard error
    emp = np.cov(f.T)
    se = np.sqrt((cov[0, 0] * cov[2, 2] + cov[0, 2] ** 2) / N_DRAWS)
    assert abs(emp[0, 2] - cov[0, 2]) < 4.5 * se, (emp[0, 2], cov[0, 2])
    assert cov[0, 2] / np.sqrt(cov[0, 0] * cov[2, 2]) > 0.9


def test_sparse_probit_labels_have_the_gauss_hermite_class_probabilities():
    X = _x(12, 3)
    psi = np.array([np.log(0.9), np.log(1.3)])
    m = _sparse(X, X[:, 0] + X[:, 1] > 0, X[:4], psi)  # M = 4 < n: the conditional is not degenerate at X
    v = np.array([[1.2], [-0.8], [0.4], [-1.5]])
    idata = _idata_at(m, psi, v=v)
    Xn = np.array([[0.0, 0.0], [1.5, -1.0], [-2.5, 2.5]])
    out = gb.sample_posterior_predictive(m, idata, X_new=Xn, seed=4)
    d = out.posterior_predictive["y"]
    assert d.dims == ("chain", "draw", "point") and d.shape == (1, N_DRAWS, 3)
    assert set(np.unique(d.values)) == {-1.0, 1.0}  # GPClassifier's coding: -1 classes[0], +1 classes[1]
    assert out.posterior_predictive.attrs["classes"] == ["False", "True"]
    p = predict_class_probabilities(m.target, v[None], psi[None], Xn)[0]
    _within_binomial_error((d.values[0] == 1.0).mean(axis=0), p, N_DRAWS)
    # replicates at the training inputs (dims obs), against the same probabilities there
    rep = gb.sample_posterior_predictive(m, idata, seed=5, extend=False)["y"]
    assert rep.dims == ("chain", "draw", "obs") and rep.shape == (1, N_DRAWS, 12)
    p_obs = predict_class_probabilities(m.target, v[None], psi[None], m.X)[0]
    _within_binomial_error((rep.values[0] == 1.0).mean(axis=0), p_obs, N_DRAWS)
    # the same seed gives the same draws, another seed others
    again = gb.sample_posterior_predictive(m, idata, X_new=Xn, seed=4, extend=False)["y"].values
    np.testing.assert_array_equal(again, d.values)
    assert not np.array_equal(gb.sample_posterior_predictive(m, idata, X_new=Xn, seed=6, extend=False)["y"].values,
                              d.values)


def test_robust_max_sample_targets_flips_the_winner_with_probability_epsilon():
    lik = RobustMax(4, epsilon=0.3)
    F = np.array([[0.1, 2.0, -1.0, 0.5], [3.0, 0.0, 0.0, 0.0], [-1.0, -2.0, -0.5, -0.6]])  # winners 1, 0, 2
    n = 6000
    y = lik.sample_targets(np.random.default_rng(7), np.tile(F, (n, 1, 1)))  # (n, 3)
    assert y.shape == (n, 3) and set(np.unique(y)) <= {0.0, 1.0, 2.0, 3.0}
    for i, win in enumerate((1, 0, 2)):
        freq = np.array([(y[:, i] == c).mean() for c in range(4)])
        p = np.where(np.arange(4) == win, 0.7, 0.1)  # 1 - eps for the winner, eps / (K - 1) for each other
        _within_binomial_error(freq, p, n)
    with pytest.raises(ValueError, match="robustmax: F must have the 4 latent functions on its last axis"):
        lik.sample_targets(np.random.default_rng(0), np.zeros((2, 3)))


def test_sparse_robust_max_classes_have_predict_proba_s_frequencies():
    X = _x(15, 8)
    labels = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.7, 0.7])]
    psi = np.array([np.log(1.0), np.log(1.4)])
    m = _sparse(X, labels, X[:5], psi, epsilon=0.2)
    assert m.classes == ("a", "b", "c") and isinstance(m.likelihood, RobustMax)
    v = np.random.default_rng(9).standard_normal((5, 3))
    idata = _idata_at(m, psi, v=v)
    Xn = np.array([[-1.5, 0.0], [0.0, 0.5], [1.8, -1.0], [0.7, 0.7]])
    out = gb.sample_posterior_predictive(m, idata, X_new=Xn, seed=10, predictions=True)
    d = out.predictions["y"]
    assert d.dims == ("chain", "draw", "point") and out.predictions.attrs["classes"] == ["a", "b", "c"]
    assert "posterior_predictive" not in gb.io.group_names(out)
    assert out.predictions_constant_data["X"].dims == ("point", "feature")
    np.testing.assert_array_equal(out.predictions_constant_data["X"].values, Xn)  # standardize=False
    p = predict_class_probabilities(m.target, v[None], psi[None], Xn)[0]  # (point, class), RobustMax.predict_proba
    freq = np.stack([(d.values[0] == c).mean(axis=0) for c in range(3)], axis=1)
    _within_binomial_error(freq, p, N_DRAWS)
    rep = gb.sample_posterior_predictive(m, idata, seed=11, extend=False)["y"]
    assert rep.dims == ("chain", "draw", "obs") and set(np.unique(rep.values)) <= {0.0, 1.0, 2.0}


def test_sparse_errors_name_the_missing_draws_and_the_methods_that_keep_them():
    X = _x(10, 12)
    psi = np.array([0.0, 0.0])
    m = _sparse(X, X[:, 0] > 0, X[:3], psi)
    no_v = _idata_at(m, psi, n_draws=3)
    with pytest.raises(ValueError, match=r"SparseGPClassifier need the whitened inducing values v.*'joint-hmc' or "
                                         r"'gibbs'"):
        gb.sample_posterior_predictive(m, no_v, X_new=X[:2])
    with pytest.raises(ValueError, match="give X_new"):
        gb.sample_posterior_predictive(m, _idata_at(m, psi, n_draws=3, v=np.zeros((3, 1))), predictions=True)


# ---------------------------------------------------------------------------
# GPLVMRegressor
# ---------------------------------------------------------------------------
def _gplvm():
    x = np.linspace(0.0, 6.0, 12)
    rng = np.random.default_rng(0)
    Y = np.column_stack([np.cos(x), np.sin(x)]) * [2.0, 0.5] + [1.0, -3.0] + 0.05 * rng.standard_normal((12, 2))
    m = gb.GPLVMRegressor(x, Y, latent_dim=1, n_inducing=5, ml_restarts=1, ml_max_iter=30)
    psi = m.ml_fit.psi
    Z = latent_posterior(m.gplvm, psi, m.ml_fit.params).mean  # (n, 1): a fixed latent draw
    return m, psi, Z


def _se(a, b, precision, amplitude=1.0):
    """amplitude exp(-precision (a_i - b_j)^2 / 2) for 1-D a, b: Gadd et al.'s k_z / k_f with one input."""
    return amplitude * np.exp(-0.5 * precision * (a[:, None] - b[None, :]) ** 2)


def test_gplvm_draws_at_new_inputs_have_the_moments_of_the_eq_7_component():
    m, psi, Z = _gplvm()
    psi = psi.copy()
    psi[0] = np.log(60.0)  # sigma_1 = 1 / l^2 of k_z: z_* | Z uncertain between the (standardised) inputs
    sigma, theta, theta_s, beta = np.exp(psi)  # k_x = k_z = 1: psi = log(sigma_1, theta_1, theta_S, beta)
    x, Y, z = m.gplvm.X[:, 0], m.gplvm.Y, Z[:, 0]
    x_new = np.array([1.36, 3.0, 7.0])  # between training inputs, and beyond them (a wide z_*)
    xs = m.transform(x_new)[:, 0]
    # eq. 8: z_* ~ N(K_z*^T K_z^-1 z, 1 + eps - K_z*^T K_z^-1 K_z*) (eps the latent jitter on k_z)
    eps = m.gplvm.latent_jitter
    Kz = _se(x, x, sigma) + eps * np.eye(12)
    Kzs = _se(x, xs, sigma)
    mz, sz = Kzs.T @ np.linalg.solve(Kz, z), 1.0 + eps - np.einsum("ij,ij->j", Kzs, np.linalg.solve(Kz, Kzs))
    assert np.all(sz > 1e-2) and sz.max() > 0.5
    # eq. 7's component at z_*: N(K_f*^T C^-1 y, theta_S - K_f*^T C^-1 K_f* + 1/beta); moments over z_* by
    # 60-point Gauss-Hermite quadrature
    C = _se(z, z, theta, theta_s) + np.eye(12) / beta
    t, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    e1, e2 = np.zeros((3, 2)), np.zeros((3, 2))
    for tq, wq in zip(t, w):
        zq = mz + np.sqrt(sz) * tq
        Kf = _se(z, zq, theta, theta_s)
        mean = Kf.T @ np.linalg.solve(C, Y)  # (3, 2)
        var = theta_s - np.einsum("ij,ij->j", Kf, np.linalg.solve(C, Kf)) + 1.0 / beta
        e1 += wq * mean
        e2 += wq * (var[:, None] + mean**2)
    mean_y, var_y = e1 * m.y_scale + m.y_shift, (e2 - e1**2) * m.y_scale**2
    idata = _idata_at(m, psi, Z=Z)
    out = gb.sample_posterior_predictive(m, idata, X_new=x_new, seed=13)
    d = out.posterior_predictive["y"]
    assert d.dims == ("chain", "draw", "point", "output") and d.shape == (1, N_DRAWS, 3, 2)
    np.testing.assert_array_equal(d["output"].values, [0, 1])
    _within_mc_error(d.values[0], mean_y, var_y)
    # gb.predict's moments of the same mixture (its own draws of z_*): within the two estimates' errors
    pred = gb.predict(m, idata, x_new, max_draws=N_DRAWS, seed=1)
    assert np.all(np.abs(d.values[0].mean(axis=0) - pred["mean"].values) < 4.5 * np.sqrt(2 * var_y / N_DRAWS))
    assert np.all(np.abs(d.values[0].std(axis=0) - pred["sd"].values) < 4.5 * np.sqrt(var_y / N_DRAWS))
    # seeded; the ArviZ out-of-sample groups
    again = gb.sample_posterior_predictive(m, idata, X_new=x_new, seed=13, predictions=True, extend=False)
    np.testing.assert_array_equal(again["predictions"]["y"].values, d.values)
    assert again["predictions_constant_data"]["X"].dims == ("point", "feature")


def test_gplvm_replicates_are_the_gp_of_y_given_z_at_the_training_inputs():
    m, psi, Z = _gplvm()
    _, theta, theta_s, beta = np.exp(psi)
    z, Y = Z[:, 0], m.gplvm.Y
    Kf = _se(z, z, theta, theta_s)
    C = Kf + np.eye(12) / beta
    mean = (Kf @ np.linalg.solve(C, Y)) * m.y_scale + m.y_shift  # eq. 1 given Z (R&W eq. 2.23)
    cov = C - Kf @ np.linalg.solve(C, Kf)  # R&W eq. 2.24 plus the noise
    rep = gb.sample_posterior_predictive(m, _idata_at(m, psi, Z=Z), seed=14, extend=False)["y"]
    assert rep.dims == ("chain", "draw", "obs", "output") and rep.shape == (1, N_DRAWS, 12, 2)
    draws = rep.values[0]
    _within_mc_error(draws, mean, np.diag(cov)[:, None] * m.y_scale**2)
    # jointly over the points: the covariance of neighbours 5 and 6 (first output)
    c = cov * m.y_scale[0] ** 2
    emp = np.cov(draws[:, 5, 0], draws[:, 6, 0])[0, 1]
    assert abs(emp - c[5, 6]) < 4.5 * np.sqrt((c[5, 5] * c[6, 6] + c[5, 6] ** 2) / N_DRAWS), (emp, c[5, 6])
    # each point's marginal is eq. 7 at its training x: z_* | Z from eq. 8 is z_i up to a variance of ~1e-6 (the
    # latent jitter), so the mixture over 400 draws of z_* has the replicate's moments to ~1e-3
    from gpbayes.gplvm.pseudo_marginal import predictive_mixture

    mix = predictive_mixture(np.random.default_rng(0), m.gplvm, psi[None], Z[None], m.gplvm.X, n_latent_draws=400)
    mix_mean = mix.mean.mean(axis=0)
    mix_var = (mix.var[:, :, None] + mix.mean**2).mean(axis=0) - mix_mean**2
    np.testing.assert_allclose(mix_mean * m.y_scale + m.y_shift, mean, atol=5e-3 * m.y_scale.max())
    np.testing.assert_allclose(mix_var, np.repeat(np.diag(cov)[:, None], 2, axis=1), rtol=2e-2)


def test_gplvm_type2_ml_result_draws_z_from_q():
    m, psi, _ = _gplvm()
    iml = gb.sample(m, method="type2-ml", seed=1, progress=False)
    assert "Z" not in iml.posterior
    rep = gb.sample_posterior_predictive(m, iml, seed=2, extend=False)["y"]
    new = gb.sample_posterior_predictive(m, iml, X_new=np.array([1.0, 2.0, 9.0]), seed=2, extend=False)["y"]
    assert rep.shape == (1, 1, 12, 2) and new.shape == (1, 1, 3, 2)
    assert np.all(np.isfinite(rep.values)) and np.all(np.isfinite(new.values))
