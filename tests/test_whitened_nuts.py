"""NUTS on (psi, v) jointly, f = L_psi v (gpbayes.mcmc.whitened_nuts, ``gb.WhitenedNUTS``).

(a) the gradient of the whitened joint log density (Cholesky reverse mode with a rank-one adjoint)
    against central finite differences: probit, logistic, Poisson with per-bin exposure, isotropic and
    ARD; its O(n^3) operations counted;
(b) exactness: the marginal posterior of log tau matches the exact posterior computed by quadrature
    from the probit marginal (orthant probabilities), on the sigma = 9 problem of
    test_is_corrected.py, where the Laplace approximation is detectably wrong;
(c) a Geweke joint-distribution test of the NUTS transition on (psi, v) (fixed step size and mass,
    the kernel the warm-up freezes) on test_latent_gibbs.py's problem;
(d) through ``gb.sample``: same seed same draws, ``cores=2`` equals ``cores=1``, f recorded, refusals.
"""

import functools
import math

import numpy as np
import pytest

import geweke
import gpbayes as gb
import test_is_corrected as IS
import test_latent_gibbs as LG
import test_pseudo_marginal as T
from gpbayes import diagnostics, linalg
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Logistic, Poisson, Probit
from gpbayes.mcmc import hmc, nuts, runner, whitened_nuts
from gpbayes.priors import default_kernel_prior
from gpbayes.rng import stream
from test_is_corrected import exact9, laplace9  # noqa: F401 (fixtures: the exact and Laplace posteriors)

SEED = 20100301


