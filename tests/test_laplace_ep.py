"""Laplace approximation and EP: exact answers on tiny problems, fixed points, costs."""

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal, norm

from gpbayes import linalg
from gpbayes.approx import ConvergenceWarning, ep_approximation, laplace_approximation
from gpbayes.approx.ep import probit_tilted_moments
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Gaussian, Logistic, Poisson, Probit

PROBIT = Probit()


def problem(n, seed, psi=(np.log(0.5), np.log(2.0)), d=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    K = SquaredExponential(d, parameterisation="fg")(np.array(psi), X)
    return X, y, K


def exact_probit_log_marginal(K, y):
    """log p(y) = log P(y_i z_i > 0), z ~ N(0, K + I): orthant probability (Genz)."""
    n = len(y)
    D = np.diag(y)
    C = D @ (K + np.eye(n)) @ D
    # P(D z > 0) = P(-D z < 0), and -D z ~ N(0, D (K + I) D)
    mvn = multivariate_normal(np.zeros(n), C, abseps=1e-10, releps=1e-10, maxpts=1_000_000, seed=7)
    return float(np.log(mvn.cdf(np.zeros(n))))


# ---------------------------------------------------------------- (a) exactness
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_la_and_ep_close_to_exact_probit_marginal_and_ep_closer(n):
    for j, psi in enumerate([(np.log(0.3), np.log(1.0)), (np.log(0.5), np.log(4.0)),
                             (np.log(1.0), np.log(9.0))]):
        _, y, K = problem(n, seed=10 * n + j, psi=psi)
        exact = exact_probit_log_marginal(K, y)
        la = laplace_approximation(K, y, PROBIT)
        ep = ep_approximation(K, y, tol=1e-12)
        err_la, err_ep = abs(la.log_marginal - exact), abs(ep.log_marginal - exact)
        assert la.converged and ep.converged
        # EP is the more accurate (F&G Sec. 2.1.2; Kuss & Rasmussen 2005); both
        # degrade as the amplitude grows (errors here up to 0.15 and 0.023)
        assert err_ep < 0.5 * err_la, (psi, exact, la.log_marginal, ep.log_marginal)
        assert err_la < 0.3
        assert err_ep < 0.03


def test_ep_exact_for_independent_latents():
    # diagonal K: every site is matched exactly, p(y) = prod Phi(0) = 2^-n
    y = np.array([1.0, -1.0, -1.0, 1.0, 1.0])
    K = np.diag([0.5, 1.0, 2.0, 4.0, 8.0])
    for mode in ("parallel", "sequential"):
        ep = ep_approximation(K, y, mode=mode, tol=1e-14)
        assert ep.log_marginal == pytest.approx(5 * np.log(0.5), abs=1e-10)


def test_probit_tilted_moments_match_quadrature():
    for y, mu, s2 in [(1.0, 0.3, 0.7), (-1.0, 2.0, 3.0), (1.0, -4.0, 0.5)]:
        def dens(f, k):
            return f**k * norm.cdf(y * f) * norm.pdf(f, mu, np.sqrt(s2))
        Z, m1, m2 = (integrate.quad(dens, -40, 40, args=(k,), epsabs=1e-13)[0] for k in range(3))
        lZ, d1, d2 = probit_tilted_moments(y, mu, s2)
        mean, var = m1 / Z, m2 / Z - (m1 / Z) ** 2
        assert lZ == pytest.approx(np.log(Z), rel=1e-9)
        assert mu + s2 * d1 == pytest.approx(mean, rel=1e-7)  # R&W eq. 3.58
        assert s2 + s2**2 * d2 == pytest.approx(var, rel=1e-7)


# ----------------------------------------------------------- (c) Gaussian case
def test_laplace_exact_for_gaussian_likelihood():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=12)
    K = SquaredExponential(2, ard=True)(np.array([0.1, -0.2, 0.3]), X)
    s2 = 0.3
    la = laplace_approximation(K, y, Gaussian(noise_variance=s2))
    C = K + s2 * np.eye(12)
    assert la.log_marginal == pytest.approx(multivariate_normal(np.zeros(12), C).logpdf(y), rel=1e-10)
    np.testing.assert_allclose(la.m, K @ np.linalg.solve(C, y), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(la.covariance(), K - K @ np.linalg.solve(C, K), atol=1e-10)


# -------------------------------------------------------- (d) EP fixed points
def test_ep_sequential_and_parallel_reach_same_fixed_point():
    _, y, K = problem(30, seed=4, psi=(np.log(0.4), np.log(3.0)))
    seq = ep_approximation(K, y, mode="sequential", tol=1e-18)
    for damping in (0.5, 1.0):
        par = ep_approximation(K, y, mode="parallel", damping=damping, tol=1e-18)
        assert seq.converged and par.converged
        np.testing.assert_allclose(par.m, seq.m, atol=1e-7)
        np.testing.assert_allclose(par.w, seq.w, atol=1e-7)
        np.testing.assert_allclose(par.nu, seq.nu, atol=1e-7)
        assert par.log_marginal == pytest.approx(seq.log_marginal, abs=1e-9)
    # the fixed point is the mean of the tilted marginals: re-running one
    # update from it changes nothing (and the default F&G tolerance is close)
    loose = ep_approximation(K, y)
    assert loose.log_marginal == pytest.approx(seq.log_marginal, abs=1e-2)


# ------------------------------------------------ (d') period-2 cycles of parallel EP
CYCLE_PSI = np.array([1.5685, -0.7174, 1.6544, 2.9185, 1.5722, 0.4313, 2.3561, 1.9957, 0.724, 3.1424])


def cycle_problem():
    """40 Breast points at a PM-MH proposal (ARD, sigma_f = e^3.14 / 2) where damped parallel EP cycles."""
    from pathlib import Path
    data = np.loadtxt(Path(__file__).parent / "data" / "ep_cycle_breast.csv", delimiter=",", skiprows=3)
    X, y = data[:, :9], data[:, 9]
    return SquaredExponential(9, ard=True, parameterisation="amis")(CYCLE_PSI, X), y


def test_parallel_ep_leaves_a_period_two_cycle(monkeypatch):
    """Damping 0.8 cycles for ever here; halving it on the detected cycle reaches sequential EP's fixed point."""
    from gpbayes.approx import ep as ep_mod

    K, y = cycle_problem()
    ref = ep_approximation(K, y, mode="sequential", tol=1e-12)
    assert ref.converged
    with monkeypatch.context() as m:  # without the detection: the cycle (what the code did before)
        m.setattr(ep_mod, "_cycling", lambda deltas: False)
        with pytest.warns(ConvergenceWarning):
            stuck = ep_approximation(K, y)
        assert not stuck.converged and stuck.n_iter == 200
        assert abs(stuck.log_marginal - ref.log_marginal) > 1e-2
    fixed = ep_approximation(K, y)
    assert fixed.converged and fixed.n_iter < 40
    assert fixed.damping == pytest.approx(0.4)
    assert fixed.log_marginal == pytest.approx(ref.log_marginal, abs=1e-4)
    # the same fixed point when run tight
    tight = ep_approximation(K, y, tol=1e-12)
    assert tight.converged and tight.log_marginal == pytest.approx(ref.log_marginal, abs=1e-9)


def test_fg2014_rule_and_undamped_ep_leave_the_cycle_too(monkeypatch):
    """F&G's stopping rule (Tables I-III) cycled the same way; undamped parallel EP (damping 1) is halved too."""
    from gpbayes.approx import ep as ep_mod

    K, y = cycle_problem()
    ref = ep_approximation(K, y, mode="sequential", tol=1e-12)
    with monkeypatch.context() as m:
        m.setattr(ep_mod, "_cycling", lambda deltas: False)
        with pytest.warns(ConvergenceWarning):
            assert not ep_approximation(K, y, stopping="fg2014").converged
    fg = ep_approximation(K, y, stopping="fg2014")
    assert fg.converged and fg.damping < 0.8
    assert fg.log_marginal == pytest.approx(ref.log_marginal, abs=1e-3)
    undamped = ep_approximation(K, y, damping=1.0)
    assert undamped.converged and undamped.damping == 0.5
    assert undamped.log_marginal == pytest.approx(ref.log_marginal, abs=1e-3)


def test_cycle_detection_needs_alternation_without_contraction():
    from gpbayes.approx.ep import _cycling

    assert _cycling([0.1, -0.1, 0.1, -0.1])
    assert _cycling([0.1, -0.095, 0.1, -0.095])
    assert not _cycling([0.1, -0.1, 0.1])  # too short
    assert not _cycling([0.1, -0.05, 0.025, -0.0125])  # a converging oscillation
    assert not _cycling([0.1, 0.1, 0.1, 0.1])  # a drift, not a cycle
    assert not _cycling([0.1, -0.1, 0.08, -0.1])  # shrinking by more than 10 % over two updates


def test_a_well_behaved_parallel_ep_keeps_its_damping():
    _, y, K = problem(30, seed=4, psi=(np.log(0.4), np.log(3.0)))
    assert ep_approximation(K, y).damping == 0.8
    assert ep_approximation(K, y, damping=0.5).damping == 0.5
    assert ep_approximation(K, y, mode="sequential").damping == 1.0
    assert laplace_approximation(K, y, PROBIT).damping is None


# ---------------------------------------------------------- (e) warm starts
def test_laplace_warm_start_same_as_cold():
    X, y, K = problem(40, seed=5, psi=(np.log(0.3), np.log(3.0)))
    kern = SquaredExponential(2)
    prev = laplace_approximation(kern(np.array([np.log(0.33), np.log(2.7)]), X), y, PROBIT)
    L = linalg.cholesky(K)
    # the result agrees with a cold start to the order of the tolerance
    for tol, agree in ((1e-6, 1e-5), (1e-12, 1e-10)):
        cold = laplace_approximation(K, y, PROBIT, tol=tol)
        warm_a = laplace_approximation(K, y, PROBIT, alpha_init=prev.alpha, tol=tol)
        warm_f = laplace_approximation(K, y, PROBIT, f_init=prev.m, K_chol=L, tol=tol)
        warm_f_nochol = laplace_approximation(K, y, PROBIT, f_init=prev.m, tol=tol)
        for warm in (warm_a, warm_f, warm_f_nochol):
            assert warm.converged
            assert warm.log_marginal == pytest.approx(cold.log_marginal, abs=agree)
            np.testing.assert_allclose(warm.m, cold.m, atol=10 * agree)
        assert warm_a.n_iter < cold.n_iter and warm_f.n_iter < cold.n_iter


def test_laplace_bad_warm_start_and_far_from_mode():
    # a huge amplitude makes plain Newton from a bad start overshoot; step
    # halving (and the GPML guard against starts worse than f = 0) recover
    _, y, K = problem(25, seed=6, psi=(np.log(0.5), np.log(400.0)))
    cold = laplace_approximation(K, y, PROBIT)
    bad = 50.0 * np.random.default_rng(0).standard_normal(25)
    for kw in ({"f_init": bad}, {"f_init": bad, "K_chol": linalg.cholesky(K)}, {"alpha_init": bad}):
        warm = laplace_approximation(K, y, PROBIT, **kw)
        assert warm.converged
        assert warm.log_marginal == pytest.approx(cold.log_marginal, abs=1e-7)
    # a step from f_init that is worse than f = 0 is discarded: one wasted
    # Newton step, then exactly the cold-start path
    _, _, K = problem(20, seed=2, psi=(np.log(0.3), np.log(1.0)))
    y = np.random.default_rng(1).poisson(1.0, size=20).astype(float)
    cold = laplace_approximation(K, y, Poisson())
    warm = laplace_approximation(K, y, Poisson(), f_init=np.full(20, 30.0))
    assert warm.n_iter == cold.n_iter + 1
    assert warm.log_marginal == cold.log_marginal


def test_ep_warm_start_same_as_cold():
    X, y, K = problem(40, seed=8, psi=(np.log(0.3), np.log(3.0)))
    prev = ep_approximation(SquaredExponential(2)(np.array([np.log(0.32), np.log(2.8)]), X), y)
    for mode in ("parallel", "sequential"):
        cold = ep_approximation(K, y, mode=mode, tol=1e-16)
        warm = ep_approximation(K, y, mode=mode, tol=1e-16, sites_init=(prev.nu, prev.w))
        assert warm.log_marginal == pytest.approx(cold.log_marginal, abs=1e-9)
        np.testing.assert_allclose(warm.m, cold.m, atol=1e-7)
        assert warm.n_iter < cold.n_iter


# -------------------------------------------------------- (f) stationarity
@pytest.mark.parametrize("lik", [Probit(), Logistic(), Poisson()])
def test_laplace_mode_is_stationary(lik):
    _, y, K = problem(50, seed=9, psi=(np.log(0.3), np.log(5.0)))
    if isinstance(lik, Poisson):
        y = np.random.default_rng(9).poisson(30.0, size=50).astype(float)
    la = laplace_approximation(K, y, lik)
    assert la.converged
    grad = lik.d1(y, la.m)
    # f_hat = K grad log p(y | f_hat)  (R&W eq. 3.17)
    np.testing.assert_allclose(la.m, K @ grad, rtol=1e-6, atol=1e-6 * np.abs(la.m).max())
    np.testing.assert_allclose(la.alpha, grad, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(la.w, -lik.d2(y, la.m))  # W at the returned mode


def test_step_halving_needed_far_from_mode():
    # Poisson counts ~30 from f = 0: the full Newton step overshoots so far that
    # the objective drops by ~1e11; without halving the iteration cannot proceed
    _, _, K = problem(20, seed=2, psi=(np.log(0.3), np.log(10.0)))
    y = np.random.default_rng(1).poisson(30.0, size=20).astype(float)
    assert not laplace_approximation(K, y, Poisson(), max_halvings=0).converged
    la = laplace_approximation(K, y, Poisson())
    assert la.converged
    np.testing.assert_allclose(la.m, K @ Poisson().d1(y, la.m), rtol=1e-6)


# ------------------------------------------------------------ (g) op counts
def test_op_counts_match_docstrings():
    X, y, K = problem(60, seed=11, psi=(np.log(0.4), np.log(3.0)))
    with linalg.count_ops() as c:
        la = laplace_approximation(K, y, PROBIT)
    assert la.n_cubic == c.cubic == c.cholesky == la.n_iter + 1

    with linalg.count_ops() as c:
        ep = ep_approximation(K, y, mode="parallel")
    assert ep.converged
    assert ep.n_cubic == c.cubic == 2 * ep.n_iter
    assert c.cholesky == c.inverse == ep.n_iter and c.triangular == 0

    with linalg.count_ops() as c:
        warm = ep_approximation(K, y, mode="parallel", sites_init=(ep.nu, ep.w))
    assert warm.n_cubic == c.cubic == 2 * warm.n_iter + 2
    assert c.cholesky == c.inverse == warm.n_iter + 1

    with linalg.count_ops() as c:
        seq = ep_approximation(K, y, mode="sequential")
    assert seq.n_cubic == c.cubic == 3 * seq.n_iter
    assert c.cholesky == c.triangular == c.matmul == seq.n_iter


def test_input_errors():
    _, y, K = problem(5, seed=0)
    with pytest.raises(ValueError, match="labels"):
        laplace_approximation(K, 2 * y, PROBIT)
    with pytest.raises(NotImplementedError):
        ep_approximation(K, y, Logistic())
    with pytest.raises(ValueError, match="mode"):
        ep_approximation(K, y, mode="diagonal")
    with pytest.raises(ValueError, match="shape"):
        laplace_approximation(K[:4, :4], y, PROBIT)


def test_a_non_converged_approximation_warns_and_is_tallied():
    import warnings

    from gpbayes import linalg
    from gpbayes.approx import ConvergenceWarning, ep_approximation, laplace_approximation
    from gpbayes.likelihoods import Probit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    K = np.exp(-0.5 * ((X[:, None, :] - X[None]) ** 2).sum(-1)) * 4.0 + 1e-6 * np.eye(30)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    with linalg.count_ops() as ops, warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        q = ep_approximation(K, y, Probit(), max_iter=1)
        q2 = laplace_approximation(K, y, Probit(), max_iter=1)
        q3 = ep_approximation(K, y, Probit())
    assert not q.converged and not q2.converged and q3.converged
    assert ops.not_converged == 2
    assert sum(issubclass(x.category, ConvergenceWarning) for x in w) == 2


# ---------------------------------------------------------------- EP: accurate by default (issue 16 item 2)
def classification_problem(n, seed, psi=(np.log(1.0), np.log(2.0)), d=4):
    """Labels drawn from the model (a smooth latent function), so EP has real work to do."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    f = np.sin(2.0 * X[:, 0]) + X[:, 1] - 0.5 * X[:, 2] * X[:, 3]
    y = np.where(f + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = SquaredExponential(d, parameterisation="fg")(np.array(psi), X)
    return X, y, K


def independent_log_Z_ep(K, y, nu, tau):
    """log Z_EP of given sites with dense algebra: R&W eqs. 3.65 and 3.73-3.74, written out.

    Sigma = (K^-1 + S~)^-1, mu = Sigma nu~, cavities from diag(Sigma) and mu
    (eq. 3.56), Z_i of eq. 3.58 for the probit likelihood.
    """
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    mu = Sigma @ nu
    s2 = np.diag(Sigma)
    tau_c, nu_c = 1.0 / s2 - tau, mu / s2 - nu
    mu_c, s2_c = nu_c / tau_c, 1.0 / tau_c
    log_Zi = norm.logcdf(y * mu_c / np.sqrt(1.0 + s2_c))
    # R&W eq. 3.65 with sites N(mu~, 1/tau~) scaled by Z~ (eq. 3.73), sum of eq. 3.74 terms
    mu_t = nu / tau
    _, logdet = np.linalg.slogdet(K + np.diag(1.0 / tau))
    quad = mu_t @ np.linalg.solve(K + np.diag(1.0 / tau), mu_t)
    terms = (log_Zi + 0.5 * np.log(s2_c + 1.0 / tau) + 0.5 * (mu_c - mu_t) ** 2 / (s2_c + 1.0 / tau))
    return float(-0.5 * logdet - 0.5 * quad + np.sum(terms))


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
@pytest.mark.parametrize("stopping", ["logz", "fg2014"])
def test_ep_log_Z_is_that_of_the_returned_sites(mode, stopping):
    # the returned log Z_EP is R&W eq. 3.65 at the returned sites with their own cavities;
    # before issue 16 parallel EP paired the final sites with the previous update's cavities
    # (off by 1e-4..1e-3 here with the F&G rule)
    _, y, K = classification_problem(80, seed=3)
    ep = ep_approximation(K, y, mode=mode, stopping=stopping)
    assert ep.converged
    ref = independent_log_Z_ep(K, y, ep.nu, ep.w)
    assert ep.log_marginal == pytest.approx(ref, abs=1e-8)


@pytest.mark.parametrize("n", [60, 150, 300])
def test_default_ep_log_Z_within_1e4_of_converged_sequential_ep(n):
    for j, psi in enumerate([(np.log(1.0), np.log(2.0)), (np.log(0.5), np.log(5.0)), (np.log(2.0), np.log(1.0))]):
        _, y, K = classification_problem(n, seed=100 * n + j, psi=psi)
        ref = ep_approximation(K, y, mode="sequential", tol=1e-13, max_iter=500)
        assert ref.converged
        cold = ep_approximation(K, y)  # parallel, default stopping
        assert cold.converged and abs(cold.log_marginal - ref.log_marginal) < 1e-4, (psi, cold.n_iter)
        # warm start from the sites of a nearby theta (as a chain does): amplitude 1.2 sigma
        prev = ep_approximation(K * 1.2, y)
        warm = ep_approximation(K, y, sites_init=(prev.nu, prev.w))
        assert warm.converged and abs(warm.log_marginal - ref.log_marginal) < 1e-4
        seq = ep_approximation(K, y, mode="sequential")
        assert abs(seq.log_marginal - ref.log_marginal) < 1e-4


def test_both_stopping_rules_reach_the_same_fixed_point():
    _, y, K = classification_problem(120, seed=8, psi=(np.log(0.7), np.log(4.0)))
    a = ep_approximation(K, y, stopping="logz", tol=1e-12, site_tol=1e-9, max_iter=500)
    b = ep_approximation(K, y, stopping="fg2014", tol=1e-16, max_iter=500)
    c = ep_approximation(K, y, mode="sequential", stopping="fg2014", tol=1e-16, max_iter=500)
    assert a.converged and b.converged and c.converged
    for other in (b, c):
        assert other.log_marginal == pytest.approx(a.log_marginal, abs=1e-9)
        np.testing.assert_allclose(other.m, a.m, atol=1e-6)
        np.testing.assert_allclose(other.w, a.w, atol=1e-6)
    # the loose F&G rule stops earlier, further from it than the default rule
    fg = ep_approximation(K, y, stopping="fg2014")
    default = ep_approximation(K, y)
    assert abs(default.log_marginal - a.log_marginal) < abs(fg.log_marginal - a.log_marginal)
    with pytest.raises(ValueError, match="stopping"):
        ep_approximation(K, y, stopping="mu")


@pytest.mark.parametrize("n", [50, 130, 300])
def test_ep_diag_sigma_matches_dense_for_zero_and_tiny_sites(n):
    """n = 50: dtrtri; 130: the recursive inverse; 300: also the stale upper triangles (n >= 256)."""
    from gpbayes.approx.ep import _Posterior

    _, y, K = classification_problem(n, seed=2)
    rng = np.random.default_rng(0)
    tau = rng.uniform(0.0, 2.0, size=n)
    tau[:5] = 0.0  # zero sites: the 1 - (B^-1)_ii form is 0/0 there
    tau[5:10] = 1e-12  # tiny sites: it would lose all digits
    post = _Posterior(np.asfortranarray(K))
    for _ in range(3):  # the buffers are reused: stale data from the previous factors
        sw, L = post.factor(tau)
        Sigma = K - K @ np.diag(sw) @ np.linalg.solve(np.eye(n) + np.diag(sw) @ K @ np.diag(sw), np.diag(sw) @ K)
        np.testing.assert_allclose(post.diag_sigma(L, sw), np.diag(Sigma), rtol=1e-10)
        tau = tau * 1.5
    L = post.finish(L)
    assert np.all(L[np.triu_indices(n, 1)] == 0.0)
    np.testing.assert_allclose(L @ L.T, np.eye(n) + np.diag(sw) @ K @ np.diag(sw), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- Laplace: the log marginal at the returned mode
def dense_laplace(K, y, lik, tol=1e-6):
    """R&W Alg. 3.1 with dense numpy algebra and the same stopping rule, B refactorised at the end."""
    n = len(y)
    f = np.zeros(n)
    psi = float(np.sum(lik.log_lik(y, f)))
    while True:
        W = -lik.d2(y, f)
        sW = np.sqrt(W)
        B = np.eye(n) + sW[:, None] * K * sW[None, :]
        b = W * f + lik.d1(y, f)
        a_new = b - sW * np.linalg.solve(B, sW * (K @ b))
        f_new = K @ a_new
        psi_new = float(-0.5 * a_new @ f_new + np.sum(lik.log_lik(y, f_new)))
        done = psi_new - psi < tol
        f, psi = f_new, psi_new
        if done:
            break
    W = -lik.d2(y, f)
    sW = np.sqrt(W)
    L = np.linalg.cholesky(np.eye(n) + sW[:, None] * K * sW[None, :])
    return f, psi - float(np.sum(np.log(np.diag(L))))


@pytest.mark.parametrize("n", [50, 150, 300])
def test_laplace_log_marginal_is_eq_3_32_at_the_returned_mode(n):
    # issue 16 item 1: one Cholesky per Newton step plus the one at the returned mode, and the
    # log marginal is R&W eq. 3.32 there to 1e-10 (pairing Psi(f_N) with the previous step's
    # factor would be off by O(|f_N - f_(N-1)|), 1e-7..1e-4 on these problems)
    for j, psi in enumerate([(np.log(1.0), np.log(2.0)), (np.log(0.5), np.log(8.0)), (np.log(3.0), np.log(1.0))]):
        _, y, K = classification_problem(n, seed=7 * n + j, psi=psi)
        with linalg.count_ops() as c:
            la = laplace_approximation(K, y, PROBIT)
        f_ref, lm_ref = dense_laplace(K, y, PROBIT)
        assert la.converged and c.cholesky == la.n_iter + 1 == la.n_cubic
        np.testing.assert_allclose(la.m, f_ref, atol=1e-9)
        assert la.log_marginal == pytest.approx(lm_ref, abs=1e-10)
        # the returned factor is of B at the returned mode, and its upper triangle is zero
        sw = np.sqrt(la.w)
        B = np.eye(n) + sw[:, None] * K * sw[None, :]
        np.testing.assert_allclose(la.B_chol @ la.B_chol.T, B, atol=1e-10)
        assert not np.any(np.triu(la.B_chol, 1))


def test_ep_tolerance_below_rounding_still_stops():
    # a log Z_EP tolerance tighter than its rounding (64 eps |log Z|) is met at rounding level
    # instead of running to max_iter (EP-ML asks for 1e-12)
    _, y, K = classification_problem(200, seed=5, psi=(np.log(1.0), np.log(4.0)))
    ep = ep_approximation(K, y, tol=1e-18, site_tol=1e-6, max_iter=300)
    assert ep.converged and ep.n_iter < 100
    ref = ep_approximation(K, y, mode="sequential", tol=1e-13, max_iter=500)
    assert ep.log_marginal == pytest.approx(ref.log_marginal, abs=1e-10)
