"""Supervised GPLVM (Gadd et al.): Psi-statistics, the bound, the pseudo-marginal sampler.

Numbers are checked against Monte Carlo (Psi-statistics), finite
differences (gradients), a naive dense reference (the bound), an
independent prior-proposal importance sampler (log p(Y | X, psi)), an exact
conjugate posterior (the elliptical slice update of Z) and a Geweke
joint-distribution test (Alg. 2).
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from gpbayes import linalg, priors
from gpbayes.gplvm import (
    SupervisedGPLVM,
    VariationalParams,
    elbo,
    fit_type2_ml,
    initial_variational,
    latent_posterior,
    optimise_variational,
    psi_stats,
    psi_stats_vjp,
)
from gpbayes.gplvm import pseudo_marginal as pm

import geweke
from geweke import batch_means
from reference import finite_difference_grad, se_kernel_double_loop


def fd(fun, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    return finite_difference_grad(lambda v: fun(v.reshape(x.shape)), x.ravel(), eps).reshape(x.shape)


def random_problem(seed, n=7, kx=2, ky=3, kz=2, m=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, kx))
    Y = rng.normal(size=(n, ky))
    model = SupervisedGPLVM(X, Y, kz, m)
    psi = rng.normal(scale=0.3, size=model.n_params)
    params = VariationalParams(rng.normal(size=(n, kz)), rng.normal(size=(n, kz)), rng.normal(size=(m, kz)))
    return model, psi, params


# the tiny problem of the bound and estimator tests: N = 6, k_z = 1, M = N,
# psi = (log sigma, log theta_1, log theta_S, log beta) with weak-ish data
TINY_X = np.linspace(0.0, 3.0, 6)[:, None]
TINY_PSI = np.array([math.log(0.3), 0.0, math.log(0.5), math.log(4.0)])


def tiny_model(ky=1):
    rng = np.random.default_rng(3)
    Y = 0.5 * np.sin(TINY_X) + 0.05 * rng.normal(size=(6, 1))
    if ky == 2:
        Y = np.hstack([Y, 0.5 * np.cos(TINY_X)])
    return SupervisedGPLVM(TINY_X, Y, latent_dim=1, n_inducing=6)


# ---------------------------------------------------------------------------
# Psi-statistics
# ---------------------------------------------------------------------------
def test_psi_statistics_match_monte_carlo():
    rng = np.random.default_rng(0)
    n, m, kz, S = 5, 4, 2, 100_000
    mu = rng.normal(size=(n, kz))
    s = rng.uniform(0.1, 1.0, size=(n, kz))
    U = rng.normal(size=(m, kz))
    a, w = 1.3, np.array([0.7, 2.0])
    ps = psi_stats(a, w, mu, s, U)
    Z = mu[None] + np.sqrt(s)[None] * rng.standard_normal((S, n, kz))
    K = np.stack([se_kernel_double_loop(Z[i], U, a, w) for i in range(2000)])  # naive kernel on a subset
    d = Z[:, :, None, :] - U[None, None]
    Kfu = a * np.exp(-0.5 * np.einsum("snmj,j->snm", d * d, w))
    np.testing.assert_allclose(K, Kfu[:2000], rtol=1e-12)
    assert ps.psi0 == pytest.approx(n * a)
    # Psi1: every entry within 4.5 MC standard errors
    se1 = Kfu.std(axis=0) / math.sqrt(S)
    assert np.all(np.abs(Kfu.mean(axis=0) - ps.psi1) < 4.5 * se1), (Kfu.mean(axis=0) - ps.psi1) / se1
    P2 = np.einsum("snm,snk->smk", Kfu, Kfu)
    se2 = P2.std(axis=0) / math.sqrt(S)
    assert np.all(np.abs(P2.mean(axis=0) - ps.psi2) < 4.5 * se2), (P2.mean(axis=0) - ps.psi2) / se2
    # the check can fail: the statistics of q with doubled variances are many standard errors away
    wrong = psi_stats(a, w, mu, 2 * s, U)
    assert np.max(np.abs(Kfu.mean(axis=0) - wrong.psi1) / se1) > 20


def test_psi_statistics_at_zero_variance_are_kernel_products():
    rng = np.random.default_rng(1)
    mu, U = rng.normal(size=(6, 2)), rng.normal(size=(3, 2))
    a, w = 0.8, np.array([1.5, 0.4])
    ps = psi_stats(a, w, mu, np.zeros_like(mu), U)
    K = se_kernel_double_loop(mu, U, a, w)
    np.testing.assert_allclose(ps.psi1, K, rtol=1e-12)
    np.testing.assert_allclose(ps.psi2, K.T @ K, rtol=1e-12)


def test_psi_statistics_gradients_finite_differences():
    rng = np.random.default_rng(2)
    n, m, kz = 5, 4, 2
    mu, s, U = rng.normal(size=(n, kz)), rng.uniform(0.1, 1, size=(n, kz)), rng.normal(size=(m, kz))
    a, w = 1.3, np.array([0.7, 2.0])
    G0, G1, G2 = 0.3, rng.normal(size=(n, m)), rng.normal(size=(m, m))

    def F(mu, s, U, la, lw):
        p = psi_stats(math.exp(la), np.exp(lw), mu, s, U)
        return G0 * p.psi0 + np.sum(G1 * p.psi1) + np.sum(0.5 * (G2 + G2.T) * p.psi2)

    g = psi_stats_vjp(a, w, mu, s, U, G0, G1, G2)
    la, lw = math.log(a), np.log(w)
    np.testing.assert_allclose(g.mean, fd(lambda x: F(x, s, U, la, lw), mu), atol=1e-7)
    np.testing.assert_allclose(g.variance, fd(lambda x: F(mu, x, U, la, lw), s), atol=1e-7)
    np.testing.assert_allclose(g.inducing, fd(lambda x: F(mu, s, x, la, lw), U), atol=1e-7)
    assert g.log_amplitude == pytest.approx(fd(lambda x: F(mu, s, U, x[0], lw), [la])[0], abs=1e-7)
    np.testing.assert_allclose(g.log_precisions, fd(lambda x: F(mu, s, U, la, x), lw), atol=1e-7)


# ---------------------------------------------------------------------------
# the bound (Sec. 3)
# ---------------------------------------------------------------------------
def naive_bound(model, psi, params):
    """Titsias & Lawrence (2010) eq. 14 per output, plus the dense Gaussian KL, with explicit inverses."""
    kx, kz = model.input_dim, model.latent_dim
    n, D = model.Y.shape
    sig, theta, theta_s, beta = np.exp(psi[:kx]), np.exp(psi[kx:kx + kz]), math.exp(psi[-2]), math.exp(psi[-1])
    Kz = se_kernel_double_loop(model.X, model.X, 1.0, sig) + model.latent_jitter * np.eye(n)
    Lz = np.linalg.cholesky(Kz)
    mu = Lz @ params.whitened_mean
    Kz_inv = np.linalg.inv(Kz)
    S = [np.linalg.inv(Kz_inv + np.diag(np.exp(params.log_lambda[:, j]))) for j in range(kz)]
    s = np.stack([np.diag(Sj) for Sj in S], axis=1)
    kl = sum(
        0.5 * (np.trace(Kz_inv @ S[j]) + mu[:, j] @ Kz_inv @ mu[:, j] - n
               + np.linalg.slogdet(Kz)[1] - np.linalg.slogdet(S[j])[1])
        for j in range(kz)
    )
    ps = psi_stats(theta_s, theta, mu, s, params.inducing)
    m = params.inducing.shape[0]
    Ku = se_kernel_double_loop(params.inducing, params.inducing, theta_s, theta) + model.inducing_jitter * theta_s * np.eye(m)
    A = Ku + beta * ps.psi2
    F = 0.0
    for i in range(D):
        y = model.Y[:, i]
        F += (-0.5 * n * math.log(2 * math.pi) + 0.5 * n * math.log(beta) + 0.5 * np.linalg.slogdet(Ku)[1]
              - 0.5 * np.linalg.slogdet(A)[1] - 0.5 * beta * y @ y
              + 0.5 * beta**2 * y @ ps.psi1 @ np.linalg.solve(A, ps.psi1.T @ y)
              - 0.5 * beta * ps.psi0 + 0.5 * beta * np.trace(np.linalg.solve(Ku, ps.psi2)))
    return F - kl


@pytest.mark.parametrize("seed", [0, 1])
def test_bound_matches_naive_reference(seed):
    model, psi, params = random_problem(seed)
    assert elbo(model, psi, params) == pytest.approx(naive_bound(model, psi, params), rel=1e-9, abs=1e-9)


def test_bound_gradients_finite_differences():
    model, psi, params = random_problem(5)
    _, g = elbo(model, psi, params, hyper_gradient=True)
    f = lambda **kw: elbo(model, psi, params._replace(**kw))  # noqa: E731
    np.testing.assert_allclose(g.whitened_mean, fd(lambda x: f(whitened_mean=x), params.whitened_mean), atol=1e-6)
    np.testing.assert_allclose(g.log_lambda, fd(lambda x: f(log_lambda=x), params.log_lambda), atol=1e-6)
    np.testing.assert_allclose(g.inducing, fd(lambda x: f(inducing=x), params.inducing), atol=1e-6)
    np.testing.assert_allclose(g.psi, fd(lambda x: elbo(model, x, params), psi), atol=1e-6)
    # the gradient-only path gives the same variational gradient
    _, g2 = elbo(model, psi, params, gradient=True)
    np.testing.assert_allclose(g2.pack(), g.pack())


def test_variational_optimum_is_stationary_and_has_opper_archambeau_form():
    """At the optimum lambda_j = -2 dF~/ds_j (vb module docstring); check via the gradient."""
    model, psi, _ = random_problem(7, n=6, kz=1, ky=2, m=3)
    res = optimise_variational(model, psi, tol=1e-12, max_iter=3000)
    start = elbo(model, psi, initial_variational(model, psi))
    assert res.bound > start
    _, g = elbo(model, psi, res.params, gradient=True)
    assert np.max(np.abs(g.pack())) < 1e-3, g


@pytest.mark.parametrize("ky", [1, 2])
def test_bound_below_log_marginal_on_tiny_problem(ky):
    """bound <= log p(Y | X, psi), estimated two independent ways with 20000 draws each."""
    model = tiny_model(ky)
    res = optimise_variational(model, TINY_PSI)
    rng = np.random.default_rng(11)
    est = pm.pseudo_marginal_estimate(rng, model, TINY_PSI, 20_000, params=res.params, optimise=False)
    w = np.exp(est.log_weights - est.log_marginal)
    se_q = w.std() / math.sqrt(w.size)  # delta method: se of the log estimate
    # independent estimator: importance sampling from the prior p(Z | X, sigma)
    L = model.latent_prior_chol(TINY_PSI)
    Z = (L @ rng.standard_normal((6, 20_000))).T[:, :, None]
    ll = pm._log_likelihoods(model, TINY_PSI, Z)
    log_p_prior = float(logsumexp(ll) - math.log(ll.size))
    wp = np.exp(ll - log_p_prior)
    se_p = wp.std() / math.sqrt(wp.size)
    assert abs(est.log_marginal - log_p_prior) < 4 * math.hypot(se_q, se_p), (est.log_marginal, log_p_prior)
    assert max(se_q, se_p) < 0.05
    assert res.bound < min(est.log_marginal, log_p_prior) - 4 * max(se_q, se_p), (res.bound, est.log_marginal)


def test_kl_and_covariance_of_q_are_the_dense_ones():
    model, psi, params = random_problem(3, n=5, kz=2)
    q = latent_posterior(model, psi, params)
    Kz = model.latent_prior_cov(psi)
    for j in range(2):
        S = np.linalg.inv(np.linalg.inv(Kz) + np.diag(np.exp(params.log_lambda[:, j])))
        np.testing.assert_allclose(q.covariance(j), S, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(q.marginal_var[:, j], np.diag(S), rtol=1e-8)


# ---------------------------------------------------------------------------
# eq. 6: the pseudo-marginal estimate is unbiased
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sign_symmetric", [False, True])
def test_pseudo_marginal_estimate_is_unbiased(sign_symmetric):
    model = tiny_model()
    params = optimise_variational(model, TINY_PSI).params
    rng = np.random.default_rng(21)
    ref = pm.pseudo_marginal_estimate(rng, model, TINY_PSI, 60_000, params=params, optimise=False,
                                      sign_symmetric=sign_symmetric)
    w_ref = np.exp(ref.log_weights - ref.log_marginal)
    se_ref = w_ref.std() / math.sqrt(w_ref.size)
    # R replicates of the Q = 2 estimate: one call with R Q independent draws, cut into R groups
    R, Q = 4000, 2
    bulk = pm.pseudo_marginal_estimate(rng, model, TINY_PSI, R * Q, params=params, optimise=False,
                                       sign_symmetric=sign_symmetric)
    assert bulk.log_marginal == pytest.approx(logsumexp(bulk.log_weights) - math.log(R * Q), abs=1e-12)
    logs = logsumexp(bulk.log_weights.reshape(R, Q), axis=1) - math.log(Q)
    ratio = np.exp(logs - ref.log_marginal)  # p~ / p_ref
    se = math.hypot(ratio.std() / math.sqrt(R), se_ref)
    assert abs(ratio.mean() - 1.0) < 4 * se, (ratio.mean(), se)
    assert se < 0.05
    # ... while exp(E log p~) is visibly biased low (Jensen): the check has power
    assert math.exp(logs.mean() - ref.log_marginal) < 1.0 - 4 * se


def test_stacked_importance_likelihoods_match_one_at_a_time_and_dense(monkeypatch):
    """eq. 1 for a stack of Q draws (one batched Cholesky) = ``log_likelihood`` per draw = a dense reference."""
    from scipy.stats import multivariate_normal

    model = tiny_model(ky=2)
    psi = TINY_PSI
    q = latent_posterior(model, psi, optimise_variational(model, psi, max_iter=20).params)
    samples = pm.sample_latent(np.random.default_rng(5), q, 7)
    with linalg.count_ops() as ops:
        got = pm._log_likelihoods(model, psi, samples)
    assert ops.cubic == 7  # one O(n^3) operation per draw, as before
    one = np.array([pm.log_likelihood(model, psi, Z) for Z in samples])
    np.testing.assert_allclose(got, one, rtol=1e-12)  # K_f is built in another order there
    _, psi_f, log_beta = model.split(psi)
    for Z, g in zip(samples, got):
        C = se_kernel_double_loop(Z, Z, math.exp(psi_f[-1]), np.exp(psi_f[:-1])) + math.exp(-log_beta) * np.eye(6)
        ref = sum(multivariate_normal(np.zeros(6), C).logpdf(y) for y in model.Y.T)
        assert g == pytest.approx(ref, rel=1e-10)

    # a stack with a matrix that is not positive definite falls back to the per-draw path (jitter, errors)
    def refuse(C):
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(pm.np.linalg, "cholesky", refuse)
    with linalg.count_ops() as ops:
        loop = pm._log_likelihoods(model, psi, samples)
    assert ops.cubic >= 7 and np.array_equal(loop, got)  # same LAPACK dpotrf/dtrtrs: the same numbers to the bit


# ---------------------------------------------------------------------------
# Alg. 3: the elliptical slice update of Z on a conjugate case
# ---------------------------------------------------------------------------
def test_elliptical_latent_step_conjugate_posterior():
    """Prior prod_j N(z_j | 0, K), likelihood prod_j N(y_j | z_j, s_j^2 I): the exact posterior is known."""
    X = np.linspace(0, 2, 4)[:, None]
    K = se_kernel_double_loop(X, X, 1.0, np.array([2.0])) + 1e-6 * np.eye(4)
    L = linalg.cholesky(K)
    Y = np.array([[0.5, -1.0], [1.2, -0.3], [0.1, 0.4], [-0.6, 1.1]])
    s2 = np.array([0.2, 0.5])  # different per column: a transposed vec(Z) would be caught

    def log_lik(Z):
        return float(-0.5 * np.sum((Y - Z) ** 2 / s2) - 0.5 * 4 * np.sum(np.log(2 * np.pi * s2)))

    means = np.stack([K @ np.linalg.solve(K + s2[j] * np.eye(4), Y[:, j]) for j in range(2)], axis=1)
    var = np.stack([np.diag(K - K @ np.linalg.solve(K + s2[j] * np.eye(4), K)) for j in range(2)], axis=1)
    rng = np.random.default_rng(5)
    Z, ll = np.zeros((4, 2)), log_lik(np.zeros((4, 2)))
    draws = np.empty((20_000, 4, 2))
    for i in range(draws.shape[0]):
        Z, ll, _ = pm.elliptical_latent_step(rng, Z, ll, L, log_lik)
        draws[i] = Z
    d = draws[500:].reshape(-1, 8)
    m_hat, se_m, _ = batch_means(d, 50)
    v_hat, se_v, _ = batch_means((d - means.ravel()) ** 2, 50)
    assert np.all(np.abs(m_hat - means.ravel()) < 4 * se_m), (m_hat, means.ravel(), se_m)
    assert np.all(np.abs(v_hat - var.ravel()) < 4 * se_v), (v_hat, var.ravel(), se_v)
    assert np.all(se_m < 0.02)


# ---------------------------------------------------------------------------
# Alg. 2
# ---------------------------------------------------------------------------
def small_chain_setup():
    model = tiny_model(ky=2)
    model = SupervisedGPLVM(model.X, model.Y, 1, 3)
    prior = priors.IndependentPrior(tuple(priors.LogNormal(float(p), 0.5) for p in TINY_PSI))
    config = pm.PMGibbsConfig(
        blocks=(model.block(["sigma_0", "theta_0"]), model.block(["theta_S", "beta"])),
        n_imp=4, adapt_start=5, vb_options={"max_iter": 30},
    )
    return model, prior, config


def _chain_arrays(ch):
    return {"psi": ch.draws, "lp": ch.stats["lp"], "n_cubic": ch.stats["n_cubic"],
            "n_shrinkages": ch.stats["n_shrinkages"], **ch.extra}


def test_same_seed_same_chain_bit_for_bit():
    model, prior, config = small_chain_setup()
    runs = [_chain_arrays(pm.run_chain(np.random.default_rng(s), model, prior, TINY_PSI, config, 12,
                                          n_latent_steps=2)) for s in (7, 7, 8)]
    for key in ("psi", "log_marginal", "accepted", "acceptance_prob", "Z", "n_cubic", "n_shrinkages", "lp"):
        assert np.array_equal(runs[0][key], runs[1][key]), key
    assert not np.array_equal(runs[0]["psi"], runs[2]["psi"])
    assert np.array_equal(runs[0]["lp"], runs[0]["log_marginal"] + runs[0]["log_prior"])
    # the exact uncollapsing variant shares the psi chain only until its first extra draw
    again = pm.run_chain(np.random.default_rng(7), model, prior, TINY_PSI, config, 2, n_latent_steps=2,
                            latent_start="resample")
    assert np.array_equal(again.draws[0], runs[0]["psi"][0])
    assert np.all(np.isfinite(again.extra["Z"]))
    assert runs[0]["accepted"].any()
    # the stored estimate changes only on acceptance
    lm, acc = runs[0]["log_marginal"], runs[0]["accepted"].any(axis=1)
    assert np.all(lm[1:][~acc[1:]] == lm[:-1][~acc[1:]])
    # warm-up iterations are the first iterations of the same chain, discarded
    tail = pm.run_chain(np.random.default_rng(7), model, prior, TINY_PSI, config, 8, n_warmup=4,
                           n_latent_steps=2)
    assert np.array_equal(tail.draws, runs[0]["psi"][4:]) and np.array_equal(tail.extra["Z"], runs[0]["Z"][4:])
    assert tail.warmup["n_iterations"] == 4
    with pytest.raises(ValueError, match="latent_start"):
        pm.run_chain(np.random.default_rng(7), model, prior, TINY_PSI, config, 2, latent_start="restart")


def test_haario_adaptation_is_the_sample_covariance_of_the_chain():
    model, prior, config = small_chain_setup()
    rng = np.random.default_rng(3)
    state = pm.init(rng, model, prior, TINY_PSI, config)
    eta = []
    for _ in range(9):
        state, _ = pm.step(rng, state, model, prior, config)
        eta.append(state.position.copy())
    eta = np.array(eta)
    for b, cov in zip(config.blocks, state.proposal_covs):
        d = b.size
        s_d = 2.38**2 / d
        expect = s_d * np.cov(eta[:, b], rowvar=False) + s_d * config.adapt_epsilon * np.eye(d)  # Alg. 2 line 7
        np.testing.assert_allclose(cov, expect, rtol=1e-10, atol=1e-14)


# Geweke joint-distribution test of Alg. 2 (one block: theta_S, beta).
# The simulators act on (psi, Z): the PM step targets
#   pi(psi, Z_1..Q | Y) = p(psi | Y) (1/Q) sum_k p(Z_k | psi, Y) prod_{q != k} q(Z_q),
# so given (psi, Z) ~ p(psi, Z | Y) an exact draw of the importance samples is
# "Z in a random slot, the others from q" (the order does not matter), and after
# the step an exact draw of Z | psi', Y is the sample picked with probability
# proportional to its weight.  Alg. 3 steps on Z | psi', Y follow.  The
# transition is thus exactly invariant for p(psi, Z | Y).
# Alg. 1 is capped at 5 L-BFGS iterations here to keep the test fast; any q
# that is a deterministic function of (psi, Y) keeps the chain exact.
GW_N, GW_M, GW_Q = 6, 3, 8
GW_X = np.linspace(0.0, 3.0, GW_N)[:, None]
GW_PHI = np.array([math.log(0.5), 0.0, 0.0, 0.0])  # sigma, theta_1 fixed; theta_S, beta sampled
GW_BLOCK = np.array([2, 3])
GW_MEAN, GW_SD = np.array([0.0, math.log(4.0)]), 0.3
GW_PRIOR = priors.IndependentPrior((
    priors.LogNormal(GW_PHI[0], 0.1), priors.LogNormal(GW_PHI[1], 0.1),
    priors.LogNormal(GW_MEAN[0], GW_SD), priors.LogNormal(GW_MEAN[1], GW_SD),
))
GW_VB = {"max_iter": 5}
GW_LATENT_STEPS = 2
GW_PROPOSAL_VAR = 0.09
GW_NAMES = ("log theta_S", "log beta", "(log theta_S)^2", "(log beta)^2", "product", "mean z^2", "mean y^2")


def gw_params(rng):
    psi = GW_PHI.copy()
    psi[GW_BLOCK] = GW_MEAN + GW_SD * rng.standard_normal(2)
    model = SupervisedGPLVM(GW_X, np.zeros((GW_N, 1)), 1, GW_M)
    return psi, model.latent_prior_chol(psi) @ rng.standard_normal((GW_N, 1))


def gw_data(rng, params):
    psi, Z = params
    model = SupervisedGPLVM(GW_X, np.zeros((GW_N, 1)), 1, GW_M)
    _, psi_f, log_beta = model.split(psi)
    C = model.latent_kernel(psi_f, Z) + math.exp(-log_beta) * np.eye(GW_N)
    return np.linalg.cholesky(C) @ rng.standard_normal((GW_N, 1))


def gw_test_fn(params, Y):
    psi, Z = params
    a, b = psi[GW_BLOCK]
    return np.array([a, b, a * a, b * b, a * b, np.mean(Z**2), np.mean(Y**2)])


def gw_transition(sign_symmetric, fixed_start=False, rho=0.0):
    """``fixed_start``: Alg. 1 starts at a fixed q (here the PCA start at GW_PHI, a function of Y alone, as
    the pipeline's ML fit is) instead of the PCA start at psi -- the pipeline's ``vb_start: ml``.

    ``rho > 0``: correlated PM.  The state is (psi, eps) with Z_q = mu + T eps_q; under the extended
    target the importance normals given (psi, Z) are Z's own eps (``latent_normals``, the inverse map)
    in a random slot and N(0, I) in the others -- the same construction on the normals' scale."""
    proposal = [GW_PROPOSAL_VAR * np.eye(2)]

    def transition(rng, params, Y):
        psi, Z = params
        model = SupervisedGPLVM(GW_X, Y, 1, GW_M)
        ref = initial_variational(model, GW_PHI) if fixed_start else None
        config = pm.PMGibbsConfig(blocks=(GW_BLOCK,), n_imp=GW_Q, adapt_start=10**9, vb_options=GW_VB,
                                  sign_symmetric=sign_symmetric, reference_params=ref, rho=rho)
        vb = optimise_variational(model, psi, ref, **GW_VB)  # the q the sampler would build at psi
        q = latent_posterior(model, psi, vb.params)
        normals = None
        if rho > 0:
            normals = np.concatenate([pm.latent_normals(q, Z[None]), rng.standard_normal((1, GW_N, GW_Q - 1))],
                                     axis=2)
            samples = pm.sample_latent(rng, q, GW_Q, normals=normals)
            assert np.allclose(samples[0], Z, atol=1e-9)
        else:
            samples = np.concatenate([Z[None], pm.sample_latent(rng, q, GW_Q - 1, sign_symmetric)])
        log_w = pm.importance_log_weights(model, psi, q, samples, sign_symmetric)
        est = pm.PMEstimate(float(logsumexp(log_w) - math.log(GW_Q)), log_w, samples, vb.params, vb, 0, normals)
        state = pm.state_from_estimate(psi, est, GW_PRIOR, config, proposal)
        state, _ = pm.step(rng, state, model, GW_PRIOR, config)
        k = rng.choice(GW_Q, p=softmax(state.log_weights))
        # Alg. 3 (exactly invariant for Z | psi, Y) so that Z mixes even when q is poor
        latent = pm.latent_init(model, state.position, state.samples[k])
        for _ in range(GW_LATENT_STEPS):
            latent, _ = pm.latent_step(rng, latent, model, state.position)
        return state.position, latent.Z

    return transition


@pytest.fixture(scope="module")
def gw_marginal_conditional():
    return geweke.marginal_conditional(np.random.default_rng(42), gw_params, gw_data, gw_test_fn, 10_000)


def gw_run(mc, seed, n_sc, sign_symmetric=False, fixed_start=False, rho=0.0):
    sc = geweke.successive_conditional(np.random.default_rng(seed), gw_params, gw_data,
                                       gw_transition(sign_symmetric, fixed_start, rho), gw_test_fn, n_sc)
    return geweke.compare(mc, sc, names=GW_NAMES, alpha=0.01)


def test_geweke_pseudo_marginal_sampler(gw_marginal_conditional):
    res = gw_run(gw_marginal_conditional, 1, 2000)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()


def test_geweke_pseudo_marginal_sampler_fixed_vb_start(gw_marginal_conditional):
    """The pipeline's default: Alg. 1 from a fixed start (not the chain's current q) for a few iterations."""
    res = gw_run(gw_marginal_conditional, 3, 2000, fixed_start=True)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()


def test_geweke_correlated_pseudo_marginal_sampler(gw_marginal_conditional):
    """rho = 0.99 (Deligiannidis, Doucet & Pitt 2018) from the pipeline's fixed VB start: exact too."""
    res = gw_run(gw_marginal_conditional, 4, 1200, fixed_start=True, rho=0.99)
    assert res.batches_ok, res.summary()
    assert not res.reject, res.summary()


def test_geweke_catches_a_correlated_move_that_is_not_reversible(gw_marginal_conditional, monkeypatch):
    """u' = rho u + xi does not preserve N(0, I): the test must flag it."""
    monkeypatch.setattr(pm, "crank_nicolson", lambda rng, u, rho: rho * u + rng.standard_normal(u.shape))
    res = gw_run(gw_marginal_conditional, 5, 800, fixed_start=True, rho=0.9)
    assert res.reject, res.summary()


def test_correlated_normals_state_rho_zero_and_validation():
    model, prior, config = small_chain_setup()
    # rho = 0: the normals drawn by the estimator are kept with the estimate they made
    st = pm.init(np.random.default_rng(1), model, prior, TINY_PSI, config)
    q = latent_posterior(model, TINY_PSI, st.variational)
    np.testing.assert_allclose(pm.latent_normals(q, st.samples), st.normals, atol=1e-9)
    np.testing.assert_allclose(pm.sample_latent(None, q, config.n_imp, normals=st.normals), st.samples, atol=1e-12)
    # rho > 0: same state and generator give the same step; rejected blocks keep their normals
    cfg = dataclasses.replace(config, rho=0.95)
    steps = [pm.step(np.random.default_rng(3), st, model, prior, cfg) for _ in range(2)]
    np.testing.assert_array_equal(steps[0][0].normals, steps[1][0].normals)
    np.testing.assert_array_equal(steps[0][0].position, steps[1][0].position)
    new, info = steps[0]
    if not info.accepted.any():
        assert new.normals is st.normals
    else:
        assert np.corrcoef(new.normals.ravel(), st.normals.ravel())[0, 1] > 0.5
    for bad in (-0.5, 1.0):
        with pytest.raises(ValueError, match="rho"):
            dataclasses.replace(config, rho=bad)
    with pytest.raises(ValueError, match="sign_symmetric"):
        dataclasses.replace(config, rho=0.5, sign_symmetric=True)
    with pytest.raises(ValueError, match="normals"):
        pm.step(np.random.default_rng(3), st._replace(normals=None), model, prior, cfg)


def test_geweke_catches_a_missing_normaliser_of_q(gw_marginal_conditional, monkeypatch):
    """Forgetting -log|W_j|/2 in log q (a plausible bug) must make the test fail."""
    weights = pm.importance_log_weights

    def buggy(model, psi, q, samples, sign_symmetric=False):
        return weights(model, psi, q, samples, sign_symmetric) + 0.5 * float(np.sum(q.logdet_w))

    monkeypatch.setattr(pm, "importance_log_weights", buggy)
    res = gw_run(gw_marginal_conditional, 2, 800)
    assert res.reject, res.summary()


# ---------------------------------------------------------------------------
# eqs. 7-8 and the type-II ML baseline
# ---------------------------------------------------------------------------
def test_predictive_mixture_matches_dense_reference():
    model = tiny_model(ky=2)
    rng = np.random.default_rng(8)
    psi = TINY_PSI + np.array([0.2, -0.1, 0.3, 0.5])
    Z = rng.normal(size=(6, 1))
    X_star = np.array([[0.4], [1.7], [3.5]])
    mix = pm.predictive_mixture(np.random.default_rng(0), model, psi[None], Z[None], X_star)
    xi = np.random.default_rng(0).standard_normal((3, 1))  # the one draw made for z*
    sig, theta, theta_s, beta = np.exp(psi)
    # eq. 8 with explicit inverses; k_z(x*, x*) = 1 + eps (the white-noise term of k_z)
    Kz = se_kernel_double_loop(model.X, model.X, 1.0, [sig]) + model.latent_jitter * np.eye(6)
    Kzs = se_kernel_double_loop(model.X, X_star, 1.0, [sig])
    mz = Kzs.T @ np.linalg.solve(Kz, Z)
    sz = 1.0 + model.latent_jitter - np.diag(Kzs.T @ np.linalg.solve(Kz, Kzs))
    z_star = mz + np.sqrt(sz)[:, None] * xi
    # the GP predictive of y* under eq. 7: mean A y_i, variance S + 1/beta
    C = se_kernel_double_loop(Z, Z, theta_s, [theta]) + np.eye(6) / beta
    Kfs = se_kernel_double_loop(Z, z_star, theta_s, [theta])
    mean = Kfs.T @ np.linalg.solve(C, model.Y)
    var = theta_s - np.diag(Kfs.T @ np.linalg.solve(C, Kfs)) + 1.0 / beta
    np.testing.assert_allclose(mix.mean[0], mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(mix.var[0], var, rtol=1e-8)
    # the mixture density: per output and jointly, by hand for two components
    mix2 = pm.PredictiveMixture(np.stack([mean, mean + 0.3]), np.stack([var, 2 * var]))
    Ys = np.array([[0.1, -0.2], [0.5, 0.0], [-0.3, 0.4]])
    joint, marginal = pm.mixture_log_density(mix2, Ys)
    dens = lambda m, v: np.exp(-0.5 * (Ys - m) ** 2 / v[:, None]) / np.sqrt(2 * np.pi * v[:, None])  # noqa: E731
    d1, d2 = dens(mean, var), dens(mean + 0.3, 2 * var)
    np.testing.assert_allclose(marginal, np.log(0.5 * (d1 + d2)), rtol=1e-12)
    np.testing.assert_allclose(joint, np.log(0.5 * (d1.prod(axis=1) + d2.prod(axis=1))), rtol=1e-12)


def test_type2_ml_and_its_point_estimate_predictions():
    model = SupervisedGPLVM(TINY_X, tiny_model(ky=2).Y, 1, 3)
    start = optimise_variational(model, TINY_PSI).bound
    res = fit_type2_ml(np.random.default_rng(4), model, TINY_PSI, n_restarts=2)
    assert res.n_restarts == 2 and res.bound == pytest.approx(res.all_bounds.max())
    assert res.bound > start + 0.1
    val, g = elbo(model, res.psi, res.params, hyper_gradient=True)
    assert val == pytest.approx(res.bound)
    assert np.max(np.abs(np.concatenate([g.pack(), g.psi]))) < 1e-2
    mix = pm.ml_predictive_mixture(np.random.default_rng(5), model, res.psi, res.params, TINY_X[:2], n_samples=50)
    assert mix.mean.shape == (50, 2, 2) and mix.var.shape == (50, 2)
    joint, _ = pm.mixture_log_density(mix, model.Y[:2])
    assert np.all(np.isfinite(joint))


def test_type2_ml_single_start_matches_fit_type2_ml():
    from gpbayes.gplvm.vb import fit_type2_ml_start

    model = SupervisedGPLVM(TINY_X, tiny_model(ky=2).Y, 1, 3)
    res = fit_type2_ml(np.random.default_rng(4), model, TINY_PSI, n_restarts=1, max_iter=200)
    one = fit_type2_ml_start(model, TINY_PSI, max_iter=200)
    # the same start gives the same optimum as the first start of fit_type2_ml
    assert one.bound == res.bound and np.array_equal(one.psi, res.psi)
    assert np.array_equal(one.params.pack(), res.params.pack())
    assert isinstance(one.success, bool) and one.n_iter > 0 and one.n_fun_evals >= one.n_iter
    assert one.n_failed_evals == 0 and not one.psi_at_bounds
    assert elbo(model, TINY_PSI, initial_variational(model, TINY_PSI)) < one.bound
    # an iteration cap is reported as not converged
    short = fit_type2_ml_start(model, TINY_PSI, max_iter=1)
    assert short.n_iter <= 1 and not short.success
