"""IS-corrected NUTS on the Laplace marginal (gpbayes.mcmc.is_corrected; Vihola, Helske & Franks 2020).

(a) the Laplace log marginal's analytic gradient (R&W Alg. 5.1 through ``kernel.gradient_traces``)
    against central finite differences, probit / logistic / Poisson, isotropic and ARD; EP's (R&W
    eq. 5.27) likewise for the probit;
(b) exactness: the weighted estimates of the posterior of log tau match the exact posterior
    computed by quadrature from the probit marginal (orthant probabilities), on a problem where the
    Laplace approximation alone is detectably wrong (so the test has power against skipping the
    correction), for chains on the Laplace and EP marginals with Laplace and EP importance densities;
(c) ``diagnostics.importance_corrected_summary``: equal weights give the usual bulk ESS; the Monte
    Carlo error of the weighted mean matches the spread over independent replications;
(d) the method through ``gb.sample``: same seed same draws, ``cores=2`` equals ``cores=1``,
    weights recorded, ``gb.summary`` weighted, ``until_converged`` judges the corrected ESS.
"""

import numpy as np
import pytest
from scipy import stats

import gpbayes as gb
import test_pseudo_marginal as T
from gpbayes import diagnostics
from gpbayes.approx import (ep_approximation, ep_log_marginal_and_grad, laplace_approximation,
                            laplace_log_marginal_and_grad)
from gpbayes.estimators import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Logistic, Poisson, Probit
from gpbayes.mcmc import is_corrected, runner
from gpbayes.rng import stream

SEED = 20200401


# ---------------------------------------------------------------------------
# (a) the gradient
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("likelihood", [Probit(), Logistic(), Poisson()], ids=lambda l: l.name)
@pytest.mark.parametrize("ard", [True, False], ids=["ard", "iso"])
def test_laplace_gradient_matches_finite_differences(likelihood, ard):
    rng = np.random.default_rng(3)
    n, d = 30, 3
    X = rng.normal(size=(n, d))
    y = rng.poisson(2.0, size=n).astype(float) if likelihood.name == "poisson" else np.sign(rng.normal(size=n))
    kernel = SquaredExponential(d, ard=ard, nugget=1e-6)
    psi = rng.normal(scale=0.4, size=kernel.n_params)

    def value(p):
        return laplace_approximation(kernel(p, X), y, likelihood, tol=1e-13).log_marginal

    v, g, q = laplace_log_marginal_and_grad(kernel, psi, X, y, likelihood, tol=1e-13)
    assert v == pytest.approx(value(psi), abs=1e-9)
    h = 1e-4  # the value is accurate to ~1e-10 (Newton's tolerance): smaller steps amplify that
    fd = np.array([(value(psi + h * e) - value(psi - h * e)) / (2 * h) for e in np.eye(psi.size)])
    assert np.allclose(g, fd, rtol=1e-4, atol=1e-6), (g, fd)
    # power: with the other sign of the third-derivative term (the implicit dependence of the
    # mode on psi through W) the gradient does not match
    flipped = _FlippedD3(likelihood)
    g_bad = laplace_log_marginal_and_grad(kernel, psi, X, y, flipped, tol=1e-13)[1]
    assert not np.allclose(g_bad, fd, rtol=1e-4, atol=1e-6)
    assert q.n_cubic == q.n_iter + 1 + 2  # Newton's factorisations of B, B^-1, one triangular solve


class _FlippedD3:
    """A likelihood whose third derivative has the wrong sign (everything else delegated)."""

    def __init__(self, lik):
        self._lik = lik

    def __getattr__(self, name):
        return getattr(self._lik, name)

    def d3(self, y, f):
        return -self._lik.d3(y, f)