# ---------------------------------------------------------------------------
# (a) the gradient
# ---------------------------------------------------------------------------
def _problem(likelihood, ard, n=14, d=3, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    if isinstance(likelihood, Poisson):
        y = rng.poisson(np.exp(f + 0.3)).astype(float)
    else:
        y = np.where(f + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    kernel = SquaredExponential(d, ard=ard, nugget=1e-6)
    return whitened_nuts.WhitenedJointPosterior(kernel, X, y, likelihood, default_kernel_prior(kernel))


@pytest.mark.parametrize("likelihood", [Probit(), Logistic(), Poisson(exposure=np.linspace(0.5, 2.0, 14), offset=0.2)],
                         ids=["probit", "logistic", "poisson-exposure"])
@pytest.mark.parametrize("ard", [True, False], ids=["ard", "iso"])
def test_gradient_matches_finite_differences(likelihood, ard):
    target = _problem(likelihood, ard)
    rng = np.random.default_rng(1)
    x = np.concatenate([0.3 * rng.standard_normal(target.p), rng.standard_normal(target.n)])
    with linalg.count_ops() as ops:
        value, grad = target(x)
    # 1 Cholesky + 1 triangular inverse + 1 triangular product per value and gradient
    assert (ops.cubic, ops.cholesky, ops.inverse, ops.triangular) == (3, 1, 1, 1)
    assert value == pytest.approx(target.log_density(x), rel=1e-12, abs=1e-12)
    h = 1e-5
    fd = np.empty(target.dim)
    for j in range(target.dim):
        e = np.zeros(target.dim)
        e[j] = h
        fd[j] = (target.log_density(x + e) - target.log_density(x - e)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_value_is_the_log_joint():
    target = _problem(Probit(), True)
    rng = np.random.default_rng(2)
    psi, v = 0.2 * rng.standard_normal(target.p), rng.standard_normal(target.n)
    L = np.linalg.cholesky(target.kernel(psi, target.X))
    f = L @ v
    from scipy import stats

    expected = (target.prior.log_density(psi) + np.sum(stats.norm.logcdf(target.y * f))
                + stats.multivariate_normal(np.zeros(target.n), np.eye(target.n)).logpdf(v))
    assert target(np.concatenate([psi, v]))[0] == pytest.approx(expected, rel=1e-10)
    np.testing.assert_allclose(target.latent(np.concatenate([psi, v])), f, rtol=1e-10, atol=1e-12)


def test_outside_the_support_is_minus_infinity():
    target = _problem(Probit(), False)
    x = np.zeros(target.dim)
    x[0] = 800.0  # tau = e^800: K overflows
    value, grad = target(x)
    assert value == -math.inf and np.all(np.isnan(grad))
    with pytest.raises(ValueError, match=r"position: expected shape \(16,\)"):
        target(np.zeros(3))


# ---------------------------------------------------------------------------
# (b) exactness against the probit marginal by orthant probabilities
# ---------------------------------------------------------------------------
class _Scaled9(IS._Scaled):
    """test_is_corrected's sigma = 9 kernel with the latent models' relative nugget 1e-6.

    Without one, K is singular at long lengthscales (its smallest eigenvalues ~1e-14 at psi = 2),
    the factor f = L v does not exist and the target refuses the point (a truncated posterior:
    measured, the variance of log tau 8 % low).  The nugget moves log p(y | psi) by O(1e-6), far
    below the Monte Carlo errors here, so test_is_corrected's exact posterior (no nugget) is used.
    """

    base = SquaredExponential(1, fixed_amplitude=True, nugget=1e-6)


KERNEL9 = _Scaled9()


@pytest.fixture(scope="module")
def chain9():
    target = whitened_nuts.WhitenedJointPosterior(KERNEL9, T.X10, T.Y10, T.PROBIT, T.PRIOR)
    spec = whitened_nuts.chain_spec(np.zeros(target.dim), target, n_adapt=500)
    return runner.run_spec(stream(SEED, "whitened-nuts", "exact"), spec, n_draws=6000)


def test_chain_matches_exact_posterior(chain9, exact9, laplace9):
    exact = exact9
    x = chain9.draws[:, 0]
    lw = np.zeros_like(x)  # equal weights: the usual estimator and its MCSE
    z = IS._weighted_z(x, lw, exact)
    report = "\n".join(f"  {k:>14s}: chain {m: .4f}  exact {v: .4f}  se {se:.4f}  ESS {n:.0f}  z {zz: .2f}"
                       for k, (zz, m, v, se, n) in z.items())
    assert all(abs(zz) < T.Z_CRIT for zz, *_ in z.values()), report
    assert min(n for *_, n in z.values()) > 400, report  # not a vacuous comparison
    # power: the Laplace posterior's mean is off by more than (critical |z| + 1) standard errors
    assert abs(laplace9["mean"] - exact["mean"]) > (T.Z_CRIT + 1) * z["mean"][3], report
    assert chain9.extra["f"].shape == (6000, 10)


# ---------------------------------------------------------------------------
# (c) Geweke
# ---------------------------------------------------------------------------
GW_STEP_SIZE = 0.35


def _gw_transition(likelihood):
    """Two frozen NUTS transitions on (psi, v | y) from (psi, f) (the kept kernel of a chain, fixed step
    size and identity mass) on the posterior with ``likelihood``."""

    def transition(rng, params, y):
        psi, f = params
        target = whitened_nuts.WhitenedJointPosterior(LG.GW_KERNEL, LG.GW_X, y, likelihood, LG.GW_PRIOR)
        state = nuts.init(whitened_nuts.whitened_start(target, psi, f), target)
        mass = hmc.mass_matrix("identity", dim=target.dim)
        for _ in range(2):
            state, _ = nuts.step(rng, state, target, GW_STEP_SIZE, mass, 10, "multinomial")
        return state.position[: target.p].copy(), target.latent(state.position)

    return transition


@functools.lru_cache(maxsize=1)
def _gw_marginal_conditional():
    return geweke.marginal_conditional(np.random.default_rng(42), LG.gw_params, LG.gw_data, LG.gw_test_fn, 20000)


def _gw_compare(likelihood):
    mc = _gw_marginal_conditional()
    sc = geweke.successive_conditional(np.random.default_rng(7), LG.gw_params, LG.gw_data, _gw_transition(likelihood),
                                       LG.gw_test_fn, 6000)
    return geweke.compare(mc, sc, names=LG.GW_NAMES, alpha=LG.GW_ALPHA)


def test_geweke_joint_distribution():
    res = _gw_compare(LG.GW_LIK)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()


class _Tempered:
    """A likelihood raised to the power 1/2 (value and derivative): a target that is not the posterior."""

    def __init__(self, lik):
        self.lik = lik

    def check_targets(self, y):
        return self.lik.check_targets(y)

    def log_lik(self, y, f):
        return 0.5 * self.lik.log_lik(y, f)

    def d1(self, y, f):
        return 0.5 * self.lik.d1(y, f)


def test_geweke_detects_a_wrong_target():
    """Power: the same test rejects the transition when it samples p(y | f)^(1/2) instead of p(y | f).

    (A wrong *gradient* alone is not such a bug: leapfrog with any vector field is volume-preserving
    and reversible, and the acceptance uses the true density, so the chain stays exact, only slower;
    the gradient is checked against finite differences in (a).)
    """

    assert _gw_compare(_Tempered(LG.GW_LIK)).reject


# ---------------------------------------------------------------------------
# (d) through gb.sample
# ---------------------------------------------------------------------------
def _classifier(n=25, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return gb.GPClassifier(X, np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1))


def test_gb_sample_same_seed_same_draws_and_cores():
    model = _classifier()
    kw = dict(method="nuts-whitened", chains=2, draws=30, n_warmup=40, seed=3, progress=False)
    a = gb.sample(model, cores=1, **kw)
    b = gb.sample(model, cores=1, **kw)
    c = gb.sample(model, cores=2, **kw)
    for other in (b, c):
        for name in model.hyperparameter_names + ["f"]:
            assert np.array_equal(a.posterior[name].values, other.posterior[name].values), name
    assert a.posterior["f"].dims == ("chain", "draw", "obs")
    assert a.posterior.attrs["method"] == "nuts-whitened"
    assert "diverging" in a.sample_stats and "log_weight" not in a.sample_stats
    # f is L_psi v at the draw's psi: its prior scale follows the draw's amplitude
    assert np.all(np.isfinite(a.posterior["f"].values))


def test_poisson_with_per_bin_exposure_runs():
    rng = np.random.default_rng(4)
    X = np.linspace(0, 1, 20)[:, None]
    exposure = np.linspace(0.5, 2.0, 20)
    model = gb.PoissonGP(X, rng.poisson(3 * exposure), exposure=exposure)
    assert gb.WhitenedNUTS().why_not(model) is None
    idata = gb.sample(model, method=gb.WhitenedNUTS(max_tree_depth=5), chains=1, draws=20, n_warmup=30, seed=1,
                      progress=False, cores=1)
    assert idata.posterior["f"].shape == (1, 20, 20)


def test_bad_options_and_models_are_named():
    with pytest.raises(ValueError, match=r"WhitenedNUTS\.max_tree_depth must be an integer >= 1, got 0"):
        gb.WhitenedNUTS(max_tree_depth=0)
    with pytest.raises(ValueError, match=r"WhitenedNUTS\.mass_adaptation must be one of"):
        gb.WhitenedNUTS(mass_adaptation="full")
    reg = gb.GPRegressor(np.random.default_rng(0).standard_normal((10, 2)), np.arange(10.0))
    assert "does not apply to GPRegressor" in gb.WhitenedNUTS().why_not(reg)
    with pytest.raises(ValueError, match="needs a warm-up"):
        gb.sample(_classifier(), method="nuts-whitened", chains=1, draws=5, n_warmup=0, progress=False, cores=1)


# ---------------------------------------------------------------------------
# (e) logistic and Poisson: both exact gradient samplers against the exact posterior
# ---------------------------------------------------------------------------
# No orthant formula here: log p(y | psi) at each of grid_posterior's 40 nodes is the mean of two
# independent importance-sampling estimates of 100,000 draws each from a Student t around the Laplace
# approximation (the two must differ by < 0.05 at every node), on the sigma = 9 kernel of (b).  The power of this
# comparison against an approximate posterior is shown in (b) and in test_is_corrected.py; here the
# Laplace posterior mean is 1-3 standard errors away, so it is not asserted.
LIKELIHOODS_E = {"logistic": (Logistic(), T.Y10),
                 "poisson": (Poisson(offset=0.5), np.array([0, 1, 3, 6, 2, 1, 0, 0, 4, 9], dtype=float))}
N_CASES_E = 4
Z_CRIT_E = T.stats.norm.ppf(1 - 0.01 / (2 * 5 * N_CASES_E))


def _t_is_log_marginal(likelihood, y, seed, n_draws=100_000, df=4.0, inflation=1.5):
    """psi -> log p(y | psi) by importance sampling from a multivariate Student t (``df`` degrees of
    freedom) centred at the Laplace mode with scale ``inflation`` x the Laplace covariance.

    Its polynomial tails are heavier than the posterior's Gaussian ones, so the weights are bounded.
    With the Laplace Gaussian itself (F&G eq. 25) a zero count makes their variance infinite: the
    posterior's left tail is then the prior's N(0, 9), heavier than the Laplace Gaussian's. Two such
    estimates with 200,000 draws differed by 0.12; a prior-and-Laplace mixture still differed by 0.09.
    Two t estimates of 100,000 draws differ by < 0.02 at every node."""
    from scipy import stats
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)

    def log_marginal(v):
        K = KERNEL9(np.array([v]), T.X10)
        q = IS.laplace_approximation(K, y, likelihood)
        sw = np.sqrt(q.w)
        B = np.eye(len(y)) + sw[:, None] * K * sw[None, :]
        A = sw[:, None] * K
        Sigma = K - A.T @ np.linalg.solve(B, A)  # (K^-1 + W)^-1
        proposal = stats.multivariate_t(q.m, inflation * 0.5 * (Sigma + Sigma.T), df=df, seed=rng)
        f = proposal.rvs(size=n_draws)
        log_w = (np.sum(likelihood.log_lik(y[None, :], f), axis=1)
                 + stats.multivariate_normal(np.zeros(len(y)), K).logpdf(f) - proposal.logpdf(f))
        return float(logsumexp(log_w) - np.log(n_draws))

    return log_marginal


@pytest.fixture(scope="module", params=list(LIKELIHOODS_E))
def exact_e(request):
    likelihood, y = LIKELIHOODS_E[request.param]
    a, b = _t_is_log_marginal(likelihood, y, 1), _t_is_log_marginal(likelihood, y, 2)
    values = {}

    def mean_of_two(v):
        values[v] = (a(v), b(v))
        return 0.5 * sum(values[v])

    exact = T.grid_posterior(mean_of_two)
    gap = max(abs(x - z) for x, z in values.values())
    assert gap < 0.05, f"the reference marginal is noisy: two estimates differ by {gap:.3g}"
    return request.param, exact


@pytest.mark.parametrize("method", ["nuts-whitened", "nuts-is"])
def test_logistic_and_poisson_match_the_exact_posterior(exact_e, method):
    name, exact = exact_e
    likelihood, y = LIKELIHOODS_E[name]
    rng = stream(SEED, "whitened-nuts", "exact-e", name, method)
    if method == "nuts-whitened":
        target = whitened_nuts.WhitenedJointPosterior(KERNEL9, T.X10, y, likelihood, T.PRIOR)
        spec = whitened_nuts.chain_spec(np.zeros(target.dim), target, n_adapt=400)
        chain = runner.run_spec(rng, spec, n_draws=5000)
        lw = np.zeros(chain.n_draws)
    else:
        from gpbayes.estimators import PseudoMarginalTarget
        from gpbayes.mcmc import is_corrected

        logpost = is_corrected.ApproximateLogPosterior(KERNEL9, T.X10, y, likelihood, T.PRIOR)
        est = PseudoMarginalTarget(T.X10, y, KERNEL9, likelihood, T.PRIOR, n_imp=64, warm_start=True)
        spec = is_corrected.chain_spec(np.array([0.0]), logpost, est, n_adapt=300)
        chain = runner.run_spec(rng, spec, n_draws=6000)
        lw = chain.stats["log_weight"]
        # the weights' Pareto k (PSIS diagnostic) stays below 0.7, where weighted estimates are reliable;
        # measured 0.63 on the Poisson problem: with zero counts the Laplace importance density of F&G
        # eq. 25 is lighter-tailed than the posterior, so p~ has infinite variance (see _t_is_log_marginal)
        k = float(diagnostics.importance_corrected_summary(chain.draws[None, :, :1], lw[None, :])["pareto_k"])
        assert k < 0.7, f"{name}: Pareto k of the weights {k:.2f}"
    z = IS._weighted_z(chain.draws[:, 0], lw, exact)
    report = name + "\n" + "\n".join(
        f"  {k:>14s}: estimate {m: .4f}  exact {v: .4f}  se {se:.4f}  ESS {n:.0f}  z {zz: .2f}"
        for k, (zz, m, v, se, n) in z.items())
    assert all(abs(zz) < Z_CRIT_E for zz, *_ in z.values()), report
    # not a vacuous comparison (the variance of the Poisson nuts-is case has the heavy-tailed weights'
    # lowest ESS: 257 of 6,000 draws)
    assert min(n for *_, n in z.values()) > 200, report


def test_uneven_importance_weights_point_to_the_whitened_sampler():
    """gb.sample warns when nuts-is's weights keep little information (api.LOW_IMPORTANCE_EFFICIENCY)."""
    import warnings

    from gpbayes import api

    model = _classifier()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # even weights here: no warning
        warnings.simplefilter("ignore", gb.NotConvergedWarning)  # (80 draws: short of the stop rule's ESS 400)
        idata = gb.sample(model, method=gb.ISCorrectedNUTS(n_imp=16), chains=2, draws=40, n_warmup=40, seed=2,
                          progress=False, cores=1)
    assert float(diagnostics.importance_corrected_summary(
        gb.api.psi_draws(idata).values, idata.sample_stats["log_weight"].values)["importance_efficiency"]) > 0.5
    lw = idata.sample_stats["log_weight"]
    lw[0, 0] = lw.max() + 6.0  # one draw carries nearly all the weight
    with pytest.warns(RuntimeWarning, match=r"keep \d+% of the draws' information .* gb\.WhitenedNUTS\(\)"):
        api._warn_if_weights_uneven(idata)
