"""Importance-sampling estimator of p(y | theta) (F&G eq. 25) and the pseudo-marginal target."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from gpbayes import linalg
from gpbayes.approx import ep_approximation, laplace_approximation
from gpbayes.estimators import PseudoMarginalTarget, importance_log_marginal
from gpbayes.estimators.importance import importance_log_weights, importance_sample, select_draw
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.priors import Gamma, IndependentPrior, Uniform

PROBIT = Probit()


def small_problem(psi=(np.log(0.25), np.log(0.8))):
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(4, 2))
    y = np.array([1.0, -1.0, 1.0, 1.0])
    K = SquaredExponential(2)(np.array(psi), X)
    return X, y, K


def exact_log_marginal(K, y):
    n = len(y)
    D = np.diag(y)
    mvn = multivariate_normal(np.zeros(n), D @ (K + np.eye(n)) @ D,
                              abseps=1e-10, releps=1e-10, maxpts=1_000_000, seed=7)
    return float(np.log(mvn.cdf(np.zeros(n))))


def approximations(K, y):
    L = linalg.cholesky(K)
    return L, {
        "laplace": laplace_approximation(K, y, PROBIT, K_chol=L),
        "ep": ep_approximation(K, y, K_chol=L),
    }


# --------------------------------------------------------- q is what it says
def test_sampler_map_has_covariance_sigma_and_log_density_is_gaussian():
    X, y, K = small_problem((np.log(0.5), np.log(3.0)))
    L, qs = approximations(K, y)
    n = len(y)
    for q in qs.values():
        Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(q.w))  # reference, fine for n = 4
        np.testing.assert_allclose(q.covariance(), Sigma, rtol=1e-9, atol=1e-12)
        # draws are m + T [z1; z2]: read T off unit vectors, then T T^T = Sigma
        T1 = q.map_normals(np.eye(n), np.zeros((n, n))) - q.m[:, None]
        T2 = q.map_normals(np.zeros((n, n)), np.eye(n)) - q.m[:, None]
        np.testing.assert_allclose(T1 @ T1.T + T2 @ T2.T, Sigma, rtol=1e-9, atol=1e-12)
        F = q.sample(np.random.default_rng(0), 5)
        ref = multivariate_normal(q.m, Sigma).logpdf(F)
        np.testing.assert_allclose(q.log_density(F), ref, rtol=1e-10)
        assert q.log_density(F[0]) == pytest.approx(ref[0], rel=1e-10)


# ---------------------------------------------------------- (b) unbiasedness
@pytest.mark.parametrize("method", ["laplace", "ep"])
@pytest.mark.parametrize("n_imp", [1, 16])
def test_estimator_is_unbiased(method, n_imp):
    X, y, K = small_problem()
    L, qs = approximations(K, y)
    q = qs[method]
    # the weights have finite variance when K^-1 - W > 0, i.e. when
    # lambda_max(W^1/2 K W^1/2) < 1; otherwise a standard-error test is invalid
    assert np.linalg.eigvalsh(q.sqrt_w[:, None] * K * q.sqrt_w).max() < 1
    exact = exact_log_marginal(K, y)
    rng = np.random.default_rng(2024)
    R = 20_000
    ratios = np.exp([importance_log_marginal(rng, L, y, PROBIT, q, n_imp)[0] - exact
                     for _ in range(R)])
    se = ratios.std(ddof=1) / np.sqrt(R)
    assert abs(ratios.mean() - 1.0) < 4 * se, (ratios.mean(), se)
    assert se < 0.01  # the test has power: the estimate is pinned to within 4%


def test_estimator_variance_decreases_with_n_imp_and_is_smaller_for_ep():
    X, y, K = small_problem((np.log(0.5), np.log(3.0)))
    L, qs = approximations(K, y)
    sd = {}
    for method, q in qs.items():
        for n_imp in (1, 16):
            rng = np.random.default_rng(5)
            est = [importance_log_marginal(rng, L, y, PROBIT, q, n_imp)[0] for _ in range(400)]
            sd[method, n_imp] = np.std(est)
    for method in qs:
        assert sd[method, 16] < 0.5 * sd[method, 1]
    assert sd["ep", 1] < sd["laplace", 1]  # F&G Sec. 4.1, Fig. 2


def test_same_generator_state_same_estimate_and_costs():
    X, y, K = small_problem()
    L, qs = approximations(K, y)
    q = qs["laplace"]
    a = importance_log_marginal(np.random.default_rng(1), L, y, PROBIT, q, 3)
    b = importance_log_marginal(np.random.default_rng(1), L, y, PROBIT, q, 3)
    assert a == b and a[1] == 0  # n_imp < n: no O(n^3) operation
    # without a factor of K the estimator factorises K once
    q_nochol = laplace_approximation(K, y, PROBIT)
    c = importance_log_marginal(np.random.default_rng(1), None, y, PROBIT, q_nochol, 3)
    assert c[1] == 1 and c[0] == pytest.approx(a[0], rel=1e-12)
    with pytest.raises(ValueError, match="n_imp"):
        importance_log_marginal(np.random.default_rng(1), L, y, PROBIT, q, 0)


# ----------------------------------------------------- pseudo-marginal target
def make_target(prior=None, **kw):
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(40, 2))
    f = np.sin(4 * X[:, 0]) + X[:, 1]
    y = np.where(f + 0.3 * rng.normal(size=40) > 0.7, 1.0, -1.0)
    if prior is None:  # F&G Sec. 4.2 priors
        prior = IndependentPrior((Gamma(1.0, 1 / np.sqrt(2)), Gamma(1.1, 0.1)))
    return PseudoMarginalTarget(X, y, SquaredExponential(2), PROBIT, prior, **kw)


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_pseudo_marginal_target_value_and_cost(approx):
    target = make_target(approx=approx, n_imp=4)
    psi = np.array([np.log(0.4), np.log(2.0)])
    value = target(psi, np.random.default_rng(0))
    q = target.last_approximation
    K = target.kernel(psi, target.X)
    L = linalg.cholesky(K)
    est, _ = importance_log_marginal(np.random.default_rng(0), L, target.y, PROBIT, q, 4)
    assert value == pytest.approx(est + target.prior.log_density(psi), rel=1e-12)
    assert target.last_n_cubic == 1 + q.n_cubic
    # deterministic approximation + prior, no factorisation of K
    approx_value = target.approx_log_posterior(psi)
    assert approx_value == pytest.approx(q.log_marginal + target.prior.log_density(psi), abs=1e-6)
    assert target.last_n_cubic == target.last_approximation.n_cubic


def test_pseudo_marginal_target_outside_support_and_warm_start():
    bounded = make_target(prior=IndependentPrior((Gamma(1.0, 1.0), Uniform(0.5, 5.0))))
    assert bounded(np.array([0.0, np.log(6.0)]), np.random.default_rng(0)) == -np.inf
    assert bounded.last_n_cubic == 0 and bounded.last_approximation is None
    target = make_target(approx="laplace", warm_start=True, approx_options={"tol": 1e-10})
    cold = make_target(approx="laplace", approx_options={"tol": 1e-10})
    psi0 = np.array([np.log(0.4), np.log(2.0)])
    psi1 = psi0 + np.array([0.05, -0.05])
    # the warm start is passed in (a sampler keeps it in its state), never remembered by the target
    q0 = target.estimate(psi0, np.random.default_rng(0)).approximation
    warm = target.estimate(psi1, np.random.default_rng(1), warm=q0)
    v_cold = cold(psi1, np.random.default_rng(1))
    assert warm.value == pytest.approx(v_cold, abs=1e-8)
    assert warm.approximation.n_iter < cold.last_approximation.n_iter
    # stateless: after those calls, a call without warm start is the cold target's to the bit,
    # and a warm start is ignored by a target without warm_start
    assert target(psi1, np.random.default_rng(1)) == v_cold
    assert target.last_approximation.n_iter == cold.last_approximation.n_iter
    assert cold.estimate(psi1, np.random.default_rng(1), warm=q0).value == v_cold
    # the deterministic log posterior: the same, through deterministic(psi, warm)
    d_warm, q_warm = target.deterministic(psi1, warm=q0)
    d_cold, q_cold = cold.deterministic(psi1)
    assert d_warm == pytest.approx(d_cold, abs=1e-8) and q_warm.n_iter < q_cold.n_iter
    assert target.approx_log_posterior(psi1) == d_cold


# ------------------------------------- draws, weights and the selected latent (PMMH)
def test_importance_sample_is_the_estimate_with_its_draws_and_weights():
    X, y, K = small_problem((np.log(0.5), np.log(3.0)))
    L, qs = approximations(K, y)
    for q in qs.values():
        s = importance_sample(np.random.default_rng(5), L, y, PROBIT, q, 7)
        assert (s.log_estimate, s.n_cubic) == importance_log_marginal(np.random.default_rng(5), L, y, PROBIT, q, 7)
        assert np.array_equal(s.log_weights, importance_log_weights(np.random.default_rng(5), L, y, PROBIT, q, 7))
        r = np.random.default_rng(5)
        Z1, Z2 = r.standard_normal((4, 7)), r.standard_normal((4, 7))
        assert np.array_equal(s.draws, q.map_normals(Z1, Z2, L))
        # the weights are those of the draws: p(y|f) N(f|0,K) / q(f), written out
        ref = (np.sum(np.log(PROBIT_CDF(y[:, None] * s.draws)), axis=0)
               + multivariate_normal(np.zeros(4), K).logpdf(s.draws.T) - q.log_density(s.draws.T))
        np.testing.assert_allclose(s.log_weights, ref, rtol=1e-9)


def PROBIT_CDF(x):
    from scipy.special import ndtr

    return ndtr(x)


def test_select_draw_frequencies_are_proportional_to_the_weights_and_use_one_uniform():
    with np.errstate(divide="ignore"):
        log_w = np.log(np.array([0.1, 0.0, 0.5, 0.25, 0.15])) + 700.0  # one zero weight; large logs
    rng = np.random.default_rng(0)
    n = 40_000
    counts = np.bincount([select_draw(rng, log_w) for _ in range(n)], minlength=5)
    p = np.exp(log_w - 700.0)
    assert counts[1] == 0
    assert np.all(np.abs(counts / n - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-12)
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    select_draw(a, log_w)
    b.uniform()
    assert a.bit_generator.state == b.bit_generator.state
    with pytest.raises(ValueError, match="log-weight"):
        select_draw(rng, np.full(3, -np.inf))


def test_log_density_and_latent_is_the_plain_estimate_and_one_of_its_draws():
    target = make_target(approx="ep", n_imp=8)
    plain = make_target(approx="ep", n_imp=8)
    psi = np.array([np.log(0.4), np.log(2.0)])
    value, f = target.log_density_and_latent(psi, np.random.default_rng(3))
    assert value == plain(psi, np.random.default_rng(3))
    q = target.last_approximation
    r = np.random.default_rng(3)
    s = importance_sample(r, q.K_chol, target.y, PROBIT, q, 8)
    k = select_draw(r, s.log_weights)
    assert np.array_equal(f, s.draws[:, k])
    bounded = make_target(prior=IndependentPrior((Gamma(1.0, 1.0), Uniform(0.5, 5.0))))
    r = np.random.default_rng(0)
    before = r.bit_generator.state
    assert bounded.log_density_and_latent(np.array([0.0, np.log(6.0)]), r) == (-np.inf, None)
    assert r.bit_generator.state == before


def _replayed_index(target, q, psi_rng_state, uniform):
    """The old side channel's choice: replay the draws, recompute the weights another way, invert."""
    r = np.random.default_rng()
    r.bit_generator.state = psi_rng_state
    F = q.sample(r, target.n_imp, q.K_chol)  # (n_imp, n)
    U = linalg.solve_triangular(q.K_chol, F.T, lower=True)
    log_prior = -0.5 * (np.einsum("ij,ij->j", U, U) + linalg.logdet_from_cholesky(q.K_chol)
                        + q.n * np.log(2.0 * np.pi))
    log_w = np.sum(PROBIT.log_lik(target.y[:, None], F.T), axis=0) + log_prior - q.log_density(F, q.K_chol)
    m = np.max(log_w)
    probs = np.exp(log_w - (m + np.log(np.sum(np.exp(log_w - m)))))
    k = int(np.searchsorted(np.cumsum(probs), uniform * probs.sum(), side="right"))
    return min(k, target.n_imp - 1), F


