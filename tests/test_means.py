"""Mean functions (``gpbayes.means``): a constant and a linear mean with beta ~ N(b, B) integrated out
(R&W 2006 Sec. 2.7), checked against answers known independently:

(a) the marginal likelihood with beta integrated out equals quadrature over beta of
    N(y; beta 1, K_y) N(beta; b, B); the kernel of eq. 2.40 equals a naive double loop; its gradient
    equals finite differences (regression and the Laplace marginal);
(b) the conditional of beta equals R&W's beta_bar and (B^-1 + H K_y^-1 H^T)^-1 computed naively, and
    its draws have those moments within Monte Carlo error;
(c) ``gb.predict`` at fixed hyperparameters equals R&W eq. 2.41 computed naively;
(d) a sampled run on y shifted by +5 recovers a constant near 5 on the original scale;
(e) ``mean=None`` (the default) changes no number: arrays from the code before ``mean=`` existed
    (``tests/data/means_golden.npz``, made by ``tests/data/make_means_golden.py``).
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

import gpbayes as gb
from gpbayes import means
from gpbayes.kernels import Matern52, SquaredExponential

DATA = Path(__file__).parent / "data"


def _data(n=20, d=1, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = np.sin(2 * X[:, 0]) + shift + 0.1 * rng.normal(size=n)
    if d > 1:
        y = y + 0.5 * X[:, 1]
    return X, y


def _naive_K(kernel, psi, X, X2=None):
    """The wrapped kernel's K (not the mean's term)."""
    return np.asarray(kernel.kernel(psi, X, X2), dtype=float)


# ---------------------------------------------------------------------------
# (a) the marginal likelihood, the kernel, the gradients
# ---------------------------------------------------------------------------
def test_marginal_with_a_constant_mean_equals_quadrature_over_beta():
    """log p(y | psi) of the model equals log int N(y; beta 1, K_y) N(beta; b, B) d beta (quadrature)."""
    X, y = _data(n=15, shift=2.0)
    b, sd = 0.4, 0.8
    model = gb.GPRegressor(X, y, mean=gb.means.Constant(prior_mean=b, prior_sd=sd), standardize=False)
    psi = np.log([0.7, 1.3, 0.05])
    Ky = _naive_K(model.kernel, psi[:-1], model.X) + np.exp(psi[-1]) * np.eye(15)
    ones = np.ones(15)

    def log_integrand(beta):
        return stats.multivariate_normal.logpdf(y, beta * ones, Ky) + stats.norm.logpdf(beta, b, sd)

    grid = np.linspace(-10, 10, 2001)
    top = grid[np.argmax([log_integrand(g) for g in grid])]
    c = log_integrand(top)
    value, err = integrate.quad(lambda t: np.exp(log_integrand(t) - c), -10, 10, points=[top], epsabs=0,
                                epsrel=1e-11, limit=200)
    assert np.isclose(model.gp.log_marginal(psi), c + np.log(value), rtol=0, atol=1e-8)
    assert model.param_names == ["tau_0", "sigma", "noise_variance"]  # the mean adds no hyperparameter


def test_the_mean_kernel_is_the_naive_double_loop_of_eq_2_40():
    """k(x, x') + sd_0^2 + sum_j sd_j^2 x_j x'_j entry by entry, and its diagonal."""
    X, _ = _data(n=6, d=2, seed=1)
    X2 = X[:4] + 0.3
    sd = (0.5, 1.5, 2.0)
    k = means.MeanKernel(SquaredExponential(2, ard=True), gb.means.Linear(prior_sd=sd), 2)
    psi = np.log([0.8, 1.2, 1.7])
    K = k(psi, X, X2)
    for i in range(6):
        for j in range(4):
            base = float(k.kernel(psi, X[i:i + 1], X2[j:j + 1])[0, 0])
            want = base + sd[0] ** 2 + sd[1] ** 2 * X[i, 0] * X2[j, 0] + sd[2] ** 2 * X[i, 1] * X2[j, 1]
            assert np.isclose(K[i, j], want, rtol=1e-13)
    assert np.allclose(k.diag(psi, X), np.diag(k(psi, X)), rtol=1e-13)
    assert isinstance(k, gb.kernels.Kernel)
    assert k.param_names == k.kernel.param_names and k.n_params == 3


@pytest.mark.parametrize("kernel", [None, Matern52(2, ard=True)], ids=["se-fused", "matern52"])
def test_regression_gradient_with_a_mean_matches_finite_differences(kernel):
    X, y = _data(n=18, d=2, seed=2, shift=1.0)
    model = gb.GPRegressor(X, y, kernel=kernel, mean=gb.means.Linear(prior_mean=(0.2, -0.1, 0.3), prior_sd=0.7))
    psi = np.array([0.1, -0.2, 0.3, np.log(0.05)])
    _, g = model.gp.log_marginal_and_grad(psi)
    h = 1e-6
    fd = [(model.gp.log_marginal(psi + h * e) - model.gp.log_marginal(psi - h * e)) / (2 * h) for e in np.eye(4)]
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_laplace_marginal_gradient_with_a_mean_matches_finite_differences():
    """The latent path: gradient_traces through MeanKernel (R&W Alg. 5.1)."""
    from gpbayes.approx import laplace_log_marginal_and_grad

    X, y = _data(n=20, d=2, seed=3)
    clf = gb.GPClassifier(X, y > 0.3, mean=gb.means.Linear(prior_sd=1.2))
    psi = np.array([0.2, -0.1, 0.5])

    def value(p):
        return laplace_log_marginal_and_grad(clf.kernel, p, clf.X, clf.y, clf.likelihood)[0]

    g = laplace_log_marginal_and_grad(clf.kernel, psi, clf.X, clf.y, clf.likelihood)[1]
    h = 1e-5
    fd = [(value(psi + h * e) - value(psi - h * e)) / (2 * h) for e in np.eye(3)]
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# (b) the conditional of beta
# ---------------------------------------------------------------------------
def _rw_posterior(Hm, Ky, y, b, B):
    """R&W Sec. 2.7 naively (H is p x n there): A = B^-1 + H K_y^-1 H^T, beta_bar = A^-1 (H K_y^-1 y + B^-1 b)."""
    Ki = np.linalg.inv(Ky)
    A = np.linalg.inv(B) + Hm @ Ki @ Hm.T
    Ai = np.linalg.inv(A)
    return Ai @ (Hm @ Ki @ y + np.linalg.solve(B, b)), Ai


def test_coefficient_conditional_is_rw_beta_bar_and_its_draws_have_its_moments():
    X, y = _data(n=25, d=2, seed=4, shift=1.5)
    mean = gb.means.Linear(prior_mean=(0.5, 0.0, -0.2), prior_sd=(1.0, 0.6, 2.0))
    model = gb.GPRegressor(X, y, mean=mean, standardize=False)
    psi = np.array([0.3, 0.1, 0.2, np.log(0.02)])
    Hm = mean.basis(model.X).T
    b, B = mean.prior(2)
    Ky = _naive_K(model.kernel, psi[:-1], model.X) + np.exp(psi[-1]) * np.eye(25)
    beta_bar, cov = _rw_posterior(Hm, Ky, model.y, b, B)
    _, C = model.gp._cov(psi)
    m, V = means.coefficient_conditional(Hm.T, b, B, np.linalg.cholesky(C), model.y)
    assert np.allclose(m, beta_bar, rtol=1e-9, atol=1e-10) and np.allclose(V, cov, rtol=1e-8, atol=1e-12)
    # Monte Carlo: 4,000 draws at the same psi (one factorisation, cached)
    S = 4000
    draws = means.draw_coefficients(model, np.tile(psi, (S, 1)), np.random.default_rng(0))
    z = (draws.mean(axis=0) - beta_bar) / np.sqrt(np.diag(cov) / S)
    assert np.all(np.abs(z) < 4.5), z
    ratio = draws.var(axis=0, ddof=1) / np.diag(cov)
    assert np.all(np.abs(ratio - 1) < 4.5 * np.sqrt(2 / S)), ratio


def test_latent_conditional_given_f_uses_k_without_noise():
    """beta | f, psi for a latent GP: R&W's formula with C = K (its nugget) in place of K_y."""
    X, y = _data(n=15, d=1, seed=5)
    mean = gb.means.Linear(prior_sd=(0.9, 1.4))
    clf = gb.GPClassifier(X, y > 0, mean=mean)
    psi = np.array([0.2, 0.4])
    f = np.random.default_rng(1).normal(size=15)
    b, B = mean.prior(1)
    beta_bar, cov = _rw_posterior(mean.basis(clf.X).T, _naive_K(clf.kernel, psi, clf.X), f, b, B)
    m, V = means.coefficient_conditional(mean.basis(clf.X), b, B, np.linalg.cholesky(clf.kernel(psi, clf.X)), f)
    assert np.allclose(m, beta_bar, rtol=1e-7, atol=1e-9) and np.allclose(V, cov, rtol=1e-6, atol=1e-10)


def test_original_scale_undoes_the_standardisation():
    """shift + scale h(x_std)^T beta equals constant + slopes . x on the raw inputs."""
    X, y = _data(n=12, d=2, seed=6, shift=4.0)
    X = X * [3.0, 0.5] + [10.0, -2.0]
    model = gb.GPRegressor(X, y, mean=gb.means.Linear())
    beta = np.array([[0.3, -1.2, 0.7], [1.0, 0.5, 0.0]])
    constant, slopes = means.original_scale(model, beta)
    for k in range(2):
        want = model.y_shift + model.y_scale * (model.mean.basis(model.X) @ beta[k])
        assert np.allclose(constant[k] + model.X_raw @ slopes[k], want, rtol=1e-12)


# ---------------------------------------------------------------------------
# (c) predictions: R&W eq. 2.41
# ---------------------------------------------------------------------------
def test_predict_at_fixed_hyperparameters_is_rw_eq_2_41():
    X, y = _data(n=20, d=2, seed=7, shift=3.0)
    mean = gb.means.Linear(prior_mean=(1.0, 0.5, 0.0), prior_sd=(2.0, 1.0, 0.5))
    model = gb.GPRegressor(X, y, mean=mean, standardize=False)
    idata = gb.sample(model, method="type2-ml", chains=1, seed=1, progress=False)  # one draw: fixed psi
    psi = gb.api.psi_draws(idata).values.reshape(-1)
    Xs = np.random.default_rng(8).uniform(-3, 3, size=(6, 2))
    out = gb.predict(model, idata, Xs)
    k = model.kernel.kernel
    Ky = np.asarray(k(psi[:-1], X)) + np.exp(psi[-1]) * np.eye(20)
    Ks, Kss = np.asarray(k(psi[:-1], X, Xs)), np.asarray(k(psi[:-1], Xs))
    Hm, Hs = mean.basis(X).T, mean.basis(Xs).T
    b, B = mean.prior(2)
    beta_bar, Ai = _rw_posterior(Hm, Ky, y, b, B)
    Ki = np.linalg.inv(Ky)
    g_bar = Hs.T @ beta_bar + Ks.T @ Ki @ (y - Hm.T @ beta_bar)  # R&W eq. 2.41, mean
    R = Hs - Hm @ Ki @ Ks
    cov = Kss - Ks.T @ Ki @ Ks + R.T @ Ai @ R  # R&W eq. 2.41, covariance
    assert np.allclose(out["mean"].values, g_bar, rtol=1e-8, atol=1e-8)
    assert np.allclose(out["sd_f"].values ** 2, np.diag(cov), rtol=1e-7, atol=1e-9)
    assert np.allclose(out["y_variance"].values, np.diag(cov) + np.exp(psi[-1]), rtol=1e-7)


def test_posterior_predictive_draws_at_fixed_hyperparameters_have_the_moments_of_eq_2_41():
    """y_rep ~ p(y_rep | y, psi) with the mean: over 300 seeds, mean g_bar(X) and variance diag cov(g(X)) + lambda."""
    X, y = _data(n=12, d=1, seed=11, shift=2.0)
    mean = gb.means.Constant(prior_mean=1.0, prior_sd=1.5)
    model = gb.GPRegressor(X, y, mean=mean, standardize=False)
    idata = gb.sample(model, method="type2-ml", chains=1, seed=1, progress=False)
    psi = gb.api.psi_draws(idata).values.reshape(-1)
    reps = np.array([gb.sample_posterior_predictive(model, idata, seed=s, extend=False)["y"].values.ravel()
                     for s in range(300)])
    k = model.kernel.kernel
    K = np.asarray(k(psi[:-1], X))
    Ky = K + np.exp(psi[-1]) * np.eye(12)
    Hm = mean.basis(X).T
    b, B = mean.prior(1)
    beta_bar, Ai = _rw_posterior(Hm, Ky, y, b, B)
    Ki = np.linalg.inv(Ky)
    g_bar = Hm.T @ beta_bar + K @ Ki @ (y - Hm.T @ beta_bar)
    R = Hm - Hm @ Ki @ K
    var = np.diag(K - K @ Ki @ K + R.T @ Ai @ R) + np.exp(psi[-1])
    z = (reps.mean(axis=0) - g_bar) / np.sqrt(var / 300)
    assert np.all(np.abs(z) < 4.5), z
    assert np.all(np.abs(reps.var(axis=0, ddof=1) / var - 1) < 4.5 * np.sqrt(2 / 300))


def test_a_poisson_gp_with_a_linear_mean_samples_and_reports_the_log_rate_with_its_offset():
    rng = np.random.default_rng(12)
    X = rng.uniform(-1.5, 1.5, size=(30, 1))
    counts = rng.poisson(np.exp(1.0 + X[:, 0]))
    pc = gb.PoissonGP(X, counts, mean=gb.means.Linear())
    constant, slopes = means.original_scale(pc, np.array([0.2, 0.5]))
    assert np.isclose(constant, pc.offset + 0.2 - 0.5 * pc.x_shift[0] / pc.x_scale[0])
    assert np.isclose(slopes[0], 0.5 / pc.x_scale[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(pc, method="slice-surr-site", chains=1, draws=60, n_warmup=40, seed=1, cores=1,
                          progress=False)
    slope = idata.posterior["mean_coef"].values.ravel()
    assert abs(slope.mean() - 1.0) < 0.6, slope.mean()  # the log-rate's slope is 1 (a short chain: loose)
    assert np.all(gb.predict(pc, idata, X[:3])["rate"].values > 0)


# ---------------------------------------------------------------------------
# (d) a sampled run
# ---------------------------------------------------------------------------
def test_a_sampled_constant_recovers_a_shift_of_five_on_the_original_scale():
    rng = np.random.default_rng(9)
    X = np.sort(rng.uniform(-6, 6, size=(40, 1)), axis=0)
    y = 5.0 + np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    model = gb.GPRegressor(X, y, standardize=False, mean=gb.means.Constant(prior_sd=10.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        idata = gb.sample(model, method="nuts", chains=2, draws=150, n_warmup=150, seed=3, cores=1, progress=False)
    c = idata.posterior["mean_constant"].values
    assert c.shape == (2, 150)
    assert abs(c.mean() - 5.0) < max(3 * c.std(), 0.2) and c.std() < 1.0, (c.mean(), c.std())
    assert idata.posterior.attrs["mean_draws"].startswith("exact")
    assert "mean" in idata.posterior.attrs and "mean_constant" not in idata.unconstrained_posterior


def test_a_linear_mean_on_a_classifier_names_its_coefficients_after_the_columns():
    """Linear mean through a latent method that keeps f: ``mean_coef`` over ``feature`` with X's column
    names; beta drawn exactly given f; predict runs."""
    pd = pytest.importorskip("pandas")
    X, y = _data(n=30, d=2, seed=10)
    Xdf = pd.DataFrame(X, columns=["age", "dose"])
    clf = gb.GPClassifier(Xdf, y > 0, mean=gb.means.Linear())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(clf, method="aa", keep_latent=True, chains=1, draws=20, n_warmup=20, seed=2, cores=1,
                          progress=False)
    assert idata.posterior["mean_coef"].dims == ("chain", "draw", "feature")
    assert list(idata.posterior["feature"].values) == ["age", "dose"]
    assert idata.posterior.attrs["mean_draws"].startswith("exact: beta | f")
    p = gb.predict(clf, idata, X[:4])["probability"].values
    assert np.all((p > 0) & (p < 1))
    with pytest.raises(ValueError, match="prior_mean must be 0"):
        gb.GPClassifier(X, y > 0, mean=gb.means.Constant(prior_mean=1.0))
    with pytest.raises(TypeError, match="mean must be None"):
        gb.GPRegressor(X, y, mean="constant")
    with pytest.raises(ValueError, match="prior_sd must be a positive"):
        gb.GPRegressor(X, y, mean=gb.means.Linear(prior_sd=(1.0, 2.0)))  # 2 values for 1 + d = 3 coefficients


# ---------------------------------------------------------------------------
# (e) mean=None changes no number
# ---------------------------------------------------------------------------
def test_without_a_mean_every_number_is_that_of_the_code_before_means():
    spec = importlib.util.spec_from_file_location("make_means_golden", DATA / "make_means_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        now = mod.golden_runs(gb)
    with np.load(DATA / "means_golden.npz") as f:
        golden = {k: f[k] for k in f.files}
    assert set(now) == set(golden)
    for k in golden:
        assert np.array_equal(now[k], golden[k]), k
    model = gb.GPRegressor(*_data())
    assert model.mean is None and isinstance(model.kernel, SquaredExponential) and model.gp.y is model.y
    assert "mean" not in model._attrs()
