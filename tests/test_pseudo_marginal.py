"""Pseudo-marginal MH for GP classification (F&G 2014 Alg. 1, Sec. 4.4 run).

(a) the PM chain (LA and EP importance densities, N_imp = 1) samples the exact
    posterior of log tau, computed by quadrature from the exact probit
    marginal p(y | theta) = P(D z > 0), z ~ N(0, K + I);
(b) Geweke joint-distribution test of the PM kernel on the extended space
    (psi, f), f the importance sample held by the chain;
(c) the stored estimate is never recomputed, and with many importance
    samples the acceptance rate is that of MH on the exact marginal;
(d) same seed, same chain bit for bit;
(e) the adaptive phase sees only the deterministic approximation, and the
    proposal is frozen afterwards.

The model throughout: 1-D inputs, sigma = 1 fixed (amplitude-free F&G kernel),
psi = log tau with tau ~ Gamma(1, 1/sqrt(d)) = Gamma(1, 1) (F&G Sec. 4.2).
sigma = 1 keeps the importance weights of both approximations of finite
variance over the posterior mass (D (K^-1 - W) D copositive; with sigma >= 2
it is not near tau ~ 1 and the N_imp = 1 chains become heavy-tailed, which
breaks the CLT that the Monte Carlo error bars below rely on).
"""

import copy

import numpy as np
import pytest
from scipy import stats
from scipy.interpolate import CubicSpline
from scipy.special import log_ndtr

import geweke
from gpbayes import linalg
from gpbayes.approx import laplace_approximation
from gpbayes.diagnostics import ess
from gpbayes.estimators import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.mcmc.runner import run_chain
from gpbayes.mcmc import pseudo_marginal as pm
from gpbayes.mcmc import random_walk
from gpbayes.priors import Gamma, IndependentPrior
from gpbayes.rng import stream

SEED = 20140404
PROBIT = Probit()
KERNEL = SquaredExponential(1, fixed_amplitude=True)  # sigma = 1, psi = (log tau,)
PRIOR = IndependentPrior((Gamma(1.0, 1.0 / np.sqrt(1.0)),))  # F&G: shape 1, rate 1/sqrt(d)

# the data of (a): 10 points, three blocks of labels
X10 = np.linspace(-4.0, 4.0, 10)[:, None]
Y10 = np.array([1, 1, 1, -1, -1, -1, -1, 1, 1, 1], dtype=float)


def make_target(approx="laplace", n_imp=1, X=X10, y=Y10, **kw):
    return PseudoMarginalTarget(X, y, KERNEL, PROBIT, PRIOR, approx=approx, n_imp=n_imp, **kw)


# ---------------------------------------------------------------------------
# the exact posterior of psi by quadrature
# ---------------------------------------------------------------------------
def exact_log_marginal(psi, X, y):
    """log P(D z > 0), z ~ N(0, K + I): the probit marginal (R&W eq. 3.82 style)."""
    n = len(y)
    K = KERNEL(np.array([psi]), X)
    cov = (y[:, None] * (K + np.eye(n))) * y[None, :]
    mvn = stats.multivariate_normal(np.zeros(n), cov, abseps=1e-7, releps=1e-4,
                                    maxpts=2_000_000, seed=7)
    return float(np.log(mvn.cdf(np.zeros(n))))


def grid_posterior(log_lik_fn):
    """Normalised posterior of psi on a fine grid from log p(y|psi) at 40 nodes.

    Below psi = -6 the inputs (spacing 0.89) are independent to machine
    precision (exp(-0.5 (0.89 / e^-6)^2) = 0), so log p(y|psi) is constant
    there; above 3.5 the prior tail exp(psi - e^psi) is < e^-29.
    """
    nodes = np.linspace(-6.0, 3.5, 40)
    spline = CubicSpline(nodes, [log_lik_fn(v) for v in nodes])
    g = np.linspace(-16.0, 3.5, 6001)
    ll = np.where(g < nodes[0], spline(nodes[0]), spline(np.minimum(g, nodes[-1])))
    lp = ll + PRIOR.components[0].log_density(g)
    dens = np.exp(lp - lp.max())
    dens /= np.trapezoid(dens, g)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(g))])
    mean = np.trapezoid(g * dens, g)
    var = np.trapezoid((g - mean) ** 2 * dens, g)
    quantiles = {p: float(np.interp(p, cdf, g)) for p in (0.1, 0.5, 0.9)}
    return dict(grid=g, density=dens, log_density=lp, mean=mean, var=var, quantiles=quantiles)