@pytest.mark.parametrize("approx", ["laplace", "ep"])
def test_selected_index_agrees_with_weights_recomputed_from_replayed_draws(approx):
    """The selection from the estimator's own weights picks the draw the replaying code picked."""
    target = make_target(approx=approx, n_imp=16)
    rng = np.random.default_rng(17)
    for _ in range(150):
        psi = np.array([np.log(0.4), np.log(2.0)]) + 0.6 * rng.standard_normal(2)
        state = rng.bit_generator.state
        value, f = target.log_density_and_latent(psi, rng)
        # the uniform select_draw used is the one after the estimate's 2 n n_imp normals
        r = np.random.default_rng()
        r.bit_generator.state = state
        r.standard_normal((40, 16)), r.standard_normal((40, 16))
        k, F = _replayed_index(target, target.last_approximation, state, r.uniform())
        assert np.array_equal(f, F[k]), psi


# ------------------------------------------------ repeated estimates over a grid (F&G Fig. 2)
def test_grid_estimates_are_blocks_of_the_estimator_and_unbiased():
    from gpbayes.estimators import log_marginal_estimates_on_grid

    X, y, _ = small_problem()
    kernel = SquaredExponential(2)
    psi_grid = np.log([[0.25, 0.8], [0.5, 3.0]])
    ds = log_marginal_estimates_on_grid(X, y, kernel, PROBIT, psi_grid, approximations=["laplace", "ep"],
                                        n_imps=[1, 16], n_reps=3000, rng=np.random.default_rng(8))
    assert ds["log_marginal_estimate"].shape == (2, 2, 2, 3000)
    assert np.array_equal(ds["psi"].values, psi_grid)
    # the first block is importance_log_weights with the same generator, reshaped into repetitions
    L, qs = approximations(kernel(psi_grid[0], X), y)
    log_w = importance_log_weights(np.random.default_rng(8), L, y, PROBIT, qs["laplace"], 3000)
    assert np.array_equal(ds["log_marginal_estimate"].values[0, 0, 0], log_w)
    assert ds["approx_log_marginal"].values[1, 0] == qs["ep"].log_marginal
    for t, psi in enumerate(psi_grid):
        exact = exact_log_marginal(kernel(psi, X), y)
        for a in range(2):
            for j in range(2):
                r = np.exp(ds["log_marginal_estimate"].values[a, j, t] - exact)
                assert abs(r.mean() - 1) < 4 * r.std(ddof=1) / np.sqrt(r.size), (t, a, j)
    with pytest.raises(ValueError, match="approximation"):
        log_marginal_estimates_on_grid(X, y, kernel, PROBIT, psi_grid, approximations=["vb"], n_imps=[1],
                                       n_reps=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="psi_grid"):
        log_marginal_estimates_on_grid(X, y, kernel, PROBIT, psi_grid[:, :1], approximations=["ep"],
                                       n_imps=[1], n_reps=2, rng=np.random.default_rng(0))


