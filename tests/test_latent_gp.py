"""LatentGP: a latent GP with any ``Likelihood`` through ``gb.sample`` and ``gb.predict`` (issue 33, item 4).

Independent answers: with a Gaussian likelihood of fixed noise the model is GP regression, so

* the hyperparameter posterior is the exact-marginal one of ``GPRegressor``'s ``GPRegression``
  (R&W Alg. 2.1) times the prior, integrated on a grid (no Monte Carlo in the reference);
* E[f | y] and Var[f_i | y] are the grid mixture of the exact Gaussian conditionals
  N(K (K + s2 I)^-1 y, K - K (K + s2 I)^-1 K) (R&W eqs. 2.23-2.24 at the training inputs);
* at fixed hyperparameters, the f-updates the LatentGP methods use reach that Gaussian conditional.

Plus: the classifiers keep f on request so that ``az.loo`` applies (item 4, third point), and the
errors that name what to do.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import likelihoods
from gpbayes.likelihoods import Likelihood
from gpbayes.regression import GPRegression

az = pytest.importorskip("arviz")

NOISE = 0.09


def _gaussian_model(n=12, seed=3):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-2, 2, n))[:, None]
    y = np.sin(2 * X[:, 0]) + np.sqrt(NOISE) * rng.standard_normal(n)
    return gb.LatentGP(X, y, likelihood=likelihoods.Gaussian(NOISE), ard=False, standardize=False)


def _grid_posterior(model, n_grid=(141, 121)):
    """Weights of the posterior p(psi | y) on a grid of psi = (log tau, log sigma), from GPRegressor's exact
    marginal at the fixed noise (the model's kernel, nugget included) and the model's prior."""
    gp = GPRegression(model.X, model.y, model.kernel)
    a = np.linspace(-10.0, 4.0, n_grid[0])  # log tau: the small-lengthscale tail decays only like tau
    b = np.linspace(-6.0, 6.0, n_grid[1])
    grid = np.array([(u, v) for u in a for v in b])
    logp = np.array([gp.log_marginal(np.r_[p, np.log(NOISE)]) + model.prior.log_density(p) for p in grid])
    w = np.exp(logp - logp.max())
    w /= w.sum()
    edges = w.reshape(n_grid)
    assert edges[[0, -1], :].sum() < 1e-7 and edges[:, [0, -1]].sum() < 1e-7  # the grid holds the posterior
    return grid, w


def test_gaussian_likelihood_matches_the_exact_marginal_posterior_of_psi_and_f():
    model = _gaussian_model()
    grid, w = _grid_posterior(model)
    ref_mean = w @ grid
    ref_sd = np.sqrt(w @ (grid - ref_mean) ** 2)
    # E[f | y] and Var[f | y]: the grid mixture of the exact conditionals (R&W eqs. 2.23-2.24)
    keep = w > 1e-10 * w.max()
    m_f, s_f = np.zeros(model.n), np.zeros(model.n)
    for p, wk in zip(grid[keep], w[keep]):
        K = model.kernel(p, model.X)
        C = K + NOISE * np.eye(model.n)
        mean = K @ np.linalg.solve(C, model.y)
        var = np.diag(K - K @ np.linalg.solve(C, K))
        m_f += wk * mean
        s_f += wk * (var + mean**2)
    w_sum = w[keep].sum()
    m_f, s_f = m_f / w_sum, s_f / w_sum
    sd_f = np.sqrt(s_f - m_f**2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the default method's choice
        idata = gb.sample(model, chains=4, draws=600, n_warmup=200, until_converged=False, seed=11, progress=False,
                          cores=1)
    assert idata.posterior.attrs["method"] == "slice-surr-site"  # the default keeps f
    assert idata.posterior["f"].dims == ("chain", "draw", "obs")
    psi = idata.unconstrained_posterior
    for j, name in enumerate(model.hyperparameter_names):
        draws = psi[name]
        mcse_mean = float(az.mcse(draws, method="mean")[name])
        mcse_sd = float(az.mcse(draws, method="sd")[name])
        assert abs(float(draws.mean()) - ref_mean[j]) < 4 * mcse_mean + 0.01, name
        assert abs(float(draws.std()) - ref_sd[j]) < 4 * mcse_sd + 0.01, name
    f = idata.posterior["f"]
    mcse_f = az.mcse(idata.posterior[["f"]], method="mean")["f"].values
    z = (f.mean(("chain", "draw")).values - m_f) / mcse_f
    assert np.all(np.abs(z) < 4.5), z
    # the spread too: Var[f_i | y] within 25 % (a sd of 1,000+ effective draws is within ~5 %)
    np.testing.assert_allclose(f.std(("chain", "draw")).values, sd_f, rtol=0.25)


def test_f_updates_at_fixed_hyperparameters_reach_the_exact_gaussian_conditional():
    """The elliptical slice updates of f | psi, y that 'aa', 'surr' and 'slice-<rep>' make on a LatentGP, at a
    fixed psi: mean and covariance of N(K (K + s2 I)^-1 y, K - K (K + s2 I)^-1 K) within Monte Carlo error."""
    from gpbayes.mcmc import latent_gibbs

    model = _gaussian_model(n=8)
    lgm = gb.SliceSampler()._lgm(model)  # the LatentGaussianModel the methods build from the LatentGP
    psi = np.array([np.log(0.8), np.log(1.5)])
    f0 = np.zeros(model.n)
    state = latent_gibbs.init(lgm, psi, f0, "aa")
    rng = np.random.default_rng(5)
    draws = []
    for t in range(6000):
        state, _ = latent_gibbs.latent_step(rng, state, lgm)
        if t >= 500 and t % 2 == 0:
            draws.append(state.f)
    draws = np.array(draws)
    K = model.kernel(psi, model.X)
    C = K + NOISE * np.eye(model.n)
    mean = K @ np.linalg.solve(C, model.y)
    cov = K - K @ np.linalg.solve(C, K)
    ess = min(az.ess(draws[None, :, i]) for i in range(model.n))
    se = np.sqrt(np.diag(cov) / ess)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * se)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=6 * np.sqrt(2.0 / ess) * np.diag(cov).max())


def test_predict_at_new_inputs_is_the_gp_conditional_of_the_kept_f():
    """predict's f_mean / f_sd are the mixture over draws of N(K_*^T K^-1 f_s, k_** - K_*^T K^-1 K_*): checked
    against that formula from the kept draws by hand, and y_mean is the Gaussian's predictive mean (= f_mean)."""
    model = _gaussian_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        idata = gb.sample(model, method="slice-surr-site", chains=2, draws=40, n_warmup=20, seed=2, progress=False,
                          cores=1)
    Xn = np.array([[-1.5], [0.1], [1.9]])
    out = gb.predict(model, idata, Xn, max_draws=80)
    psi = gb.api.psi_draws(idata).values.reshape(-1, 2)
    f = idata.posterior["f"].values.reshape(-1, model.n)
    ms, vs = [], []
    for p, fs in zip(psi, f):
        K, Ks = model.kernel(p, model.X), model.kernel(p, model.X, Xn)
        ms.append(Ks.T @ np.linalg.solve(K, fs))
        vs.append(model.kernel.diag(p, Xn) - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks)))
    ms, vs = np.array(ms), np.array(vs)
    np.testing.assert_allclose(out["f_mean"].values, ms.mean(0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out["f_sd"].values ** 2, (vs + ms**2).mean(0) - ms.mean(0) ** 2, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(out["y_mean"].values, out["f_mean"].values)
    assert np.all(out["f_lower"].values < out["f_mean"].values) and np.all(out["f_mean"].values < out["f_upper"].values)
    y_new = np.sin(2 * Xn[:, 0])
    lpd = gb.predict(model, idata, Xn, y_new=y_new, max_draws=80)["log_predictive_density"].values
    # the Gaussian's log p(y | D) per draw is log N(y; m_s, v_s + s2)
    ref = np.log(np.mean(np.exp(-0.5 * (y_new - ms) ** 2 / (vs + NOISE)) / np.sqrt(2 * np.pi * (vs + NOISE)), axis=0))
    np.testing.assert_allclose(lpd, ref, rtol=1e-6)


@dataclasses.dataclass(frozen=True)
class _Cauchy(Likelihood):
    """A likelihood written to the protocol alone (no predictive_mean, no sample_targets), not log-concave."""

    name = "cauchy"
    approximations = ()

    def check_targets(self, y):
        return np.asarray(y, dtype=np.float64)

    def log_lik(self, y, f):
        return -np.log(np.pi) - np.log1p((y - f) ** 2)

    def d1(self, y, f):
        r = y - f
        return 2 * r / (1 + r**2)

    def d2(self, y, f):
        r2 = (y - f) ** 2
        return 2 * (r2 - 1) / (1 + r2) ** 2

    def d3(self, y, f):
        r = y - f
        return 4 * r * (r**2 - 3) / (1 + r**2) ** 3


def test_a_likelihood_of_the_protocol_alone_runs_and_the_errors_say_what_is_missing():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (10, 1))
    model = gb.LatentGP(X, np.sin(X[:, 0]), likelihood=_Cauchy())
    assert set(gb.methods(model)) == {"nuts-whitened", "aa", "surr"} | {f"slice-{r}" for r in
                                                                        gb.methods.latent._REPRESENTATIONS}
    with pytest.raises(ValueError, match="keeps no latent f, which a LatentGP result holds"):
        gb.sample(model, method=gb.PseudoMarginal(), chains=1, draws=2)
    idata = gb.sample(model, method="aa", chains=1, draws=5, n_warmup=5, seed=1, progress=False)
    assert idata.posterior["f"].shape == (1, 5, 10)  # 'aa' keeps f on a LatentGP whatever keep_latent says
    with pytest.warns(UserWarning, match="inherits Likelihood.predictive_mean"):
        out = gb.predict(model, idata, X[:3])
    assert "y_mean" not in out and np.all(np.isfinite(out["f_mean"].values))
    with pytest.raises(NotImplementedError, match="defines no sample_targets"):
        gb.sample_posterior_predictive(model, idata, X_new=X[:3])
    gb.compute_log_likelihood(model, idata)
    np.testing.assert_allclose(idata.log_likelihood["y"].values,
                               -np.log(np.pi) - np.log1p((model.y - idata.posterior["f"].values) ** 2))
    with pytest.raises(TypeError, match="Likelihood instance"):
        gb.LatentGP(X, X[:, 0], likelihood=object())
    assert gb.LatentGP(X, (X[:, 0] > 0).astype(int) * 2 - 1, likelihood="probit").likelihood == likelihoods.Probit()
    with pytest.raises(ValueError, match="labels in"):
        gb.LatentGP(X, X[:, 0], likelihood="probit")


def test_the_classifier_keeps_f_on_request_and_az_loo_is_finite():
    """gb.sample(model, log_likelihood=True) with no method picks a method that keeps f (slice sampling in the
    surrogate-data representation, keep_latent) and az.loo gives a finite elpd; recording f changes no draw."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (24, 1))
    clf = gb.GPClassifier(X, np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(24) > 0, ard=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = gb.sample(clf, log_likelihood=True, chains=2, draws=150, n_warmup=50, until_converged=False, seed=4,
                          progress=False, cores=1)
    assert idata.posterior.attrs["method"] == "slice-surr-site"
    assert '"keep_latent": true' in idata.posterior.attrs["options"]
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo) and -24 * np.log(2) * 2 < loo.elpd_loo < 0
    a = gb.sample(clf, method=gb.SliceSampler(keep_latent=True), chains=1, draws=10, n_warmup=5, seed=3,
                  progress=False)
    b = gb.sample(clf, method="slice-surr-site", chains=1, draws=10, n_warmup=5, seed=3, progress=False)
    np.testing.assert_array_equal(gb.api.psi_draws(a).values, gb.api.psi_draws(b).values)
    assert "f" in a.posterior and "f" not in b.posterior
    pm = gb.sample(clf, method="pseudo-marginal", chains=1, draws=3, n_warmup=2, n_imp=4, seed=1, progress=False)
    with pytest.raises(ValueError, match="'nuts-whitened'.*keep_latent=True"):
        gb.compute_log_likelihood(clf, pm)


def test_the_default_for_a_latent_gp_keeps_f_and_follows_the_number_of_hyperparameters():
    rng = np.random.default_rng(2)
    X1, X3 = rng.uniform(-2, 2, (10, 1)), rng.uniform(-2, 2, (10, 3))
    m1 = gb.LatentGP(X1, X1[:, 0], likelihood="gaussian")
    m3 = gb.LatentGP(X3, X3[:, 0], likelihood="gaussian")
    meth1, why1 = gb.methods.default_method(m1)
    meth3, why3 = gb.methods.default_method(m3)
    assert meth1 == gb.SliceSampler(representation="surr-site", keep_latent=True) and "keep f" in why1
    assert meth3 == gb.WhitenedNUTS() and "4 hyperparameters (> 2)" in why3
    assert meth1.keeps_latent(m1) and meth3.keeps_latent(m3)