@pytest.fixture(scope="module")
def exact():
    return grid_posterior(lambda v: exact_log_marginal(v, X10, Y10))


def z_scores(x, post):
    """(chain estimate - exact) / (Monte Carlo s.e. from the chain's ESS) per statistic."""
    stats_ = {"mean": (x, post["mean"]), "var": ((x - post["mean"]) ** 2, post["var"])}
    for p, q in post["quantiles"].items():
        stats_[f"P(psi<=q{p})"] = ((x <= q).astype(float), p)
    out = {}
    for name, (h, value) in stats_.items():
        n_eff = ess(h)
        se = h.std(ddof=1) / np.sqrt(n_eff)
        out[name] = ((h.mean() - value) / se, h.mean(), value, se, n_eff)
    return out


def test_exact_marginal_reduces_to_independent_probits():
    # sanity of the reference: far apart inputs -> p(y) = prod Phi(0) = 2^-n
    X = np.array([[0.0], [30.0], [60.0]])
    y = np.array([1.0, -1.0, 1.0])
    assert exact_log_marginal(0.0, X, y) == pytest.approx(3 * np.log(0.5), abs=1e-6)


# ---------------------------------------------------------------------------
# (a) PM-MH samples the exact posterior
# ---------------------------------------------------------------------------
N_STATS, N_CASES = 5, 2
Z_CRIT = stats.norm.ppf(1 - 0.01 / (2 * N_STATS * N_CASES))  # Bonferroni, alpha = 0.01


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_pm_chain_samples_exact_posterior(approx, exact):
    target = make_target(approx, n_imp=1)
    out = pm.run_chain(
        stream(SEED, "exact-posterior", approx), target, np.array([0.0]),
        n_adapt=600, n_burn=300, n_draws=12_000, proposal_cov=np.eye(1),
    )
    x = out.draws[:, 0]
    z = z_scores(x, exact)
    report = "\n".join(
        f"  {k:>14s}: chain {m: .4f}  exact {v: .4f}  se {se:.4f}  ESS {n:.0f}  z {zz: .2f}"
        for k, (zz, m, v, se, n) in z.items()
    )
    assert all(abs(zz) < Z_CRIT for zz, *_ in z.values()), f"{approx}:\n{report}"
    # the comparison has power: ESS is large, and a chain that sampled the
    # prior instead (tau ~ Exp(1), so P(psi <= q) = 1 - exp(-e^q)) would be
    # off by more than (critical |z| + 2) standard errors in the mean and
    # the lower tail probability (the flipped-label test below is a subtler
    # alternative)
    assert min(n for *_, n in z.values()) > 900, report
    prior_mean = -np.euler_gamma  # E log tau for tau ~ Exp(1)
    assert abs(exact["mean"] - prior_mean) > (Z_CRIT + 2) * z["mean"][3], report
    prior_p = 1.0 - np.exp(-np.exp(exact["quantiles"][0.1]))
    assert abs(prior_p - 0.1) > (Z_CRIT + 2) * z["P(psi<=q0.1)"][3], report
    # the chain really ran as F&G's: N_imp = 1 estimate stored, n_cubic counted
    assert 0.1 < out.stats["accepted"].mean() < 0.4
    assert np.all(out.stats["n_cubic"] >= 2)  # Cholesky of K + at least one LA/EP factorisation


def test_flipped_label_posterior_is_distinguishable(exact):
    # power check of the statistic used above: flipping one label in the
    # middle block (an extra sign change, so shorter length-scales) moves the
    # exact posterior mean of log tau by ~0.29, more than twice the critical
    # |z| times the standard error of an ESS = 1500 chain: a sampler with that
    # much bias fails (a); flipping an end label moves it by only ~0.004-0.02
    y = Y10.copy()
    y[4] = 1.0
    other = grid_posterior(lambda v: exact_log_marginal(v, X10, y))
    se = np.sqrt(exact["var"] / 1500)
    assert abs(other["mean"] - exact["mean"]) > 2 * Z_CRIT * se, (other["mean"], exact["mean"])