@pytest.mark.parametrize("ard", [True, False], ids=["ard", "iso"])
def test_ep_gradient_matches_finite_differences(ard):
    rng = np.random.default_rng(4)
    n, d = 30, 3
    X = rng.normal(size=(n, d))
    y = np.sign(rng.normal(size=n))
    kernel = SquaredExponential(d, ard=ard, nugget=1e-6)
    psi = rng.normal(scale=0.4, size=kernel.n_params)

    def value(p):
        return ep_approximation(kernel(p, X), y, tol=1e-13, site_tol=1e-10).log_marginal

    v, g, q = ep_log_marginal_and_grad(kernel, psi, X, y, tol=1e-13)
    assert v == pytest.approx(value(psi), abs=1e-8)
    h = 1e-4
    fd = np.array([(value(psi + h * e) - value(psi - h * e)) / (2 * h) for e in np.eye(psi.size)])
    assert np.allclose(g, fd, rtol=1e-4, atol=1e-6), (g, fd)
    # the per-matrix form of the EP type-II ML agrees
    from gpbayes.classification import ep_log_marginal_and_grad as per_matrix

    assert np.allclose(per_matrix(X, y, kernel, psi, tol=1e-13)[1], g, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------
# (b) exactness against the probit marginal by orthant probabilities
# ---------------------------------------------------------------------------
AMPLITUDE = 9.0  # sigma = 9: the Laplace posterior mean of log tau is off by 0.18 (exact sd 0.92)


class _Scaled:
    """``base`` (T.KERNEL: 1-D, sigma fixed) times a fixed amplitude: the one-parameter kernel of (b)."""

    n_params = 1
    param_names = ["tau"]
    base = T.KERNEL

    def __call__(self, psi, X, X2=None):
        return AMPLITUDE * self.base(psi, X, X2)

    def gradient_traces(self, psi, X, W, K, overwrite_W=False):
        return AMPLITUDE * self.base.gradient_traces(psi, X, W, K / AMPLITUDE)


KERNEL9 = _Scaled()


def _exact_log_marginal(v):
    n = len(T.Y10)
    K = KERNEL9(np.array([v]), T.X10)
    cov = (T.Y10[:, None] * (K + np.eye(n))) * T.Y10[None, :]
    mvn = stats.multivariate_normal(np.zeros(n), cov, abseps=1e-7, releps=1e-4, maxpts=2_000_000, seed=7)
    return float(np.log(mvn.cdf(np.zeros(n))))


@pytest.fixture(scope="module")
def exact9():
    return T.grid_posterior(_exact_log_marginal)


@pytest.fixture(scope="module")
def laplace9():
    return T.grid_posterior(lambda v: laplace_approximation(KERNEL9(np.array([v]), T.X10), T.Y10, T.PROBIT).log_marginal)


def _weighted_z(x, lw, post):
    """(weighted estimate - exact) / its delta-method Monte Carlo error, per statistic."""
    out = {}
    stats_ = {"mean": (x, post["mean"]), "var": ((x - post["mean"]) ** 2, post["var"])}
    for p, q in post["quantiles"].items():
        stats_[f"P(psi<=q{p})"] = ((x <= q).astype(float), p)
    for name, (h, value) in stats_.items():
        s = diagnostics.importance_corrected_summary(h[None, :, None], lw[None, :])
        out[name] = ((s["mean"][0] - value) / s["mcse_mean"][0], s["mean"][0], value, s["mcse_mean"][0], s["ess_mean"][0])
    return out


@pytest.fixture(scope="module", params=[("laplace", "laplace"), ("laplace", "ep"), ("ep", "ep")],
                ids=["la-chain-la-weights", "la-chain-ep-weights", "ep-chain-ep-weights"])
def chain9(request):
    """A chain on the Laplace or EP marginal, weighted with a Laplace or EP importance density."""
    marginal, density = request.param
    logpost = is_corrected.ApproximateLogPosterior(KERNEL9, T.X10, T.Y10, T.PROBIT, T.PRIOR, approximation=marginal)
    est = PseudoMarginalTarget(T.X10, T.Y10, KERNEL9, T.PROBIT, T.PRIOR, approx=density, n_imp=64, warm_start=True)
    spec = is_corrected.chain_spec(np.array([0.0]), logpost, est, n_adapt=300)
    chain = runner.run_spec(stream(SEED, "is-corrected", "exact", marginal, density), spec, n_draws=8000)
    return marginal, chain


def test_weighted_chain_matches_exact_posterior(chain9, exact9, laplace9):
    marginal, chain = chain9
    x = chain.draws[:, 0]
    lw = chain.stats["log_weight"]
    z = _weighted_z(x, lw, exact9)
    report = "\n".join(f"  {k:>14s}: weighted {m: .4f}  exact {v: .4f}  se {se:.4f}  ESS {n:.0f}  z {zz: .2f}"
                       for k, (zz, m, v, se, n) in z.items())
    assert all(abs(zz) < T.Z_CRIT for zz, *_ in z.values()), report
    assert min(n for *_, n in z.values()) > 400, report  # not a vacuous comparison
    if marginal == "laplace":
        # power: the chain itself samples the Laplace posterior, whose mean is off by more than
        # (critical |z| + 1) standard errors of the weighted mean (a bias that large fails the
        # comparison above with probability > 0.84), and the unweighted draws do fail it
        assert abs(laplace9["mean"] - exact9["mean"]) > (T.Z_CRIT + 1) * z["mean"][3], report
        unweighted = (x.mean() - exact9["mean"]) / (x.std() / np.sqrt(diagnostics.ess(x)))
        assert abs(unweighted) > T.Z_CRIT, f"the uncorrected chain already matched (z {unweighted:.2f})\n{report}"
    # every kept draw carries a finite weight and the estimate's cost
    assert np.all(np.isfinite(lw))
    assert np.all(chain.stats["n_cubic"] >= 3)


def test_same_seed_same_weighted_chain():
    def run():
        logpost = is_corrected.ApproximateLogPosterior(KERNEL9, T.X10, T.Y10, T.PROBIT, T.PRIOR)
        est = PseudoMarginalTarget(T.X10, T.Y10, KERNEL9, T.PROBIT, T.PRIOR, n_imp=8, warm_start=True)
        spec = is_corrected.chain_spec(np.array([0.0]), logpost, est, n_adapt=30)
        return runner.run_spec(np.random.default_rng(5), spec, n_draws=40)

    a, b = run(), run()
    assert np.array_equal(a.draws, b.draws)
    assert np.array_equal(a.stats["log_weight"], b.stats["log_weight"])


# ---------------------------------------------------------------------------
# (c) the weighted summary
# ---------------------------------------------------------------------------
def test_equal_weights_give_the_usual_bulk_ess_and_moments():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=(4, 500, 2)), axis=1) * 0.05 + rng.normal(size=(4, 500, 2))
    s = diagnostics.importance_corrected_summary(x, np.zeros((4, 500)))
    for j in range(2):
        assert s["ess_bulk"][j] == pytest.approx(diagnostics.ess(x[:, :, j], method="bulk"), rel=1e-9)
        assert s["ess_mean"][j] == pytest.approx(diagnostics.ess(x[:, :, j], method="mean"), rel=1e-9)
        assert s["mean"][j] == pytest.approx(x[:, :, j].mean())
    assert s["importance_efficiency"] == pytest.approx(1.0)


