"""Sparse variational GP and MCMC for it (Hensman et al. 2015): gradients,
quadrature, equivalences with the full GP, sampler invariance, reproducibility."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr

from gpbayes import kernels, likelihoods, linalg, priors
from gpbayes.mcmc import adaptation, hmc, runner
from gpbayes.sparse import mcmc, svgp
from gpbayes.sparse.target import SparseTarget, initial_position, log_q_star, predict_class_probabilities, predict_intensity, predict_latent_draws
from gpbayes.sparse.multiclass import RobustMax

from geweke import batch_means, compare, marginal_conditional, successive_conditional
import reference
import sparse_golden
from reference import finite_difference_grad


GOLDEN = Path(__file__).parent / "data" / "sparse_golden.npz"


def lognormal_prior(n, mu=0.0, sigma=0.5):
    return priors.IndependentPrior(tuple(priors.LogNormal(mu, sigma) for _ in range(n)))


def toy_data(rng, lik_name, N, d):
    X = rng.normal(size=(N, d))
    f = np.sin(X.sum(axis=1))
    if lik_name in ("probit", "logistic"):
        return X, np.where(rng.uniform(size=N) < ndtr(2 * f), 1.0, -1.0)
    if lik_name == "poisson":
        return X, rng.poisson(np.exp(f + 0.5)).astype(float)
    if lik_name == "gaussian":
        return X, f + 0.3 * rng.normal(size=N)
    if lik_name == "robustmax":
        return X, np.digitize(f, [-0.3, 0.3])
    raise ValueError(lik_name)


LIKELIHOODS = {
    "probit": lambda N, rng: likelihoods.Probit(),
    "logistic": lambda N, rng: likelihoods.Logistic(),
    "poisson": lambda N, rng: likelihoods.Poisson(exposure=rng.uniform(0.5, 2.0, N)),
    "gaussian": lambda N, rng: likelihoods.Gaussian(0.3),
    "robustmax": lambda N, rng: RobustMax(3),
}


# ---------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------
def test_gauss_hermite_is_exact_for_polynomials_up_to_degree_2n_minus_1():
    t, w = svgp.gauss_hermite(5)
    normal_moments = [1, 0, 1, 0, 3, 0, 15, 0, 105, 0]  # E t^k, k = 0..9
    for k, expect in enumerate(normal_moments):
        assert np.sum(w * t**k) == pytest.approx(expect, abs=1e-9)
    assert abs(np.sum(w * t**10) - 945) > 1  # degree 10 = 2n is not exact


def test_cholesky_backward_matches_finite_differences():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    S = A @ A.T + 6 * np.eye(6)
    G = np.tril(rng.normal(size=(6, 6)))  # f(Sigma) = <G, chol(Sigma)>
    L = np.linalg.cholesky(S)
    S_bar = svgp.cholesky_backward(L, G)
    np.testing.assert_allclose(S_bar, S_bar.T)
    for _ in range(5):
        D = rng.normal(size=(6, 6))
        D = D + D.T  # symmetric direction
        h = 1e-6
        fd = (np.sum(G * np.linalg.cholesky(S + h * D)) - np.sum(G * np.linalg.cholesky(S - h * D))) / (2 * h)
        assert np.sum(S_bar * D) == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("param", ["fg", "amis", "ma", "gplvm"])
@pytest.mark.parametrize("ard,fixed_amp", [(False, False), (True, False), (True, True)])
def test_cross_covariance_vjp_matches_finite_differences(param, ard, fixed_amp):
    rng = np.random.default_rng(1)
    k = kernels.SquaredExponential(2, ard=ard, parameterisation=param, fixed_amplitude=fixed_amp)
    psi = rng.normal(0, 0.4, k.n_params)
    X1, X2 = rng.normal(size=(4, 2)), rng.normal(size=(6, 2))
    K_bar = rng.normal(size=(4, 6))
    g, dX1 = k.cross_covariance_vjp(psi, X1, X2, k(psi, X1, X2), K_bar)
    np.testing.assert_allclose(
        g, finite_difference_grad(lambda p: np.sum(K_bar * k(p, X1, X2)), psi), rtol=1e-6, atol=1e-8)
    fd = finite_difference_grad(lambda x: np.sum(K_bar * k(psi, x.reshape(4, 2), X2)), X1.ravel())
    np.testing.assert_allclose(dX1.ravel(), fd, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------
# quadrature against Monte Carlo
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["probit", "logistic", "poisson", "robustmax"])
def test_expected_log_lik_quadrature_agrees_with_monte_carlo(name):
    rng = np.random.default_rng(2)
    N = 6
    lik = LIKELIHOODS[name](N, rng)
    C = getattr(lik, "n_latent", 1)
    _, y = toy_data(rng, name, N, 1)
    mu = rng.normal(0, 1.0, (N, C))
    var = rng.uniform(0.2, 2.0, (N, C))
    E, _, _ = svgp.expected_log_lik(lik, y, mu, var, 20)
    S = 200_000
    F = mu[None] + np.sqrt(var)[None] * rng.standard_normal((S, N, C))
    if C == 1:
        ll = lik.log_lik(y, F[:, :, 0])
    else:
        ll = lik.log_lik(y, F)
    mc, se = ll.mean(axis=0), ll.std(axis=0, ddof=1) / np.sqrt(S)
    z = (E - mc) / se
    assert np.all(np.abs(z) < 4.5), (E, mc, se)
    # the check has power: plugging in the mean (ignoring var) is rejected
    E0, _, _ = svgp.expected_log_lik(lik, y, mu, np.zeros_like(var), 20)
    assert np.max(np.abs((E0 - mc) / se)) > 20


def test_robustmax_predictive_probabilities_sum_to_one_and_match_monte_carlo():
    rng = np.random.default_rng(3)
    lik = RobustMax(4, epsilon=0.01)
    mu, var = rng.normal(size=(5, 4)), rng.uniform(0.1, 1.5, (5, 4))
    P = lik.predict_proba(mu, var)
    # sum_c P(c wins) = 1 up to the quadrature error, which falls with the nodes
    assert np.max(np.abs(P.sum(axis=1) - 1.0)) < 1e-4
    np.testing.assert_allclose(lik.predict_proba(mu, var, 60).sum(axis=1), 1.0, atol=1e-8)
    F = mu[None] + np.sqrt(var)[None] * rng.standard_normal((100_000, 5, 4))
    wins = np.stack([(np.argmax(F, axis=-1) == c).mean(axis=0) for c in range(4)], axis=1)
    np.testing.assert_allclose(P, 0.01 / 3 + (1 - 0.01 - 0.01 / 3) * wins, atol=0.006)


# ---------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------
SVGP_CASES = [("probit", False, "fg"), ("poisson", True, "ma"), ("robustmax", True, "gplvm"), ("gaussian", False, "amis")]


@pytest.mark.parametrize("name,ard,param", SVGP_CASES)
def test_elbo_gradients_match_finite_differences(name, ard, param):
    rng = np.random.default_rng(4)
    N, M, d = 25, 5, 2
    lik = LIKELIHOODS[name](N, rng)
    X, y = toy_data(rng, name, N, d)
    k = kernels.SquaredExponential(d, ard=ard, parameterisation=param)
    model = svgp.SVGPModel(X, y, k, lik, prior=lognormal_prior(k.n_params))
    C = model.n_latent
    p = svgp.SVGPParams(
        rng.normal(0, 0.5, (M, C)),
        np.tril(rng.normal(0, 0.3, (C, M, M))) + 0.8 * np.eye(M),
        rng.normal(size=(M, d)),
        rng.normal(0, 0.3, k.n_params),
    )
    _, grad = svgp.elbo_and_grad(model, p)
    for field in ("m", "R", "Z", "psi"):
        x0 = getattr(p, field)
        fd = finite_difference_grad(
            lambda x: svgp.elbo(model, p._replace(**{field: x.reshape(x0.shape)})), x0.ravel()
        ).reshape(x0.shape)
        if field == "R":
            fd = np.tril(fd)
        np.testing.assert_allclose(getattr(grad, field), fd, rtol=1e-5, atol=1e-6, err_msg=field)


@pytest.mark.parametrize("name", ["probit", "logistic", "poisson", "gaussian", "robustmax"])
@pytest.mark.parametrize("ard,param", [(False, "fg"), (True, "ma")])
def test_sampler_target_gradient_matches_finite_differences(name, ard, param):
    rng = np.random.default_rng(5)
    N, M, d = 30, 6, 2
    lik = LIKELIHOODS[name](N, rng)
    X, y = toy_data(rng, name, N, d)
    k = kernels.SquaredExponential(d, ard=ard, parameterisation=param)
    prior = priors.IndependentPrior(tuple(priors.Gamma(2.0, 1.0) for _ in range(k.n_params)))
    target = SparseTarget(X, y, rng.normal(size=(M, d)), k, lik, prior)
    x = target.join(rng.normal(size=(M, target.n_latent)), rng.normal(0, 0.3, k.n_params))
    value, grad = target.logdensity_and_grad(x)
    assert value == pytest.approx(target.log_density(x), rel=1e-13)
    np.testing.assert_allclose(grad, finite_difference_grad(target.log_density, x), rtol=1e-5, atol=1e-6)
    # the v-only gradient used by the Gibbs baseline is the v-block of the joint one
    v, psi = target.split(x)
    _, dv, dpsi = log_q_star(target, v, psi, grad="v")
    assert dpsi is None
    np.testing.assert_array_equal(dv.ravel(), grad[: v.size])


def test_target_costs_one_cholesky_and_is_minus_inf_outside_the_prior():
    rng = np.random.default_rng(6)
    X, y = toy_data(rng, "probit", 40, 1)
    k = kernels.SquaredExponential(1)
    prior = priors.IndependentPrior((priors.Uniform(0.1, 5.0), priors.Gamma(1.0, 1.0)))
    target = SparseTarget(X, y, X[:8], k, likelihoods.Probit(), prior)
    with linalg.count_ops() as ops:
        target.logdensity_and_grad(target.join(np.zeros(8), [0.0, 0.0]))
    # one Cholesky of K_uu; solves: L^-1 K_uf, L^-T W_bar and two M x M in the backward
    assert ops.cholesky == 1 and ops.triangular == 4
    value, grad = target.logdensity_and_grad(target.join(np.zeros(8), [np.log(10.0), 0.0]))
    assert value == -np.inf and np.all(grad == 0)


# ---------------------------------------------------------------------------
# equivalences with the full GP (Z = X, Gaussian likelihood)
# ---------------------------------------------------------------------------
def gaussian_problem(rng, N=8):
    X = np.sort(rng.uniform(-3, 3, N))[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=N)
    return X, y


def test_sampler_target_with_Z_equal_X_is_the_whitened_full_gp_joint():
    """With Z = X, p(f | u) is a point mass at f = u = L v, so
    log q*(v, theta) = log p(y | f = L v) + log N(v; 0, I) + log p(theta)
                     = log p(y | f) + log N(f; 0, K) + log |L| + log p(theta),
    the full-GP joint of (f, theta) transformed to v (Jacobian |df/dv| = |L|)."""
    rng = np.random.default_rng(7)
    X, y = gaussian_problem(rng)
    s2 = 0.09
    k = kernels.SquaredExponential(1, parameterisation="ma")
    prior = priors.IndependentPrior((priors.Gamma(2.0, 2.0), priors.LogNormal(0.0, 1.0)))
    target = SparseTarget(X, y, X, k, likelihoods.Gaussian(s2), prior, jitter=0.0)

    def full_gp_joint_in_v(x):
        v, psi = x[:-2], x[-2:]
        K = k(psi, X)
        L = np.linalg.cholesky(K)
        f = L @ v
        return (stats.norm.logpdf(y, f, np.sqrt(s2)).sum()
                + stats.multivariate_normal(np.zeros(len(y)), K).logpdf(f)
                + np.sum(np.log(np.diag(L))) + prior.log_density(psi))

    for _ in range(5):
        x = target.join(rng.normal(size=len(y)), rng.normal(0, 0.3, 2))
        v, psi = x[:-2], x[-2:]
        f = np.linalg.cholesky(k(psi, X)) @ v
        whitened = (stats.norm.logpdf(y, f, np.sqrt(s2)).sum() + stats.norm.logpdf(v).sum()
                    + prior.log_density(psi))
        value, grad = target.logdensity_and_grad(x)
        assert value == pytest.approx(whitened, abs=1e-8)
        assert value == pytest.approx(full_gp_joint_in_v(x), abs=1e-8)
        np.testing.assert_allclose(grad, finite_difference_grad(full_gp_joint_in_v, x), rtol=1e-5, atol=1e-5)
    # the equivalence is specific to Z = X: with fewer inducing points the value differs
    sub = SparseTarget(X, y, X[::2], k, likelihoods.Gaussian(s2), prior, jitter=0.0)
    assert abs(sub.log_density(sub.join(np.zeros(4), [0.0, 0.0]))
               - full_gp_joint_in_v(target.join(np.zeros(8), [0.0, 0.0]))) > 0.1


def exact_log_marginal(k, psi, X, y, s2):
    return stats.multivariate_normal(np.zeros(len(y)), k(psi, X) + s2 * np.eye(len(y))).logpdf(y)


def test_svgp_with_Z_equal_X_and_optimal_q_gives_the_exact_log_marginal():
    rng = np.random.default_rng(8)
    X, y = gaussian_problem(rng)
    s2, psi = 0.09, np.array([0.2, -0.1])
    k = kernels.SquaredExponential(1, parameterisation="ma")
    model = svgp.SVGPModel(X, y, k, likelihoods.Gaussian(s2), jitter=0.0)
    exact = exact_log_marginal(k, psi, X, y, s2)
    m, R = svgp.optimal_gaussian_q(model, X, psi)
    assert svgp.elbo(model, svgp.SVGPParams(m, R, X, psi)) == pytest.approx(exact, abs=1e-8)
    # L-BFGS over (m, R) from the prior reaches the same value
    result = svgp.fit(model, X, psi, fit_Z=False, fit_psi=False)
    assert result.elbo == pytest.approx(exact, abs=1e-6)
    # and a suboptimal q gives a strictly lower bound
    assert svgp.elbo(model, svgp.SVGPParams(m + 0.1, R, X, psi)) < exact - 1e-3


def test_svgp_optimum_with_fewer_inducing_points_is_the_titsias_bound():
    """For Gaussian noise the optimal Gaussian q(u) attains Titsias' (2009) collapsed bound
    log N(y; 0, Q_nn + s2 I) - tr(K_nn - Q_nn) / (2 s2), Q_nn = K_nu K_uu^-1 K_un."""
    rng = np.random.default_rng(9)
    X, y = gaussian_problem(rng, N=30)
    s2, psi, Z = 0.09, np.array([0.3, 0.0]), np.linspace(-3, 3, 5)[:, None]
    k = kernels.SquaredExponential(1, parameterisation="ma")
    model = svgp.SVGPModel(X, y, k, likelihoods.Gaussian(s2), jitter=0.0)
    Kuf, Kuu = k(psi, Z, X), k(psi, Z)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    titsias = (stats.multivariate_normal(np.zeros(30), Q + s2 * np.eye(30)).logpdf(y)
               - np.trace(k(psi, X) - Q) / (2 * s2))
    m, R = svgp.optimal_gaussian_q(model, Z, psi)
    assert svgp.elbo(model, svgp.SVGPParams(m, R, Z, psi)) == pytest.approx(titsias, abs=1e-8)
    assert svgp.fit(model, Z, psi, fit_Z=False, fit_psi=False).elbo == pytest.approx(titsias, abs=1e-6)
    assert titsias < exact_log_marginal(k, psi, X, y, s2)


def test_svgp_fit_of_inducing_inputs_and_hyperparameters_raises_the_elbo():
    rng = np.random.default_rng(10)
    X, y = toy_data(rng, "probit", 120, 1)
    k = kernels.SquaredExponential(1, parameterisation="ma")
    model = svgp.SVGPModel(X, y, k, likelihoods.Probit(), prior=lognormal_prior(2))
    Z0 = svgp.initial_inducing_inputs(rng, X, 6)
    psi0 = np.array([1.5, -1.0])  # lengthscale 4.5, amplitude 0.14: far too smooth and small
    start = svgp.fit(model, Z0, psi0, fit_Z=False, fit_psi=False)
    full = svgp.fit(model, Z0, psi0)
    assert full.success and full.elbo > start.elbo + 5.0
    assert not np.allclose(full.params.Z, Z0)
    # the fitted q predicts the labels it was fitted to better than chance
    mu, _ = svgp.predict_latent(k, full.params.psi, full.params.Z, full.params.m, X)
    assert np.mean(np.sign(mu[:, 0]) == y) > 0.7


# ---------------------------------------------------------------------------
# HMC and the tuner on known Gaussians
# ---------------------------------------------------------------------------
def gaussian_logdensity(mean, cov):
    P = np.linalg.inv(cov)

    def fn(x):
        d = x - mean
        return -0.5 * d @ P @ d, -P @ d

    return fn


def hmc_chain(rng, fn, x0, n_warmup, n_draws, **options):
    """Joint-HMC warm-up (``mcmc.hmc_adaptation``) and draws on any log density."""
    return runner.run_chain(rng, None, hmc.init(x0, fn), n_warmup=n_warmup, n_draws=n_draws,
                            adapt=mcmc.hmc_adaptation(fn, len(x0), n_warmup, **options))


def inverse_mass(mass):
    """M^-1 as an array: its diagonal or the dense matrix."""
    return mass.inv_diag if mass.inv_chol is None else mass.inv_chol @ mass.inv_chol.T


def moments_within_mcse(draws, mean, cov, n_sigma=4.0):
    """Means and all second central moments within n_sigma batch-means standard errors."""
    m_hat, se_m, _ = batch_means(draws, 40)
    d = draws - mean
    iu = np.triu_indices(len(mean))
    prods = (d[:, :, None] * d[:, None, :])[:, iu[0], iu[1]]
    c_hat, se_c, _ = batch_means(prods, 40)
    return bool(np.all(np.abs(m_hat - mean) < n_sigma * se_m)
                and np.all(np.abs(c_hat - cov[iu]) < n_sigma * se_c)), (m_hat, c_hat, se_m, se_c)


@pytest.mark.parametrize("metric", ["identity", "diagonal", "dense"])
def test_hmc_leaves_a_correlated_gaussian_invariant(metric):
    rng = np.random.default_rng(11)
    mean = np.array([1.0, -2.0, 0.5])
    A = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [-0.3, 0.5, 0.4]])
    cov = A @ A.T
    fn = gaussian_logdensity(mean, cov)
    mass = hmc.mass_matrix(metric, 0.8 * cov + 0.1 * np.eye(3) if metric == "dense" else cov)
    step = mcmc.hmc_kernel(fn, mcmc.HMCParameters(step_size=0.25, n_steps=6, mass=mass))
    state = hmc.init(mean, fn)
    draws, acc = np.empty((20000, 3)), 0
    for i in range(20000):
        state, info = step(rng, state)
        draws[i], acc = state.position, acc + info.accepted
    assert 0.5 < acc / 20000 < 0.99
    ok, detail = moments_within_mcse(draws, mean, cov)
    assert ok, detail
    assert np.all(detail[3] < 0.05)  # the test is sharp ...
    assert not moments_within_mcse(draws, mean, 1.1 * cov)[0]  # ... enough to see a 10% error


def test_tuner_adapts_mass_and_step_size_on_a_badly_scaled_gaussian():
    rng = np.random.default_rng(12)
    sd = np.array([0.01, 1.0, 10.0, 0.3])
    mean = np.array([0.0, 1.0, -5.0, 2.0])
    fn = gaussian_logdensity(mean, np.diag(sd**2))
    chain = hmc_chain(rng, fn, mean + sd, 600, 4000, metric="diag")
    np.testing.assert_allclose(inverse_mass(chain.params["mass"]), sd**2, rtol=0.5)
    n_steps = chain.stats["n_leapfrog"][0]
    assert 1 <= n_steps <= 10 and np.all(chain.stats["n_leapfrog"] == n_steps)  # frozen after warm-up
    assert 0.65 < chain.stats["acceptance_rate"].mean() < 0.95  # near the target 0.8
    ok, detail = moments_within_mcse(chain.draws, mean, np.diag(sd**2))
    assert ok, detail
    # without the mass matrix the 1000:1 scale ratio forces about 100x more leapfrog steps
    flat = hmc_chain(rng, fn, mean + sd, 200, 1, adapt_mass=False, max_steps=1000)
    assert "mass" not in flat.params
    assert mcmc.n_leapfrog_steps(flat.params["step_size"], 1.5, 1000) > 20 * n_steps


def test_dense_metric_tuner_learns_a_strong_correlation():
    rng = np.random.default_rng(19)
    cov = np.array([[1.0, 0.995], [0.995, 1.0]])
    fn = gaussian_logdensity(np.zeros(2), cov)
    dense = hmc_chain(rng, fn, np.ones(2), 400, 3000)  # "auto": 2 dimensions, windows of 80+ draws
    inv_mass = inverse_mass(dense.params["mass"])
    assert dense.params["mass"].kind == "dense" and inv_mass.shape == (2, 2)
    # the warm-up draws are autocorrelated, so the scale is rough; the shape is what matters
    corr = inv_mass[0, 1] / np.sqrt(inv_mass[0, 0] * inv_mass[1, 1])
    assert corr > 0.98
    assert 0.3 < inv_mass[0, 0] < 3.0
    diag = hmc_chain(rng, fn, np.ones(2), 400, 1, metric="diag", max_steps=1000)
    assert diag.params["mass"].kind == "diagonal"
    # the diagonal metric cannot undo the correlation: about 10x more leapfrog steps
    assert mcmc.n_leapfrog_steps(diag.params["step_size"], 1.5, 1000) > 5 * dense.stats["n_leapfrog"][0]
    assert moments_within_mcse(dense.draws, np.zeros(2), cov)[0]


def test_short_warmups_adapt_the_step_size_only_and_restart_it_after_each_window():
    # a warm-up of 20 has no window of MIN_WINDOW draws: the identity metric stays
    rng = np.random.default_rng(20)
    fn = gaussian_logdensity(np.zeros(3), np.diag([0.01, 1.0, 4.0]))
    short = hmc_chain(rng, fn, np.ones(3), 20, 1)
    assert short.params["mass"].kind == "identity"
    # 80 iterations: one window (12, 64); after it H&G's Alg. 4 restarts eps in the new metric
    calls = []
    ad = mcmc.hmc_adaptation(fn, 3, 80)
    find = ad.find_step_size
    ad = dataclasses.replace(ad, find_step_size=lambda *a: calls.append(a[2].kind) or find(*a))
    chain = runner.run_chain(rng, None, hmc.init(np.ones(3), fn), n_warmup=80, n_draws=1, adapt=ad)
    assert calls == ["identity", "dense"] and chain.params["mass"].kind == "dense"  # 52 draws >= 3 per dimension
    assert chain.warmup["adapt_n_steps"] > 2  # Alg. 4's gradient evaluations are warm-up cost


def test_dual_averaging_finds_the_step_size_for_a_target_acceptance():
    # analytic toy: acceptance exp(-eps) reaches 0.8 at eps = -log 0.8
    # with the sparse tuner's settings (target 0.8, t0 = mcmc.DA_T0)
    da = adaptation.dual_averaging_init(1.0)
    for _ in range(2000):
        da = adaptation.dual_averaging_update(da, np.exp(-np.exp(da.log_step_size)), target=0.8, t0=mcmc.DA_T0)
    assert adaptation.dual_averaging_final_step_size(da) == pytest.approx(-np.log(0.8), rel=0.02)


# ---------------------------------------------------------------------------
# Geweke joint-distribution test of the joint (v, theta) sampler
# ---------------------------------------------------------------------------
class TinyProbitModel:
    """N = 5 probit observations, M = 3 inducing points, psi = (log l, log sigma_f).

    The sampler's target (T1) is exp(sum_n E_n(y_n)) p(v) p(psi), with
    E_n(y) = E_{p(f_n | u)} log Phi(y f_n).  It is the exact posterior of the
    generative model
        (v, psi) ~ p(v) p(psi) prod_n c_n / const,   c_n = sum_{y = +-1} exp(E_n(y)) <= 1
        y_n | v, psi ~ exp(E_n(y_n)) / c_n           (independent),
    since the c_n cancel; c_n <= 1 by Jensen, so the marginal of (v, psi) is
    drawn by rejection from the prior with acceptance prod_n c_n.
    """

    X = np.array([-2.0, -1.0, 0.0, 1.2, 2.0])[:, None]
    Z = np.array([-1.5, 0.0, 1.5])[:, None]
    kernel = kernels.SquaredExponential(1, parameterisation="ma")
    prior = priors.IndependentPrior((priors.LogNormal(0.0, 0.4), priors.LogNormal(0.0, 0.4)))

    def target(self, y, prior=None):
        return SparseTarget(self.X, y, self.Z, self.kernel, likelihoods.Probit(), prior or self.prior)

    def label_probabilities(self, v, psi):
        t = self.target(np.ones(5))
        cond = svgp.whitened_conditional(self.kernel, psi, self.Z, self.X, t.jitter)
        mu, var = cond.W.T @ v[:, None], cond.var[:, None]
        e_pos = np.exp(svgp.expected_log_lik(t.likelihood, np.ones(5), mu, var)[0])
        e_neg = np.exp(svgp.expected_log_lik(t.likelihood, -np.ones(5), mu, var)[0])
        return e_pos, e_pos + e_neg

    def simulate_params(self, rng):
        while True:
            v, psi = rng.standard_normal(3), self.prior.sample_psi(rng)
            _, c = self.label_probabilities(v, psi)
            if rng.uniform() < np.prod(c):
                return v, psi

    def simulate_data(self, rng, params):
        e_pos, c = self.label_probabilities(*params)
        return np.where(rng.uniform(size=5) < e_pos / c, 1.0, -1.0)

    @staticmethod
    def test_fn(params, y):
        v, psi = params
        return np.concatenate([v, psi, v**2, psi**2, [psi[0] * psi[1], y.mean(), y @ np.tanh(v[[0, 1, 1, 2, 2]])]])

    names = ["v0", "v1", "v2", "log_l", "log_sf", "v0^2", "v1^2", "v2^2", "log_l^2", "log_sf^2",
             "log_l*log_sf", "mean y", "y.tanh(v)"]


def joint_transition(model, params_hmc, prior=None):
    def transition(rng, params, y):
        target = model.target(y, prior)
        state = hmc.init(target.join(*params), target.logdensity_and_grad)
        state, _ = mcmc.hmc_kernel(target.logdensity_and_grad, params_hmc)(rng, state)
        return target.split(state.position)[0][:, 0], target.split(state.position)[1]

    return transition


HMC_TINY = mcmc.HMCParameters(step_size=0.3, n_steps=6, mass=hmc.mass_matrix("diagonal", [1.0, 1.0, 1.0, 0.16, 0.16]))


@pytest.mark.parametrize("metric", ["diagonal", "dense"])
def test_the_one_hmc_with_fixed_length_and_jitter_is_the_former_sparse_kernel(metric):
    """``hmc.step(n_steps=L, step_size_jitter=j)`` and the HMC this module had before
    (``reference.hmc_fixed_length_step``) run coupled -- one seed each, the same random
    numbers in the same order -- on the tiny probit posterior: the same accept decisions and
    the same path up to rounding (the two integrators group the momentum updates differently,
    so the draws are not bit for bit equal)."""
    model = TinyProbitModel()
    target = model.target(np.array([1.0, 1.0, -1.0, 1.0, -1.0]))
    fn = target.logdensity_and_grad
    scale = np.array([1.0, 1.0, 1.0, 0.4, 0.4])
    cov = np.outer(scale, scale) * (0.7 * np.eye(5) + 0.3)  # correlated, so a dense metric differs from a diagonal one
    inv_mass = cov if metric == "dense" else np.diag(cov)
    mass = hmc.mass_matrix(metric, inv_mass)
    rng_one, rng_ref = np.random.default_rng(21), np.random.default_rng(21)
    state = hmc.init(target.join(np.zeros(3), np.zeros(2)), fn)
    x_ref, accepted = state.position, []
    for _ in range(200):
        state, info = hmc.step(rng_one, state, fn, 0.3, mass, n_steps=6, step_size_jitter=0.2)
        x_ref, acc = reference.hmc_fixed_length_step(rng_ref, x_ref, fn, 0.3, 6, inv_mass, 0.2)
        assert info.accepted == acc and info.n_leapfrog == 6
        np.testing.assert_allclose(state.position, x_ref, rtol=1e-9, atol=1e-12)
        accepted.append(acc)
    assert 0.5 < np.mean(accepted) < 1.0  # both branches of the Metropolis step were taken


def test_geweke_joint_hmc_on_v_and_theta():
    model = TinyProbitModel()
    rng = np.random.default_rng(13)
    mc = marginal_conditional(rng, model.simulate_params, model.simulate_data, model.test_fn, 3000)
    sc = successive_conditional(rng, model.simulate_params, model.simulate_data,
                                joint_transition(model, HMC_TINY), model.test_fn, 3000)
    result = compare(mc, sc, names=model.names)
    assert result.batches_ok, result.summary()
    assert not result.reject, result.summary()


def test_geweke_detects_a_sampler_with_the_wrong_prior():
    model = TinyProbitModel()
    rng = np.random.default_rng(14)
    wrong = priors.IndependentPrior((priors.LogNormal(0.0, 0.4), priors.LogNormal(0.4, 0.4)))
    mc = marginal_conditional(rng, model.simulate_params, model.simulate_data, model.test_fn, 1000)
    sc = successive_conditional(rng, model.simulate_params, model.simulate_data,
                                joint_transition(model, HMC_TINY, prior=wrong), model.test_fn, 1000)
    assert compare(mc, sc, names=model.names).reject


def test_geweke_gibbs_baseline():
    model = TinyProbitModel()
    rng = np.random.default_rng(15)
    params = mcmc.GibbsParameters(mcmc.HMCParameters(0.3, 6, hmc.mass_matrix("identity", dim=3)), 0.3 * np.eye(2))

    def transition(rng, p, y):
        target = model.target(y)
        state, _ = mcmc.gibbs_step(rng, mcmc.gibbs_init(target, p[0], p[1]), target, params)
        return state.v.position, state.psi

    mc = marginal_conditional(rng, model.simulate_params, model.simulate_data, model.test_fn, 3000)
    sc = successive_conditional(rng, model.simulate_params, model.simulate_data, transition,
                                model.test_fn, 3000)
    result = compare(mc, sc, names=model.names)
    assert result.batches_ok, result.summary()
    assert not result.reject, result.summary()


# ---------------------------------------------------------------------------
# end to end: SVGP initialisation, joint and Gibbs chains, reproducibility
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_classification():
    rng = np.random.default_rng(16)
    X, y = toy_data(rng, "probit", 60, 1)
    k = kernels.SquaredExponential(1, parameterisation="ma")
    prior = lognormal_prior(2)
    fit = svgp.fit(svgp.SVGPModel(X, y, k, likelihoods.Probit(), prior=prior),
                   svgp.initial_inducing_inputs(rng, X, 5), np.zeros(2))
    target = SparseTarget(X, y, fit.params.Z, k, likelihoods.Probit(), prior)
    return target, fit


@pytest.mark.parametrize("sampler", [mcmc.sample_joint, mcmc.sample_gibbs])
def test_same_seed_gives_the_same_chain(small_classification, sampler):
    target, fit = small_classification

    def run(seed):
        rng = np.random.default_rng(seed)
        return sampler(rng, target, initial_position(rng, target, fit.params), n_warmup=40, n_draws=30)

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a.draws, b.draws)
    np.testing.assert_array_equal(a.extra["v"], b.extra["v"])
    np.testing.assert_array_equal(a.stats["lp"], b.stats["lp"])
    assert a.params["step_size"] == b.params["step_size"]
    assert not np.array_equal(a.draws, c.draws)


@pytest.mark.parametrize("spec", sparse_golden.RUNS, ids=[r[0] for r in sparse_golden.RUNS])
def test_chains_reproduce_the_golden_file_bit_for_bit(spec):
    """Warm-up and kept draws of ``tests/data/sparse_golden.npz`` (made by
    ``tests/sparse_golden.py``; see ``tests/data/README.md``): a restructuring changes no number."""
    golden = np.load(GOLDEN)
    for key, value in sparse_golden.run(*spec).items():
        np.testing.assert_array_equal(value, golden[f"{spec[0]}/{key}"], err_msg=f"{spec[0]}/{key}")


def test_joint_chain_runs_and_predicts(small_classification):
    target, fit = small_classification
    rng = np.random.default_rng(17)
    chain = mcmc.sample_joint(rng, target, initial_position(rng, target, fit.params), n_warmup=150,
                              n_draws=150)
    v, psi = chain.extra["v"], chain.draws
    assert v.shape == (150, 5, 1) and psi.shape == (150, 2)
    assert 0.5 < chain.stats["acceptance_rate"].mean() < 0.99
    assert np.all(chain.stats["n_cubic"] > 0) and chain.warmup["n_cubic"] > 150
    p = predict_class_probabilities(target, v, psi, target.X).mean(axis=0)
    assert np.all((p > 0) & (p < 1))
    assert np.mean(np.where(p > 0.5, 1.0, -1.0) == target.y) > 0.7


# ---------------------------------------------------------------------------
# posterior predictive
# ---------------------------------------------------------------------------
def test_predictive_with_Z_equal_X_is_the_full_gp_conditional_given_f():
    rng = np.random.default_rng(18)
    X, y = gaussian_problem(rng)
    k = kernels.SquaredExponential(1, parameterisation="ma")
    target = SparseTarget(X, np.where(y > 0, 1.0, -1.0), X, k, likelihoods.Probit(), lognormal_prior(2),
                               jitter=0.0)
    psi = np.array([0.1, 0.2])
    v = rng.normal(size=(2, 8))
    Xs = np.linspace(-3, 3, 5)[:, None]
    means, variances = predict_latent_draws(target, v, np.tile(psi, (2, 1)), Xs)
    K, Ks = k(psi, X), k(psi, Xs, X)
    f = v @ np.linalg.cholesky(K).T  # f = L v per draw
    np.testing.assert_allclose(means[:, :, 0], f @ np.linalg.solve(K, Ks.T), atol=1e-7)
    np.testing.assert_allclose(variances[0], np.diag(k(psi, Xs) - Ks @ np.linalg.solve(K, Ks.T)), atol=1e-7)
    # probit: E Phi(f*) = Phi(mu / sqrt(1 + s2))
    probs = predict_class_probabilities(target, v, np.tile(psi, (2, 1)), Xs)
    np.testing.assert_allclose(probs, ndtr(means[:, :, 0] / np.sqrt(1 + variances)), atol=1e-8)
    # Cox intensity: E exp(f*) = exp(mu + s2 / 2), checked by Monte Carlo
    lam = predict_intensity(target, v, np.tile(psi, (2, 1)), Xs, exposure=2.0)
    draws = means[0, :, 0] + np.sqrt(variances[0]) * rng.standard_normal((200_000, 5))
    np.testing.assert_allclose(lam[0], 2.0 * np.exp(draws).mean(axis=0), rtol=0.01)


def test_fused_probit_log_lik_and_d1_matches_separate_calls():
    """The fused likelihood path of the quadrature (one log Phi pass, Hensman
    et al. 2015 poster "Tricks: quadrature") equals log_lik and d1 called
    separately, bit for bit, and so does expected_log_lik with and without it."""
    from gpbayes import likelihoods
    from gpbayes.sparse import svgp

    rng = np.random.default_rng(3)
    lik = likelihoods.Probit()
    y = np.where(rng.uniform(size=50) < 0.5, -1.0, 1.0)
    F = rng.normal(scale=4.0, size=(20, 50))
    ll, d1 = lik.log_lik_and_d1(y, F)
    assert np.array_equal(ll, lik.log_lik(y, F))
    assert np.array_equal(d1, lik.d1(y, F))

    class Separate:  # the same likelihood without the fused method
        log_lik = staticmethod(lik.log_lik)
        d1 = staticmethod(lik.d1)

    mu = rng.normal(size=(50, 1))
    var = rng.uniform(0.0, 3.0, size=(50, 1))
    fused = svgp.expected_log_lik(lik, y, mu, var, 20)
    plain = svgp.expected_log_lik(Separate(), y, mu, var, 20)
    for a, b in zip(fused, plain):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("M,N,d,ard,param", [(6, 40, 1, False, "ma"), (33, 517, 2, True, "fg"),
                                             (64, 333, 3, False, "gplvm"), (130, 2000, 2, True, "amis")])
def test_kernel_cross_covariance_into_is_the_kernel_matrix_bit_for_bit(M, N, d, ard, param):
    """The sparse target's K_uf, built in place in its workspace (``cross_covariance_into``),
    is ``kernel(psi, Z, X)`` to the bit, including coincident points and a copy in ``copy_to``."""
    rng = np.random.default_rng(M)
    k = kernels.SquaredExponential(d, ard=ard, parameterisation=param)
    X = rng.normal(size=(N, d)) * 2.0
    Z = np.concatenate([X[:M // 2], rng.normal(size=(M - M // 2, d))])
    psi = rng.normal(0.0, 0.5, k.n_params)
    out, scratch = np.empty((M, N), order="F"), np.empty((M, N), order="F")
    K = k.cross_covariance_into(psi, Z, X, out, scratch)
    assert K is out
    np.testing.assert_array_equal(out, k(psi, Z, X))


@pytest.mark.parametrize("name", ["probit", "poisson", "robustmax"])
def test_target_with_workspace_is_bit_identical_to_the_plain_path(name, monkeypatch):
    """log q* and its gradients computed in the reused M x N buffers (``svgp.workspace``) equal
    those of the path without them (fresh arrays, ``kernel(psi, Z, X)``, W_bar in one piece) to the
    bit, and evaluating another target of the same shape in between changes nothing."""
    rng = np.random.default_rng(11)
    N, M, d = 700, 70, 2  # W_bar is formed in two column blocks
    lik = LIKELIHOODS[name](N, rng)
    X, y = toy_data(rng, name, N, d)
    k = kernels.SquaredExponential(d, ard=True, parameterisation="ma")
    prior = priors.IndependentPrior(tuple(priors.Gamma(2.0, 1.0) for _ in range(k.n_params)))
    target = SparseTarget(X, y, X[:M], k, lik, prior)
    other = SparseTarget(X[::-1], y[::-1], X[M:2 * M], k, lik, prior)
    xs = [target.join(rng.normal(size=(M, target.n_latent)), rng.normal(0, 0.3, k.n_params)) for _ in range(2)]
    fast = []
    for x in xs:
        fast.append(target.logdensity_and_grad(x))
        other.logdensity_and_grad(x)
    assert svgp.workspace(M, N) is not None
    monkeypatch.setattr(svgp, "WORKSPACE_MAX_BYTES", 0)  # no workspace: the general path
    assert svgp.workspace(M, N) is None
    for x, (value, grad) in zip(xs, fast):
        value0, grad0 = target.logdensity_and_grad(x)
        assert value == value0
        np.testing.assert_array_equal(grad, grad0)