# ---------------------------------------------------------------------------
# (b) Geweke joint-distribution test on the extended space (psi, f)
# ---------------------------------------------------------------------------
# For N_imp = 1 the PM chain is MH on (psi, f) with proposal
# q(psi' | psi) q(f' | y, psi') and target p(psi) p(f | psi) p(y | f) / p(y)
# (F&G Sec. 3.3.2): the joint of (psi, f, y) is the model's own.  So the
# successive-conditional simulator alternates PM steps on (psi, f) with
# y ~ p(y | f) (f the importance sample of the current point, recovered
# exactly below), after which the stored estimate is the importance weight
# of the same f under the new y -- a function of the state, not a re-draw.
XG = np.linspace(-2.0, 2.0, 5)[:, None]
GEWEKE_FACTOR = np.array([[1.5]])


class RecordingTarget:
    """Wraps a PseudoMarginalTarget and recovers the importance sample of each call.

    The target draws its N_imp = 1 sample as f = q.map_normals(z1, z2) from
    the first 2n standard normals of the generator it is given
    (``importance_log_weights``); with the generator's state saved at the
    call, the same f is rebuilt, and its importance weight is checked against
    the value returned (so a change of that draw order fails loudly here).
    """

    def __init__(self, inner):
        self.inner = inner
        self.approx = inner.approx
        self.samples = []

    def __call__(self, psi, rng):
        saved = copy.deepcopy(rng.bit_generator.state)
        value = self.inner(psi, rng)
        q = self.inner.last_approximation
        replay = np.random.Generator(np.random.PCG64())
        replay.bit_generator.state = saved
        n = q.n
        f = q.map_normals(replay.standard_normal((n, 1)), replay.standard_normal((n, 1)))[:, 0]
        expected = log_importance_weight(q, f, self.inner.y) + PRIOR.log_density(psi)
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-9), "importance sample not recovered"
        self.samples.append(f)
        return value

    def approx_log_posterior(self, psi):
        return self.inner.approx_log_posterior(psi)


def log_importance_weight(q, f, y):
    """log p(y | f) + log N(f | 0, K) - log q(f), K and its factor from q."""
    u = linalg.solve_triangular(q.K_chol, f, lower=True)
    log_prior_f = -0.5 * (u @ u + linalg.logdet_from_cholesky(q.K_chol) + len(f) * np.log(2 * np.pi))
    return float(np.sum(log_ndtr(y * f)) + log_prior_f - q.log_density(f))


def covariance_as_target_builds_it(psi):
    K = KERNEL(np.array([psi]), XG)
    with linalg.count_ops() as c:
        L = linalg.cholesky(K, name="K")
    if c.jitter_events:  # as PseudoMarginalTarget: the model's K is then K + jitter I
        K.flat[:: K.shape[0] + 1] += c.max_jitter
    return K, L


def simulate_params(rng):
    psi = float(PRIOR.sample_psi(rng)[0])
    K, L = covariance_as_target_builds_it(psi)
    return psi, L @ rng.standard_normal(K.shape[0])


def simulate_data(rng, params):
    _, f = params
    return np.where(rng.uniform(size=f.shape) < stats.norm.cdf(f), 1.0, -1.0)


def pm_transition(n_steps):
    def transition(rng, params, y):
        psi, f = params
        # stored estimate of the current state under the current data
        K, L = covariance_as_target_builds_it(psi)
        q = laplace_approximation(K, y, PROBIT, K_chol=L)
        stored = log_importance_weight(q, f, y) + PRIOR.log_density(np.array([psi]))
        target = RecordingTarget(make_target("laplace", 1, X=XG, y=y))
        state = random_walk.RWMHState(np.array([psi]), stored)
        chain = run_chain(rng, lambda r, st: random_walk.step(r, st, target, GEWEKE_FACTOR), state, n_draws=n_steps)
        state = chain.state
        assert len(target.samples) == n_steps  # one estimate per step, none for the current point
        acc = np.flatnonzero(chain.stats["accepted"])
        if acc.size:
            f = target.samples[acc[-1]]
        return float(state.position[0]), f

    return transition


