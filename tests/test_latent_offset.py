"""LatentGP(sample_offset=True): the constant m of f sampled with psi (Murray & Adams 2010 Sec. 5, issue 33).

Known answers:

* Gaussian likelihood, y = f + m + e: with m ~ N(mu0, s0^2) the GP prior plus m is again a GP, so
  p(m | y, psi) is Gaussian in closed form (precision 1/s0^2 + 1^T C^-1 1, C = K + s2 I; mean
  (mu0/s0^2 + 1^T C^-1 y) / precision) and p(psi | y) is N(y; mu0 1, C + s0^2 1 1^T) p(psi); the
  posterior moments of m are those mixed over a 121 x 121 grid of psi = (log tau, log sigma).
* Poisson likelihood with the GP's amplitude pinned near 0 by its prior (f has sd 0.01): y_i ~
  Poisson(E exp(m)), whose posterior of m is one-dimensional (quadrature on 4,001 points).

The chains' mean and variance of m must lie within 4 Monte Carlo standard errors (ArviZ's ESS of m
and of (m - E m)^2).  Then: m reported as it is, predictions adding m per draw against the
likelihood's own densities, the starts, and the refusals of the methods that cannot sample m.
"""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest
from scipy import stats

import gpbayes as gb
from gpbayes import priors
from gpbayes.likelihoods import Gaussian, Poisson
from gpbayes.methods import default_method

az = pytest.importorskip("arviz")

N_GAUSS, S2, MU0, S0 = 8, 0.3, 4.0, 1.0
LOG_TAU, LOG_SIGMA, PSI_SD = np.log(0.3), np.log(0.5), 0.5


def _gaussian_data():
    rng = np.random.default_rng(3)
    X = np.linspace(0.0, 1.0, N_GAUSS)[:, None]
    return X, 5.0 + 0.5 * np.sin(6.0 * X[:, 0]) + np.sqrt(S2) * rng.standard_normal(N_GAUSS)


def _gaussian_model():
    X, y = _gaussian_data()
    prior = {"tau_0": priors.LogNormal(LOG_TAU, PSI_SD), "sigma": priors.LogNormal(LOG_SIGMA, PSI_SD),
             "mean_constant": priors.LogNormal(MU0, S0)}  # m ~ N(MU0, S0^2): LogNormal's density on psi = m
    return gb.LatentGP(X, y, likelihood=Gaussian(S2), prior=prior, standardize=False, sample_offset=True)


def _exact_gaussian_moments(model) -> tuple[float, float]:
    """E[m | y] and Var[m | y]: the closed-form p(m | y, psi) mixed over p(psi | y) on a grid."""
    g = np.linspace(-6 * PSI_SD, 6 * PSI_SD, 121)
    lt, ls = np.meshgrid(LOG_TAU + g, LOG_SIGMA + g, indexing="ij")
    P = np.stack([lt.ravel(), ls.ravel()], axis=1)
    n, y = model.n, model.y
    C = np.stack([model.kernel(p, model.X) for p in P]) + S2 * np.eye(n)
    Ci1 = np.linalg.solve(C, np.broadcast_to(np.ones(n), (len(P), n))[..., None])[..., 0]
    Ciy = np.linalg.solve(C, np.broadcast_to(y, (len(P), n))[..., None])[..., 0]
    prec = 1.0 / S0**2 + Ci1.sum(axis=1)
    mean = (MU0 / S0**2 + Ciy.sum(axis=1)) / prec
    Cm = C + S0**2  # + s0^2 1 1^T: m integrated out (R&W eq. 2.40 with h = 1)
    r = y - MU0
    _, logdet = np.linalg.slogdet(Cm)
    quad = np.einsum("i,ki->k", r, np.linalg.solve(Cm, np.broadcast_to(r, (len(P), n))[..., None])[..., 0])
    # the LogNormal priors' densities on psi are Gaussian; the grid is uniform in psi
    logw = -0.5 * (logdet + quad) - 0.5 * ((P[:, 0] - LOG_TAU) ** 2 + (P[:, 1] - LOG_SIGMA) ** 2) / PSI_SD**2
    w = np.exp(logw - logw.max())
    w /= w.sum()
    e = float(w @ mean)
    return e, float(w @ (1.0 / prec + mean**2) - e**2)