def test_weighted_mcse_matches_the_spread_over_replications():
    # i.i.d. draws from N(0, 1) weighted to N(0.5, 1): the self-normalised estimate of the mean 0.5;
    # its reported MCSE must match the sd of the estimate over independent replications
    rng = np.random.default_rng(1)
    est, se = [], []
    for _ in range(400):
        x = rng.normal(size=(2, 250))
        lw = 0.5 * x - 0.125
        s = diagnostics.importance_corrected_summary(x[:, :, None], lw)
        est.append(s["mean"][0])
        se.append(s["mcse_mean"][0])
    assert np.mean(est) == pytest.approx(0.5, abs=4 * np.std(est) / np.sqrt(400))
    # the spread's own sampling error with 400 replications is ~3.5 %
    assert np.sqrt(np.mean(np.square(se))) == pytest.approx(np.std(est), rel=0.15)
    # Kish's efficiency of these weights: exp(-0.25) in expectation
    assert s["importance_efficiency"] == pytest.approx(np.exp(-0.25), abs=0.1)


def test_pareto_k_of_the_weights_and_psis_smoothing():
    # weights with a Pareto(1 / xi) tail: k^ estimates xi; smoothing lowers the largest weight's share
    rng = np.random.default_rng(2)
    for xi in (0.3, 0.8):
        lw = np.log(rng.pareto(1.0 / xi, size=(2, 2000)) + 1.0)  # P(w > t) ~ t^(-1 / xi)
        x = rng.normal(size=(2, 2000, 1))
        raw = diagnostics.importance_corrected_summary(x, lw)
        assert raw["pareto_k"] == pytest.approx(xi, abs=0.15)
        smoothed, k = diagnostics.smoothed_log_weights(lw)
        assert k == raw["pareto_k"] and smoothed.shape == lw.shape
        # only the tail is replaced (at most 3 sqrt(S) of the S = 4000 weights), and never above the
        # largest raw weight (PSIS truncates there); the other weights are unchanged up to a common shift
        shift = smoothed.ravel()[np.argmin(lw)] - lw.min()
        changed = ~np.isclose(smoothed - shift, lw, rtol=0, atol=1e-9)
        assert 0 < changed.sum() <= np.ceil(3 * np.sqrt(lw.size))
        assert smoothed.max() - shift <= lw.max() + 1e-9
        psis = diagnostics.importance_corrected_summary(x, lw, smoothing="psis")
        assert abs(psis["mean"][0]) < 4 * psis["mcse_mean"][0]  # x is independent of the weights: mean 0
    with pytest.raises(ValueError, match="smoothing"):
        diagnostics.importance_corrected_summary(x, lw, smoothing="truncate")


