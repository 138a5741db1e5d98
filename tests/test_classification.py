"""GP classification: predictive probabilities (F&G eqs. 7-8, 20) and EP type-II ML."""

import numpy as np
import pytest
from scipy.special import ndtr
from scipy.stats import multivariate_normal

from gpbayes import classification as C
from gpbayes import linalg
from gpbayes.kernels import SquaredExponential

TIGHT = {"tol": 1e-12, "max_iter": 2000}


def problem(n=20, m=7, seed=0, d=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    f = np.sin(4.0 * X[:, 0]) + X[:, 1] - 0.9
    y = np.where(f + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    X_test = rng.uniform(size=(m, d))
    return X, y, X_test


KERNEL = SquaredExponential(2, parameterisation="fg")
PSI = np.log([0.3, 2.0])  # (log tau, log sigma)


# ------------------------------------------------------------ one theta
@pytest.mark.parametrize("approx", ["ep", "laplace"])
def test_probabilities_in_unit_interval_and_antisymmetric_in_labels(approx):
    X, y, Xt = problem()
    Xt = np.vstack([X, Xt])
    p = C.predictive_probabilities(X, y, Xt, KERNEL, PSI, approx, **({"tol": 1e-12} if approx == "ep" else {}))
    q = C.predictive_probabilities(X, -y, Xt, KERNEL, PSI, approx, **({"tol": 1e-12} if approx == "ep" else {}))
    assert p.shape == (Xt.shape[0],)
    assert np.all((p >= 0) & (p <= 1))
    # confident and unconfident points both present, so the check has teeth
    assert np.ptp(p) > 0.3
    np.testing.assert_allclose(q, 1.0 - p, atol=1e-10)


@pytest.mark.parametrize("approx", ["ep", "laplace"])
def test_predictive_matches_brute_force_monte_carlo_over_q(approx):
    """Phi(m_* / sqrt(1 + s2_*)) = E_q[ E[Phi(f_*) | f] ], by naive simulation.

    f ~ q = N(m, Sigma) (Sigma formed explicitly), f_* | f ~ N(k_*^T K^-1 f,
    k_** - k_*^T K^-1 k_*) from the joint prior with numpy's solver, and
    y_* = +1 with probability Phi(f_*).  Dropping the sqrt(1 + s2_*) (or the
    s2_* term) moves p by ~0.1 here, far outside 5 Monte Carlo s.e.
    """
    X, y, Xt = problem(n=15, m=3, seed=3)
    opts = TIGHT if approx == "ep" else {"tol": 1e-12}
    p, a = C.predictive_probabilities(X, y, Xt, KERNEL, PSI, approx, return_approximation=True, **opts)
    rng = np.random.default_rng(11)
    Sigma = a.covariance()
    F = rng.multivariate_normal(a.m, Sigma, size=200_000, method="cholesky")
    K = KERNEL(PSI, X)
    Ks = KERNEL(PSI, X, Xt)
    A = np.linalg.solve(K, Ks)  # K^-1 k_*  (n, m)
    beta2 = np.exp(PSI[-1]) - np.sum(Ks * A, axis=0)
    mean, var = C.latent_predictive(a, y, KERNEL, PSI, X, Xt)
    for j in range(Xt.shape[0]):
        fstar = F @ A[:, j] + np.sqrt(beta2[j]) * rng.standard_normal(F.shape[0])
        # latent predictive moments (n.b. this checks m_* and s2_* separately)
        assert fstar.mean() == pytest.approx(mean[j], abs=5 * fstar.std() / np.sqrt(F.shape[0]))
        assert fstar.var() == pytest.approx(var[j], rel=0.02)
        probs = ndtr(fstar)
        se = probs.std() / np.sqrt(probs.size)
        assert abs(probs.mean() - p[j]) < 5 * se, (j, probs.mean(), p[j], se)
    # the sqrt(1 + s2_*) matters at these points
    assert np.max(np.abs(ndtr(mean) - p)) > 0.05


def exact_predictive(kernel, psi, X, y, x_star):
    """p(y_* = +1 | y) = p(y_* = +1, y) / p(y): orthant probabilities (Genz).

    p(y) = P(y_i (f_i + e_i) > 0 for all i) with f + e ~ N(0, K + I).
    """

    def orthant(K, labels):
        n = len(labels)
        D = np.diag(labels)
        mvn = multivariate_normal(np.zeros(n), D @ (K + np.eye(n)) @ D,
                                  abseps=1e-9, releps=1e-9, maxpts=500_000, seed=7)
        return mvn.cdf(np.zeros(n))

    Xa = np.vstack([X, x_star[None, :]])
    Ka = kernel(psi, Xa)
    n = len(y)
    return orthant(Ka, np.r_[y, 1.0]) / orthant(Ka[:n, :n], y)


def test_ep_and_laplace_approach_exact_predictive_as_posterior_becomes_gaussian():
    k = SquaredExponential(1)
    X = np.array([[0.0], [0.3], [0.7], [1.0]])
    y = np.array([1.0, 1.0, -1.0, 1.0])
    Xt = np.array([[0.5], [1.2], [0.15]])
    errs_ep, errs_la = [], []
    for amp in [4.0, 1.0, 0.25, 0.05]:
        psi = np.log([0.4, amp])
        exact = np.array([exact_predictive(k, psi, X, y, x) for x in Xt])
        pe = C.predictive_probabilities(X, y, Xt, k, psi, "ep", **TIGHT)
        pl = C.predictive_probabilities(X, y, Xt, k, psi, "laplace", tol=1e-12)
        errs_ep.append(np.max(np.abs(pe - exact)))
        errs_la.append(np.max(np.abs(pl - exact)))
        # EP is the more accurate (Kuss & Rasmussen 2005; F&G Sec. 2.1.2)
        assert errs_ep[-1] < 0.2 * errs_la[-1]
    # both errors shrink as the amplitude (and the non-Gaussianity) shrinks
    assert np.all(np.diff(errs_ep) < 0) and np.all(np.diff(errs_la) < 0)
    assert errs_ep[0] < 0.01 and errs_la[0] < 0.1  # measured: 0.0027, 0.051
    assert errs_ep[-1] < 1e-5 and errs_la[-1] < 1e-3  # measured: 2.3e-6, 1.5e-4


def test_ep_matches_laplace_in_a_near_gaussian_case():
    X, y, Xt = problem(n=20, m=10, seed=5)
    psi = np.log([0.3, 0.02])  # tiny amplitude: log Phi(y f) is near-linear over the prior
    pe = C.predictive_probabilities(X, y, Xt, KERNEL, psi, "ep", **TIGHT)
    pl = C.predictive_probabilities(X, y, Xt, KERNEL, psi, "laplace", tol=1e-12)
    # compare the informative part p - 1/2, which is ~1e-2 here
    assert np.max(np.abs(pe - 0.5)) > 5e-3
    np.testing.assert_allclose(pl - 0.5, pe - 0.5, rtol=0.02, atol=1e-6)


def test_prediction_adds_no_cubic_operation():
    # F&G Sec. 5.4: predictions need O(n^2) work once EP has run
    X, y, Xt = problem(n=30, m=10)
    with linalg.count_ops() as ops:
        _, a = C.predictive_probabilities(X, y, Xt, KERNEL, PSI, "ep", return_approximation=True)
    assert ops.cubic == a.n_cubic


# ------------------------------------------------------------ over theta draws
def test_mcmc_predictive_is_the_average_of_per_theta_predictives():
    X, y, Xt = problem()
    draws = np.array([PSI, PSI + [0.3, -0.5], PSI + [0.3, -0.5], PSI - [0.2, 0.1]])
    singles = np.array([C.predictive_probabilities(X, y, Xt, KERNEL, s, "ep", **TIGHT) for s in draws])
    p, P = C.mcmc_predictive(X, y, Xt, KERNEL, draws, "ep", warm_start=False,
                             return_per_draw=True, **TIGHT)
    np.testing.assert_array_equal(P, singles)
    np.testing.assert_allclose(p, singles.mean(axis=0), rtol=0, atol=1e-15)
    # warm starts change only where EP starts: same fixed point
    pw = C.mcmc_predictive(X, y, Xt, KERNEL, draws, "ep", warm_start=True, **TIGHT)
    np.testing.assert_allclose(pw, p, atol=1e-8)
    pl = C.mcmc_predictive(X, y, Xt, KERNEL, draws, "laplace", tol=1e-12)
    sl = np.mean([C.predictive_probabilities(X, y, Xt, KERNEL, s, "laplace", tol=1e-12) for s in draws], axis=0)
    np.testing.assert_allclose(pl, sl, atol=1e-8)


def test_mcmc_predictive_thinning_and_chain_layout():
    X, y, Xt = problem(n=12, m=4)
    rng = np.random.default_rng(2)
    chains = PSI + 0.3 * rng.standard_normal((2, 5, 2))  # (chains, draws, p)
    p3, P3 = C.mcmc_predictive(X, y, Xt, KERNEL, chains, thin=2, warm_start=False,
                               return_per_draw=True, **TIGHT)
    kept = np.concatenate([chains[0, ::2], chains[1, ::2]])  # draws 0, 2, 4 of each chain
    assert P3.shape == (6, 4)
    p2 = C.mcmc_predictive(X, y, Xt, KERNEL, kept, warm_start=False, **TIGHT)
    np.testing.assert_array_equal(p3, p2)
    with pytest.raises(ValueError, match="thin"):
        C.mcmc_predictive(X, y, Xt, KERNEL, kept, thin=0)


def test_eq20_latent_draws_reproduce_eq8_predictive():
    """Averaging Phi(mu_*/sqrt(1+beta2_*)) over f ~ q gives q's own predictive."""
    X, y, Xt = problem(n=15, m=5, seed=4)
    p, a = C.predictive_probabilities(X, y, Xt, KERNEL, PSI, "ep", return_approximation=True, **TIGHT)
    rng = np.random.default_rng(5)
    K_chol = linalg.cholesky(a.K)
    N = 20_000
    F = a.sample(rng, N, K_chol=K_chol)
    psi_draws = np.tile(PSI, (N, 1))  # one theta repeated: one Cholesky in all
    with linalg.count_ops() as ops:
        pm, P = C.mcmc_predictive(X, y, Xt, KERNEL, psi_draws, f_samples=F, return_per_draw=True)
    assert ops.cholesky == 1
    se = P.std(axis=0) / np.sqrt(N)
    assert np.all(np.abs(pm - p) < 5 * se), (pm, p, se)
    with pytest.raises(ValueError, match="pair"):
        C.mcmc_predictive(X, y, Xt, KERNEL, psi_draws, f_samples=F[:-1])


# ------------------------------------------------------------ EP type-II ML
@pytest.mark.parametrize("ard", [False, True])
def test_ep_log_marginal_gradient_matches_finite_differences(ard):
    X, y, _ = problem(n=25, seed=7)
    k = SquaredExponential(2, ard=ard)
    psi = np.r_[np.full(k.n_scale, np.log(0.4)), np.log(2.0)]
    if ard:
        psi[1] = np.log(0.8)
    exact = {"tol": 1e-20, "max_iter": 5000}  # EP to its fixed point
    _, g, ep = C.ep_log_marginal_and_grad(X, y, k, psi, **exact)
    assert ep.converged
    h = 1e-4
    fd = np.empty_like(psi)
    for j in range(psi.size):
        e = np.zeros_like(psi)
        e[j] = h
        up = C.ep_log_marginal_and_grad(X, y, k, psi + e, **exact)[0]
        dn = C.ep_log_marginal_and_grad(X, y, k, psi - e, **exact)[0]
        fd[j] = (up - dn) / (2 * h)
    assert np.min(np.abs(g)) > 0.05  # non-trivial components
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("gradient", ["analytic", "finite-difference"])
def test_fit_ep_type2_ml_increases_log_marginal_and_is_reproducible(gradient):
    X, y, _ = problem(n=30, seed=8)
    k = SquaredExponential(2, ard=True)
    fit = C.fit_ep_type2_ml(X, y, k, np.random.default_rng(1), n_restarts=2, gradient=gradient)
    assert fit.log_marginal > fit.initial_log_marginal + 0.5
    assert fit.log_marginal == pytest.approx(fit.objective, abs=1e-6)
    assert np.all(fit.all_objectives <= fit.objective + 1e-9)
    # a stationary point: analytic gradient ~ 0 at interior coordinates
    _, g, _ = C.ep_log_marginal_and_grad(X, y, k, fit.psi, **TIGHT)
    interior = np.abs(fit.psi) < 8.0 - 1e-3
    assert np.all(np.abs(g[interior]) < 1e-3), (fit.psi, g)
    again = C.fit_ep_type2_ml(X, y, k, np.random.default_rng(1), n_restarts=2, gradient=gradient)
    np.testing.assert_array_equal(again.psi, fit.psi)


def test_ep_ml_beats_nearby_points_and_predicts():
    X, y, Xt = problem(n=30, seed=9)
    fit = C.fit_ep_type2_ml(X, y, KERNEL, np.random.default_rng(0), n_restarts=1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        psi = np.clip(fit.psi + 0.05 * rng.standard_normal(2), -8, 8)
        v = C.gaussian_approximation(X, y, KERNEL, psi, "ep", **TIGHT).log_marginal
        assert v <= fit.log_marginal + 1e-6
    p = C.predictive_probabilities(X, y, Xt, KERNEL, fit.psi)
    assert np.all((p >= 0) & (p <= 1))