def _sample(model, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not-converged warnings of short chains
        return gb.sample(model, method=method, progress=False, cores=1, **kw)


def _within_mc_error(m: np.ndarray, e: float, v: float) -> tuple[float, float]:
    """z-scores of the chains' mean and variance of m against (e, v), by ArviZ's ESS."""
    ess, ess2 = float(az.ess(m)), float(az.ess((m - e) ** 2))
    z_mean = (m.mean() - e) / np.sqrt(v / ess)
    z_var = (np.mean((m - e) ** 2) - v) / (v * np.sqrt(2.0 / ess2))  # Var of (m - e)^2 is 2 v^2 for a Gaussian m
    return float(z_mean), float(z_var)


@pytest.mark.parametrize("method", [gb.SliceSampler(representation="surr-site", init="prior"),
                                    gb.LatentGibbs(representation="aa", init="prior")],
                         ids=["slice-surr-site", "aa"])
def test_gaussian_posterior_of_m_is_the_closed_form(method):
    """M&A Alg. 4 (slice, surrogate data) and F&G's AA Gibbs sample (psi, m, f) jointly; m's posterior
    moments are the closed form's (mixed over psi) within Monte Carlo error."""
    model = _gaussian_model()
    e, v = _exact_gaussian_moments(model)
    idata = _sample(model, method, chains=2, draws=1000, n_warmup=200, seed=1)
    m = idata.posterior["mean_constant"].values
    z_mean, z_var = _within_mc_error(m, e, v)
    assert abs(z_mean) < 4.0 and abs(z_var) < 4.0, (e, v, m.mean(), m.var(), z_mean, z_var)
    assert abs(e - MU0) > 6 * np.sqrt(v / float(az.ess(m)))  # the data moved m from its prior: the test has power


def test_poisson_posterior_of_m_with_exposure_is_the_one_dimensional_one():
    """y_i ~ Poisson(E exp(f_i + m)) with f pinned near 0 by its amplitude's prior: the posterior of m is
    proportional to exp(m sum y - n E e^m) N(m; c, 1), c = log(sum y / (n E)) the default prior's centre
    (``Poisson.offset_moments``).  Surrogate-data slice sampling, whose site fits depend on m."""
    rng = np.random.default_rng(5)
    n, E = 10, 2.0
    X = np.linspace(0.0, 1.0, n)[:, None]
    y = rng.poisson(E * np.exp(1.2), size=n).astype(float)
    prior = {"tau_0": priors.LogNormal(np.log(0.3), 0.5), "sigma": priors.LogNormal(np.log(1e-4), 1e-3)}
    model = gb.LatentGP(X, y, likelihood=Poisson(exposure=E), prior=prior, standardize=False, sample_offset=True)
    c = np.log(y.sum() / (n * E))
    assert model.prior.components[-1] == priors.LogNormal(c, 1.0)  # the default prior of m
    grid = np.linspace(c - 2.0, c + 2.0, 4001)
    logp = grid * y.sum() - n * E * np.exp(grid) - 0.5 * (grid - c) ** 2
    w = np.exp(logp - logp.max())
    w /= w.sum()
    e = float(w @ grid)
    v = float(w @ grid**2) - e**2
    idata = _sample(model, gb.SliceSampler(representation="surr-site", init="prior"), chains=2, draws=400,
                    n_warmup=100, seed=1)
    m = idata.posterior["mean_constant"].values
    z_mean, z_var = _within_mc_error(m, e, v)
    assert abs(z_mean) < 4.0 and abs(z_var) < 4.0, (e, v, m.mean(), m.var(), z_mean, z_var)


@pytest.fixture(scope="module")
def short_run():
    model = _gaussian_model()
    return model, _sample(model, "slice-prior-white", chains=2, draws=30, n_warmup=20, seed=7)


def test_m_is_reported_as_it_is_and_the_kernel_parameters_as_exp_psi(short_run):
    model, idata = short_run
    assert model.param_names == ["tau_0", "sigma", "mean_constant"]
    psi = gb.api.psi_draws(idata).values
    assert np.array_equal(idata.posterior["mean_constant"].values, psi[:, :, -1])
    assert np.array_equal(idata.unconstrained_posterior["mean_constant"].values, psi[:, :, -1])
    assert model.hyperparameter_names == ["lengthscale", "signal_variance", "mean_constant"]
    assert np.allclose(idata.posterior["lengthscale"].values[..., 0], np.exp(psi[:, :, 0]))
    assert np.allclose(idata.posterior["signal_variance"].values, np.exp(psi[:, :, 1]))
    assert idata.posterior["mean_constant"].values.min() > 2.0  # m near the data's level, not log of it
    assert int(idata.posterior.attrs["sample_offset"]) == 1


def test_log_likelihood_and_posterior_predictive_add_m_per_draw(short_run):
    """log p(y_i | f_i + m) by scipy's normal; y_rep - (f + m) and y_* - (f + m) at the training inputs are
    N(0, s2) draws (m omitted, they would be centred near -m / s ~ -9 sd)."""
    model, idata = short_run
    f = idata.posterior["f"].values
    m = idata.posterior["mean_constant"].values[..., None]
    ll = gb.compute_log_likelihood(model, idata, extend=False)
    assert np.allclose(ll["y"].values, stats.norm.logpdf(model.y, f + m, np.sqrt(S2)))
    rep = gb.sample_posterior_predictive(model, idata, seed=3, extend=False)["y"].values
    new = gb.sample_posterior_predictive(model, idata, X_new=model.X_raw, seed=4, extend=False)["y"].values
    for draws in (rep, new):
        r = ((draws - f - m) / np.sqrt(S2)).ravel()
        assert abs(r.mean()) < 4.0 / np.sqrt(r.size) + 0.01 and abs(r.var() - 1.0) < 4.0 * np.sqrt(2.0 / r.size)


def test_predict_is_of_f_plus_m(short_run):
    """At the training inputs the GP conditional of f_* given f is f (up to the nugget), so gb.predict's
    f_mean is the draws' mean of f + m, and the Gaussian's y_mean equals it."""
    model, idata = short_run
    fm = idata.posterior["f"].values + idata.posterior["mean_constant"].values[..., None]
    out = gb.predict(model, idata, model.X_raw)
    assert np.allclose(out["f_mean"].values, fm.reshape(-1, model.n).mean(axis=0), atol=1e-3)
    assert np.allclose(out["y_mean"].values, out["f_mean"].values)


def test_starts_of_m_and_the_default_prior():
    """init="kernel": the kernel's initial psi, then m = the offset_moments centre (Poisson: log of the mean
    count per unit exposure), plus N(0, 0.1^2) noise from the chain's generator; init="prior": a prior draw."""
    y = np.array([3.0, 5, 4, 6, 2, 3, 5, 4])
    X = np.linspace(0.0, 1.0, 8)[:, None]
    model = gb.LatentGP(X, y, likelihood=Poisson(exposure=0.5), sample_offset=True)
    c = np.log(y.mean() / 0.5)
    assert model.initial_psi()[-1] == pytest.approx(c)
    assert np.array_equal(model.initial_psi()[:-1], model.kernel.initial_psi(model.X))
    assert model.prior.components[-1] == priors.LogNormal(c, 1.0)
    p = model.n_params
    psi0 = gb.SliceSampler()._psi0(model, np.random.default_rng(0), 0)
    assert np.array_equal(psi0, model.initial_psi() + 0.1 * np.random.default_rng(0).standard_normal(p))
    psi0 = gb.LatentGibbs(init="prior")._psi0(model, np.random.default_rng(0), 0)
    assert np.array_equal(psi0, model.prior.sample_psi(np.random.default_rng(0)))
    g = gb.LatentGP(X, 10.0 + y, likelihood="gaussian", sample_offset=True)
    assert g.initial_psi()[-1] == pytest.approx(10.0 + y.mean())
    assert g.prior.components[-1] == priors.LogNormal(10.0 + y.mean(), y.std())


def test_methods_that_cannot_sample_m_refuse_naming_those_that_can():
    model = _gaussian_model()
    names = gb.methods(model)
    assert {"aa", "surr", "slice-surr-site", "slice-fixed"} <= set(names)
    assert "nuts-whitened" not in names and "pseudo-marginal" not in names
    for method in ("nuts-whitened", "pseudo-marginal", "nuts-is"):
        with pytest.raises(ValueError, match=rf"method '{method}' cannot sample the constant m of "
                                             r"LatentGP\(sample_offset=True\).*'slice-<representation>'.*'aa' or "
                                             r"'surr'"):
            gb.sample(model, method=method, chains=1, draws=2, progress=False)
    method, why = default_method(model)  # the default is the slice sampler, whatever p
    assert isinstance(method, gb.SliceSampler) and "sample_offset" in why
    X, y = _gaussian_data()
    wide = gb.LatentGP(np.column_stack([X, X**2, np.sin(X)]), y, likelihood=Gaussian(S2), sample_offset=True)
    assert len(wide.param_names) > 3 and isinstance(default_method(wide)[0], gb.SliceSampler)
    with pytest.raises(ValueError, match=r"sample_offset=True needs a likelihood with an offset on f.*the probit "
                                         r"likelihood has none"):
        gb.LatentGP(X, np.where(y > 5, 1, -1), likelihood="probit", sample_offset=True)
    with pytest.raises(TypeError, match=r"sample_offset must be True or False, got 'yes'"):
        gb.LatentGP(X, y, likelihood="gaussian", sample_offset="yes")


def test_gaussian_offset_shifts_every_fit():
    """Gaussian(s2, offset c) is the Gaussian of y - c: densities, exact fits, predictive mean and draws."""
    y, f = np.array([0.3, 1.2, -0.4]), np.array([0.1, 0.5, 0.0])
    a, b = Gaussian(0.7, offset=2.0), Gaussian(0.7)
    assert np.allclose(a.log_lik(y + 2.0, f), b.log_lik(y, f)) and np.allclose(a.d1(y + 2.0, f), b.d1(y, f))
    assert np.allclose(a.tilted_moments(y + 2.0, f, 0.4), b.tilted_moments(y, f, 0.4))
    assert np.allclose(a.site_fit(y + 2.0, 0.5)[1], b.site_fit(y, 0.5)[1])
    assert np.allclose(a.predictive_mean(f, 0.2), f + 2.0)
    assert b.with_offset(2.0) == a and a.with_offset(-2.0) == b
    assert np.allclose(a.sample_targets(np.random.default_rng(1), f), b.sample_targets(np.random.default_rng(1), f) + 2)
    with pytest.raises(ValueError, match="offset must be a finite number"):
        Gaussian(1.0, offset=np.nan)


def test_the_docstring_example_runs():
    for test in doctest.DocTestFinder().find(gb.LatentGP):
        result = doctest.DocTestRunner().run(test)
        assert result.failed == 0
    assert any(t.examples for t in doctest.DocTestFinder().find(gb.LatentGP))