def test_select_draw_picks_what_generator_choice_picks_from_the_normalised_weights():
    """The GPLVM chain used rng.choice(p=w / sum w); select_draw replaces it draw for draw."""
    rng = np.random.default_rng(3)
    for _ in range(3000):
        q = int(rng.integers(1, 60))
        log_w = rng.normal(scale=rng.choice([0.1, 3.0, 30.0]), size=q) - rng.uniform(0, 500)
        seed = int(rng.integers(2**32))
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        w = np.exp(log_w - log_w.max())
        assert select_draw(a, log_w) == int(b.choice(q, p=w / w.sum()))
        assert a.bit_generator.state == b.bit_generator.state


def test_one_sample_estimate_is_scipy_logsumexp_to_the_bit():
    """N_imp = 1 skips scipy's logsumexp: the same number, including the sign of zero, inf and nan."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(3)
    values = np.concatenate([rng.normal(size=2000) * 10.0 ** rng.uniform(-3, 4, size=2000),
                             [0.0, -0.0, -np.inf, np.inf, np.nan, 1e308, -1e308, 5e-324]])
    for v in values:
        ref = float(logsumexp(np.array([v])) - np.log(1))
        got = float(np.array([v])[0]) + 0.0
        assert (got == ref and np.signbit(got) == np.signbit(ref)) or (np.isnan(got) and np.isnan(ref))


@pytest.mark.parametrize("which", ["laplace", "ep"])
def test_one_sample_estimate_is_its_log_weight(which):
    from scipy.special import logsumexp

    _, y, K = small_problem()
    L, qs = approximations(K, y)
    for seed in range(5):
        s = importance_sample(np.random.default_rng(seed), L, y, PROBIT, qs[which], 1)
        assert s.log_estimate == float(logsumexp(s.log_weights) - np.log(1))