def test_summary_refuses_bad_shapes_and_weights():
    with pytest.raises(ValueError, match="log_weights"):
        diagnostics.importance_corrected_summary(np.zeros((2, 10, 1)), np.zeros((2, 9)))
    with pytest.raises(ValueError, match="finite"):
        diagnostics.importance_corrected_summary(np.zeros((2, 10, 1)), np.full((2, 10), np.nan))


# ---------------------------------------------------------------------------
# (d) through gb.sample
# ---------------------------------------------------------------------------
def _classifier(n=25, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return gb.GPClassifier(X, y)


def test_gb_sample_records_weights_and_summary_is_weighted():
    model = _classifier()
    kw = dict(chains=2, draws=40, n_warmup=40, seed=3, progress=False)
    a = gb.sample(model, method=gb.ISCorrectedNUTS(n_imp=8), cores=1, **kw)
    b = gb.sample(model, method="nuts-is", n_imp=8, cores=2, **kw)
    lw = a.sample_stats["log_weight"].values
    assert lw.shape == (2, 40) and np.all(np.isfinite(lw))
    for n in gb.api.hyperparameter_names(a):
        assert np.array_equal(a.posterior[n].values, b.posterior[n].values)
    assert np.array_equal(lw, b.sample_stats["log_weight"].values)
    table = gb.summary(a)
    assert {"mean", "mcse_mean", "ess_bulk", "importance_efficiency", "pareto_k"} <= set(table.columns)
    # the summary is of the posterior group: theta in X's units (units="data"), psi as sampled + the model's shift
    theta = np.exp(gb.api.psi_draws(a).values + model.log_unit_shifts())
    w = np.exp(lw - lw.max())
    expect = (theta * w[..., None]).sum((0, 1)) / w.sum()
    assert np.allclose(table["mean"].values, expect)


def test_until_converged_uses_the_corrected_ess():
    model = _classifier(n=20, d=1, seed=2)
    idata = gb.sample(model, method=gb.ISCorrectedNUTS(n_imp=16), chains=2, n_warmup=100, seed=1, progress=False,
                      cores=1, until_converged={"ess_bulk": 150, "rhat": 1.05, "check_every": 50, "min_draws": 50},
                      budget={"draws": 2000})
    assert idata.sample_stats.attrs["stopped"] == "converged"
    psi = gb.api.psi_draws(idata).values
    s = diagnostics.importance_corrected_summary(psi, idata.sample_stats["log_weight"].values)
    assert np.all(s["ess_bulk"] > 150) and np.all(s["rhat"] < 1.05)


def test_importance_density_default_and_record():
    model = _classifier()
    assert gb.ISCorrectedNUTS().importance_density(model) == "ep"  # the probit offers EP
    logistic = gb.GPClassifier(model.X, model.y, likelihood="logistic")
    assert gb.ISCorrectedNUTS().importance_density(logistic) == "laplace"
    with pytest.raises(ValueError, match="approximation 'ep' is not offered"):
        gb.sample(logistic, method=gb.ISCorrectedNUTS(approximation="ep"), progress=False)
    idata = gb.sample(logistic, method=gb.ISCorrectedNUTS(n_imp=4), chains=1, draws=10, n_warmup=10, seed=0,
                      progress=False)
    assert idata.posterior.attrs["importance_density"] == "laplace"
    assert np.all(np.isfinite(idata.sample_stats["log_weight"].values))


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="n_imp"):
        gb.ISCorrectedNUTS(n_imp=0)
    with pytest.raises(ValueError, match="approximation"):
        gb.ISCorrectedNUTS(approximation="vb")
    with pytest.raises(ValueError, match="mass_adaptation"):
        gb.ISCorrectedNUTS(mass_adaptation="full")
    with pytest.raises(ValueError, match="does not apply"):
        gb.sample(gb.GPRegressor(np.arange(10.0)[:, None], np.arange(10.0)), method="nuts-is", progress=False)