def geweke_functions(params, y):
    psi, f = params
    agreement = np.mean(y[1:] * y[:-1])  # smooth labels <-> long length-scale
    return [psi, psi * psi, psi * agreement, np.mean(f * f)]


GEWEKE_NAMES = ("psi", "psi^2", "psi*agree(y)", "mean f^2")


def test_geweke_pm_kernel():
    mc = geweke.marginal_conditional(
        stream(SEED, "geweke", "mc"), simulate_params, simulate_data, geweke_functions, 4000
    )
    sc = geweke.successive_conditional(
        stream(SEED, "geweke", "sc"), simulate_params, simulate_data, pm_transition(2),
        geweke_functions, 4000,
    )
    res = geweke.compare(mc, sc, names=GEWEKE_NAMES, alpha=0.01)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()
    # power: the successive-conditional standard error of E psi is small
    # compared with the prior's sd of psi (pi / sqrt 6 = 1.28)
    assert res.se_sc[0] < 0.06, res.summary()


# ---------------------------------------------------------------------------
# (c) stored estimate; acceptance with many importance samples
# ---------------------------------------------------------------------------
class SpyTarget:
    """Records every evaluation, noisy or deterministic, in call order."""

    def __init__(self, inner):
        self.inner = inner
        self.approx = inner.approx
        self.calls = []  # (kind, psi, value)

    def __call__(self, psi, rng):
        value = self.inner(psi, rng)
        self.calls.append(("noisy", np.array(psi), value))
        return value

    def approx_log_posterior(self, psi):
        value = self.inner.approx_log_posterior(psi)
        self.calls.append(("deterministic", np.array(psi), value))
        return value


def test_stored_estimate_is_never_recomputed():
    spy = SpyTarget(make_target("laplace", n_imp=1))
    n_adapt, n_burn, n_draws = 50, 30, 400
    out = pm.run_chain(stream(SEED, "stored"), spy, np.array([0.0]), n_adapt=n_adapt,
                          n_burn=n_burn, n_draws=n_draws, proposal_cov=np.eye(1))
    noisy = [(p, v) for kind, p, v in spy.calls if kind == "noisy"]
    # one estimate to start phase 2, then exactly one per iteration (at the proposal)
    assert len(noisy) == 1 + n_burn + n_draws
    assert out.params["init_log_density"] == noisy[0][1]
    kept = noisy[1 + n_burn:]
    np.testing.assert_array_equal(out.stats["proposal_lp"], [v for _, v in kept])
    acc = out.stats["accepted"]
    assert 0 < acc.sum() < n_draws
    # accepted: the stored value is the estimate made at the proposal
    np.testing.assert_array_equal(out.stats["lp"][acc], out.stats["proposal_lp"][acc])
    np.testing.assert_array_equal(out.draws[acc, 0], [kept[i][0][0] for i in np.flatnonzero(acc)])
    # rejected: position and stored value are carried over unchanged
    rej = np.flatnonzero(~acc[1:]) + 1
    np.testing.assert_array_equal(out.stats["lp"][rej], out.stats["lp"][rej - 1])
    np.testing.assert_array_equal(out.draws[rej], out.draws[rej - 1])
    # and the estimates are noisy: re-estimating at the same point gives another value
    rng = np.random.default_rng(0)
    psi = out.draws[-1]
    again = [spy.inner(psi, rng) for _ in range(3)]
    assert len(set(again + [out.stats["lp"][-1]])) == 4
    # acceptance probabilities are those of the stored values
    ratio = np.exp(out.stats["proposal_lp"][1:] - out.stats["lp"][:-1])
    np.testing.assert_allclose(out.stats["acceptance_rate"][1:], np.minimum(1.0, ratio), rtol=1e-12)


def exact_mh_acceptance(post, scale):
    """E over pi(x) q(x'|x) of min(1, pi(x')/pi(x)) by 2-D quadrature on the grid."""
    g, dens = post["grid"][::4], post["density"][::4]
    h = g[1] - g[0]
    kern = stats.norm.pdf(g[:, None] - g[None, :], scale=scale) * h
    return float(np.sum(np.minimum(dens[:, None], dens[None, :]) * kern) * h)


