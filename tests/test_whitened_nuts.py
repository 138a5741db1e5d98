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

import math

import numpy as np
import pytest

import geweke
import gpbayes as gb
import test_is_corrected as IS
import test_latent_gibbs as LG
import test_pseudo_marginal as T
from gpbayes import linalg
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
@pytest.fixture(scope="module")
def chain9():
    target = whitened_nuts.WhitenedJointPosterior(IS.KERNEL9, T.X10, T.Y10, T.PROBIT, T.PRIOR)
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


def _gw_transition(rng, params, y):
    """Two frozen NUTS transitions on (psi, v | y) from (psi, f): the kept kernel of a chain."""
    psi, f = params
    target = whitened_nuts.WhitenedJointPosterior(LG.GW_KERNEL, LG.GW_X, y, LG.GW_LIK, LG.GW_PRIOR)
    state = nuts.init(whitened_nuts.whitened_start(target, psi, f), target)
    mass = hmc.mass_matrix("identity", dim=target.dim)
    for _ in range(2):
        state, _ = nuts.step(rng, state, target, GW_STEP_SIZE, mass, 10, "multinomial")
    return state.position[: target.p].copy(), target.latent(state.position)


def test_geweke_joint_distribution():
    """Checked on 4 other seeds while writing: no rejection."""
    mc = geweke.marginal_conditional(np.random.default_rng(42), LG.gw_params, LG.gw_data, LG.gw_test_fn, 20000)
    sc = geweke.successive_conditional(np.random.default_rng(7), LG.gw_params, LG.gw_data, _gw_transition,
                                       LG.gw_test_fn, 6000)
    res = geweke.compare(mc, sc, names=LG.GW_NAMES, alpha=LG.GW_ALPHA)
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

    def transition(rng, params, y):
        psi, f = params
        target = whitened_nuts.WhitenedJointPosterior(LG.GW_KERNEL, LG.GW_X, y, _Tempered(LG.GW_LIK), LG.GW_PRIOR)
        state = nuts.init(whitened_nuts.whitened_start(target, psi, f), target)
        mass = hmc.mass_matrix("identity", dim=target.dim)
        for _ in range(2):
            state, _ = nuts.step(rng, state, target, GW_STEP_SIZE, mass, 10, "multinomial")
        return state.position[: target.p].copy(), target.latent(state.position)

    mc = geweke.marginal_conditional(np.random.default_rng(42), LG.gw_params, LG.gw_data, LG.gw_test_fn, 20000)
    sc = geweke.successive_conditional(np.random.default_rng(7), LG.gw_params, LG.gw_data, transition,
                                       LG.gw_test_fn, 6000)
    assert geweke.compare(mc, sc, names=LG.GW_NAMES, alpha=LG.GW_ALPHA).reject


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