def test_acceptance_with_many_importance_samples_matches_exact_mh(exact):
    scale = 2.5
    a_exact = exact_mh_acceptance(exact, scale)
    out = pm.run_chain(
        stream(SEED, "acceptance"), make_target("laplace", n_imp=64), np.array([exact["mean"]]),
        n_adapt=0, n_burn=200, n_draws=4000, proposal_cov=np.eye(1), initial_scale=scale,
    )
    assert out.params["proposal_factor"][0, 0] == scale
    a = out.stats["acceptance_rate"]
    se = a.std(ddof=1) / np.sqrt(ess(a))
    assert se < 0.012
    assert abs(a.mean() - a_exact) < 4 * se, (a.mean(), a_exact, se)
    assert abs(out.stats["accepted"].mean() - a_exact) < 0.05


# ---------------------------------------------------------------------------
# (d) reproducibility
# ---------------------------------------------------------------------------
ARRAYS = {"position": lambda c: c.draws, "log_density": lambda c: c.stats["lp"],
          "proposal_log_density": lambda c: c.stats["proposal_lp"], "accepted": lambda c: c.stats["accepted"],
          "acceptance_prob": lambda c: c.stats["acceptance_rate"], "n_cubic": lambda c: c.stats["n_cubic"],
          "proposal_factor": lambda c: c.params["proposal_factor"],
          "adapt_position": lambda c: c.params["adapt_position"]}


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_same_seed_same_chain_bit_for_bit(approx):
    kw = dict(n_adapt=100, n_burn=20, n_draws=200, proposal_cov=np.eye(1))
    a = pm.run_chain(stream(SEED, "repro"), make_target(approx), np.array([0.3]), **kw)
    b = pm.run_chain(stream(SEED, "repro"), make_target(approx), np.array([0.3]), **kw)
    for key, get in ARRAYS.items():
        np.testing.assert_array_equal(get(a), get(b), err_msg=key)
    assert a.params["init_log_density"] == b.params["init_log_density"]
    c = pm.run_chain(stream(SEED, "repro", 1), make_target(approx), np.array([0.3]), **kw)
    assert not np.array_equal(a.draws, c.draws)


# ---------------------------------------------------------------------------
# (e) the adaptive phase and the frozen proposal
# ---------------------------------------------------------------------------
def test_adaptive_phase_uses_only_the_deterministic_approximation_then_freezes(monkeypatch):
    steps = []  # (log_density_fn, proposal factor) for every MH step of both phases
    real_step = random_walk.step

    def recording_step(rng, state, log_density_fn, proposal_factor):
        steps.append((log_density_fn, np.array(proposal_factor)))
        return real_step(rng, state, log_density_fn, proposal_factor)

    monkeypatch.setattr(random_walk, "step", recording_step)
    spy = SpyTarget(make_target("laplace"))
    n_adapt, n_burn, n_draws = 400, 50, 150
    out = pm.run_chain(stream(SEED, "adapt"), spy, np.array([-1.0]), n_adapt=n_adapt,
                          n_burn=n_burn, n_draws=n_draws, proposal_cov=np.array([[0.01]]))
    kinds = [kind for kind, _, _ in spy.calls]
    # phase 1: n_adapt adapted steps + 1 frozen step + the driver's init, all deterministic;
    # phase 2: init + one estimate per step, all noisy; never interleaved
    n_det = n_adapt + 2
    assert kinds == ["deterministic"] * n_det + ["noisy"] * (1 + n_burn + n_draws)
    assert len(steps) == n_adapt + 1 + n_burn + n_draws
    assert all(fn is not spy for fn, _ in steps[: n_adapt + 1])
    assert all(fn is spy for fn, _ in steps[n_adapt + 1:])
    # the scale was adapted (started at 2.38 * 0.1, far too small for this posterior)
    factors = np.array([L[0, 0] for _, L in steps])
    assert factors[0] == pytest.approx(0.238)
    assert out.params["proposal_factor"][0, 0] > 5 * factors[0]
    assert len(set(factors[:n_adapt])) > 100
    # ... and then frozen: every step from the end of adaptation on uses the reported factor
    np.testing.assert_array_equal(factors[n_adapt:], out.params["proposal_factor"][0, 0])
    assert not out.params["proposal_factor"].flags.writeable
    # phase 2 starts where phase 1 ended, with an importance estimate made there
    assert spy.calls[n_det][1] == pytest.approx(out.params["adapt_position"])
    assert out.params["adapt_log_density"] == spy.inner.approx_log_posterior(out.params["adapt_position"])
    assert 0.15 < out.params["adapt_acceptance"] < 0.4
    assert out.params["adapt_n_cubic"] > 0 and out.warmup["n_cubic"] - out.warmup["n_cubic_init"] > 0


def test_adapt_on_laplace_with_an_ep_target():
    target = make_target("ep")
    out = pm.run_chain(stream(SEED, "adapt-on"), target, np.array([0.0]), n_adapt=60,
                          n_burn=0, n_draws=20, proposal_cov=np.eye(1), adapt_on="laplace")
    psi = out.params["adapt_position"]
    la = make_target("laplace").approx_log_posterior(psi)
    ep = make_target("ep").approx_log_posterior(psi)
    assert out.params["adapt_log_density"] == la != ep
    assert target.n_calls == 1 + 20  # the EP target itself only estimated in phase 2
    with pytest.raises(ValueError, match="adapt_on"):
        pm.run_chain(stream(SEED, "x"), target, np.array([0.0]), n_adapt=5, n_burn=0,
                        n_draws=1, proposal_cov=np.eye(1), adapt_on="exact")


def test_phase_one_trouble_is_kept_in_params():
    """Non-converged approximations of the adaptive phase (deterministic EP) are recorded, like phase 2's."""
    import warnings

    target = make_target(approx="ep", n_imp=2, approx_options={"max_iter": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pm.run_chain(stream(SEED, "trouble"), target, np.array([0.0]), n_adapt=20, n_burn=0, n_draws=5,
                           proposal_cov=np.eye(1), adapt_on="ep")
    # phase 1 (random_walk.run_chain with n_burn = 20, n_draws = 1): the start and 21 proposals, each one
    # deterministic EP call stopped after its one update
    assert out.params["adapt_n_not_converged"] == 22
    assert out.params["adapt_n_jitter"] == 0 and out.params["adapt_n_failed_estimates"] == 0
    assert np.all(out.stats["n_not_converged"] == 1)  # phase 2: one proposal per iteration
    quiet = pm.run_chain(stream(SEED, "trouble"), make_target(approx="ep", n_imp=2), np.array([0.0]), n_adapt=20,
                         n_burn=0, n_draws=5, adapt_on="ep", proposal_cov=np.eye(1))
    assert quiet.params["adapt_n_not_converged"] == 0 and np.all(quiet.stats["n_not_converged"] == 0)


# ---------------------------------------------------------------------------
# (f) correlated pseudo-marginal moves (Deligiannidis, Doucet & Pitt 2018)
# and the stateless target (the warm start lives in the sampler's state)
# ---------------------------------------------------------------------------
RHO = 0.99


def test_cpm_chain_samples_exact_posterior(exact):
    """rho = 0.99: the psi-marginal of the chain on (psi, u) is the exact posterior (same checks as (a))."""
    target = make_target("laplace", n_imp=1)
    out = pm.run_chain(stream(SEED, "cpm-exact"), target, np.array([0.0]), n_adapt=600, n_burn=300,
                       n_draws=12_000, proposal_cov=np.eye(1), rho=RHO)
    assert out.params["rho"] == RHO
    z = z_scores(out.draws[:, 0], exact)
    report = "\n".join(f"  {k:>14s}: chain {m: .4f}  exact {v: .4f}  se {se:.4f}  ESS {n:.0f}  z {zz: .2f}"
                       for k, (zz, m, v, se, n) in z.items())
    assert all(abs(zz) < Z_CRIT for zz, *_ in z.values()), report
    assert min(n for *_, n in z.values()) > 900, report  # the same power as (a)
    # the estimates of successive states share their normals: the stored value moves far less than in (a)
    assert np.all(out.state.normals.shape == (2, 10, 1))


def _conditional_normals(rng, q, f):
    """u ~ N(0, I_2n) given map_normals(u) = f: the normals behind an importance draw f of q.

    f = m + A u is linear in u (A = (I + K W)^-1 [L_K, K W^1/2], A A^T = Sigma), so the
    conditional is u0 + A^T Sigma^-1 (f - m - A u0) with u0 ~ N(0, I).  Under the extended
    target pi(psi, u | y) ∝ p(psi) N(u) p~(y | psi, u), u given (psi, f = f(u), y) has
    exactly this law, since N(u) = q(f) N(u | f) and p~ = p(y|f) N(f|0,K) / q(f).
    """
    n = q.n
    A = np.column_stack([q.map_normals(e[:n, None], e[n:, None])[:, 0] - q.m for e in np.eye(2 * n)])
    u0 = rng.standard_normal(2 * n)
    u = u0 + A.T @ np.linalg.solve(A @ A.T, f - q.m - A @ u0)
    return u.reshape(2, n, 1)


def cpm_transition(n_steps, rho):
    """Embed (psi, f) in the CPM chain's (psi, u), run ``n_steps`` of ``pm.step``, read f back."""

    def transition(rng, params, y):
        psi, f = params
        target = make_target("laplace", 1, X=XG, y=y)
        K, L = covariance_as_target_builds_it(psi)
        q = laplace_approximation(K, y, PROBIT, K_chol=L)  # the q the target builds at psi
        u = _conditional_normals(rng, q, f)
        est = target.estimate(np.array([psi]), rng, normals=u)
        assert est.value == pytest.approx(log_importance_weight(q, f, y) + PRIOR.log_density(np.array([psi])),
                                          abs=1e-8)
        state = pm.PMState(np.array([psi]), est.value, u, None)
        for _ in range(n_steps):
            state, _ = pm.step(rng, state, target, GEWEKE_FACTOR, rho)
        q_new = target.estimate(state.position, rng, normals=state.normals)
        assert q_new.value == state.log_density  # the stored estimate is a function of (psi, u)
        f_new = q_new.approximation.map_normals(state.normals[0], state.normals[1])[:, 0]
        return float(state.position[0]), f_new

    return transition


def test_geweke_cpm_kernel():
    mc = geweke.marginal_conditional(
        stream(SEED, "geweke", "mc"), simulate_params, simulate_data, geweke_functions, 4000
    )
    sc = geweke.successive_conditional(
        stream(SEED, "geweke", "cpm"), simulate_params, simulate_data, cpm_transition(2, RHO),
        geweke_functions, 4000,
    )
    res = geweke.compare(mc, sc, names=GEWEKE_NAMES, alpha=0.01)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()
    assert res.se_sc[0] < 0.06, res.summary()


def test_geweke_catches_a_cpm_move_that_is_not_reversible(monkeypatch):
    """Power: u' = rho u + xi (variance not preserved: not reversible for N(0, I)) must be flagged."""
    monkeypatch.setattr(pm, "crank_nicolson", lambda rng, u, rho: rho * u + rng.standard_normal(u.shape))
    mc = geweke.marginal_conditional(
        stream(SEED, "geweke", "mc"), simulate_params, simulate_data, geweke_functions, 4000
    )
    sc = geweke.successive_conditional(
        stream(SEED, "geweke", "cpm-bad"), simulate_params, simulate_data, cpm_transition(2, 0.9),
        geweke_functions, 1200,
    )
    res = geweke.compare(mc, sc, names=GEWEKE_NAMES, alpha=0.01)
    assert res.reject, res.summary()


class PlainTarget:
    """Only ``target(psi, rng)`` and ``approx_log_posterior``: the plain F&G Alg. 1 path (``random_walk.step``)."""

    def __init__(self, inner):
        self.inner, self.approx = inner, inner.approx

    def __call__(self, psi, rng):
        return self.inner(psi, rng)

    def approx_log_posterior(self, psi):
        return self.inner.approx_log_posterior(psi)


class RememberingTarget(PlainTarget):
    """The pre-issue-23 target: the warm start is the last evaluation's q, kept in an attribute."""

    def __init__(self, inner):
        super().__init__(inner)
        self.q = None

    def __call__(self, psi, rng):
        est = self.inner.estimate(psi, rng, warm=self.q)
        self.q = est.approximation if est.approximation is not None else self.q
        return est.value

    def approx_log_posterior(self, psi):
        value, q = self.inner.deterministic(psi, warm=self.q)
        self.q = q if q is not None else self.q
        return value


@pytest.mark.parametrize("approx", ["laplace", "ep"])
@pytest.mark.parametrize("warm", [False, True])
def test_rho_zero_and_state_carried_warm_start_are_alg1_bit_for_bit(approx, warm):
    """The stateful step with rho = 0 is random_walk.step on target(psi, rng), draw for draw; with
    warm_start, carrying q in the state gives the chain of a target that remembers it."""
    kw = dict(n_adapt=40, n_burn=10, n_draws=60, proposal_cov=np.eye(1), adapt_on=approx)
    a = pm.run_chain(stream(SEED, "rho0"), make_target(approx, n_imp=3, warm_start=warm), np.array([0.3]), **kw)
    ref_target = make_target(approx, n_imp=3, warm_start=warm)
    b = pm.run_chain(stream(SEED, "rho0"), (RememberingTarget if warm else PlainTarget)(ref_target),
                     np.array([0.3]), **kw)
    for key, get in ARRAYS.items():
        np.testing.assert_array_equal(get(a), get(b), err_msg=key)
    assert a.params["init_log_density"] == b.params["init_log_density"]
    assert isinstance(a.state, pm.PMState) and not isinstance(b.state, pm.PMState)
    if warm:  # the warm start did change the approximations' work (so the comparison has teeth)
        cold = pm.run_chain(stream(SEED, "rho0"), make_target(approx, n_imp=3), np.array([0.3]), **kw)
        assert not np.array_equal(a.stats["n_cubic"], cold.stats["n_cubic"]) or not np.array_equal(a.draws, cold.draws)


@pytest.mark.parametrize("rho", [0.0, RHO])
def test_same_state_and_key_give_the_same_step(rho):
    target = make_target("ep", n_imp=4, warm_start=True)
    state = pm.init(np.array([0.2]), target, np.random.default_rng(1))
    L = np.array([[0.8]])
    first = [pm.step(np.random.default_rng(k), state, target, L, rho) for k in range(6)]
    target(np.array([1.5]), np.random.default_rng(9))  # evaluations elsewhere change nothing
    again = [pm.step(np.random.default_rng(k), state, target, L, rho) for k in range(6)]
    for (s1, i1), (s2, i2) in zip(first, again):
        assert i1 == i2
        np.testing.assert_array_equal(s1.position, s2.position)
        assert s1.log_density == s2.log_density
        np.testing.assert_array_equal(s1.normals, s2.normals)
        np.testing.assert_array_equal(s1.warm.nu, s2.warm.nu)
    accepted = [s for s, i in first if i.accepted]
    rejected = [s for s, i in first if not i.accepted]
    assert accepted and rejected
    # rejected: position, estimate and normals kept; the warm start is the last evaluation's
    assert all(s.log_density == state.log_density and s.normals is state.normals for s in rejected)
    assert all(s.warm is not state.warm for s in rejected)
    if rho > 0:  # accepted normals are the Crank-Nicolson move of the current ones
        for s in accepted:
            assert np.corrcoef(s.normals.ravel(), state.normals.ravel())[0, 1] > 0.9


def test_rho_is_validated():
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="rho"):
            pm.run_chain(stream(SEED, "x"), make_target(), np.array([0.0]), n_adapt=0, n_burn=0, n_draws=1,
                         proposal_cov=np.eye(1), rho=bad)
    with pytest.raises(ValueError, match="rho > 0 needs a target with estimate"):
        pm.run_chain(stream(SEED, "x"), PlainTarget(make_target()), np.array([0.0]), n_adapt=0, n_burn=0,
                     n_draws=1, proposal_cov=np.eye(1), rho=0.5)
