"""Elliptical slice sampling against the exact conjugate-Gaussian posterior."""

import math

import numpy as np
import pytest

from gpbayes import kernels, likelihoods, linalg
from gpbayes.mcmc import elliptical_slice as ess

from geweke import batch_means

NOISE = 0.3


def conjugate_problem(prior_mean=None):
    """GP prior N(m, K) on 4 points, Gaussian likelihood: exact posterior known."""
    X = np.array([[0.0], [0.7], [1.5], [3.0]])
    K = kernels.SquaredExponential(1)(np.log([0.8, 1.5]), X)
    y = np.array([0.9, 1.4, -0.3, 0.5])
    m = np.zeros(4) if prior_mean is None else prior_mean
    # R&W eqs. 2.23-2.24 with a prior mean: mu = m + K (K + s2 I)^-1 (y - m)
    A = K + NOISE * np.eye(4)
    mean = m + K @ np.linalg.solve(A, y - m)
    cov = K - K @ np.linalg.solve(A, K)
    lik = likelihoods.Gaussian(NOISE)
    log_lik = lambda f: float(np.sum(lik.log_lik(y, f)))
    return linalg.cholesky(K), log_lik, mean, cov


def run(rng, L, log_lik, n, prior_mean=None, f0=None):
    state = ess.init(np.zeros(L.shape[0]) if f0 is None else f0, log_lik)
    draws = np.empty((n, L.shape[0]))
    evals = shrinks = 0
    for i in range(n):
        state, info = ess.step(rng, state, L, log_lik, prior_mean)
        draws[i] = state.position
        evals += info.n_likelihood_evals
        shrinks += info.n_shrinkages
    return draws, evals, shrinks


def moments_match(draws, mean, cov, n_sigma=4.0):
    """Mean and variance of every coordinate within n_sigma batch-means standard errors."""
    m_hat, se_m, _ = batch_means(draws, 50)
    sq = (draws - mean) ** 2  # E (f_i - mu_i)^2 = var_i
    v_hat, se_v, _ = batch_means(sq, 50)
    ok_mean = np.abs(m_hat - mean) < n_sigma * se_m
    ok_var = np.abs(v_hat - np.diag(cov)) < n_sigma * se_v
    return bool(np.all(ok_mean) and np.all(ok_var)), (m_hat, se_m, v_hat, se_v)


def test_conjugate_gaussian_posterior_mean_and_variance():
    L, log_lik, mean, cov = conjugate_problem()
    draws, evals, shrinks = run(np.random.default_rng(20140101), L, log_lik, 20000)
    ok, detail = moments_match(draws[500:], mean, cov)
    assert ok, detail
    # the standard errors are small enough for the check to mean something
    assert np.all(detail[1] < 0.02)
    assert evals == shrinks + 20000


def test_prior_mean_shifted_variant_recovers_its_posterior_and_test_can_fail():
    m = np.array([2.0, -1.0, 0.5, 3.0])
    L, log_lik, mean, cov = conjugate_problem(prior_mean=m)
    draws, _, _ = run(np.random.default_rng(7), L, log_lik, 20000, prior_mean=m, f0=m.copy())
    ok, detail = moments_match(draws[500:], mean, cov)
    assert ok, detail
    # a sampler that forgets the prior mean targets N(0, K) L(f) instead: the
    # same check must reject it
    wrong, _, _ = run(np.random.default_rng(7), L, log_lik, 20000, prior_mean=None, f0=m.copy())
    ok_wrong, _ = moments_match(wrong[500:], mean, cov)
    assert not ok_wrong


def test_callable_factor_gives_the_same_chain_as_the_matrix():
    L, log_lik, _, _ = conjugate_problem()
    a, _, _ = run(np.random.default_rng(3), L, log_lik, 200)
    b = []
    rng = np.random.default_rng(3)
    state = ess.init(np.zeros(4), log_lik)
    for _ in range(200):
        state, _ = ess.step(rng, state, lambda z: L @ z, log_lik)
        b.append(state.position)
    np.testing.assert_array_equal(a, np.array(b))


def test_same_seed_same_chain_bit_for_bit():
    L, log_lik, _, _ = conjugate_problem()
    a, ea, _ = run(np.random.default_rng(11), L, log_lik, 300)
    b, eb, _ = run(np.random.default_rng(11), L, log_lik, 300)
    c, _, _ = run(np.random.default_rng(12), L, log_lik, 300)
    np.testing.assert_array_equal(a, b)
    assert ea == eb
    assert not np.array_equal(a, c)


def test_info_counts_evaluations_shrinkages_and_no_cubic_ops():
    L, log_lik, _, _ = conjugate_problem()
    calls = []

    def counted(f):
        calls.append(1)
        return log_lik(f)

    rng = np.random.default_rng(5)
    state = ess.init(np.zeros(4), counted)
    calls.clear()
    with linalg.count_ops() as ops:
        for _ in range(100):
            before = len(calls)
            state, info = ess.step(rng, state, L, counted)
            assert info.n_likelihood_evals == len(calls) - before == info.n_shrinkages + 1
            assert info.accepted and info.acceptance_prob == 1.0 and info.n_cubic == 0
            assert -2 * math.pi < info.angle < 2 * math.pi
            assert state.log_likelihood == log_lik(state.position)
    assert ops.cubic == 0


def test_state_is_not_mutated():
    L, log_lik, _, _ = conjugate_problem()
    state = ess.init(np.ones(4), log_lik)
    keep = state.position.copy()
    new, _ = ess.step(np.random.default_rng(0), state, L, log_lik)
    np.testing.assert_array_equal(state.position, keep)
    assert new.position is not state.position


def test_bad_likelihoods_raise():
    L = np.eye(2)
    with pytest.raises(ValueError, match="log-likelihood"):
        ess.init(np.zeros(2), lambda f: -math.inf)
    with pytest.raises(FloatingPointError, match="NaN"):
        ess.init(np.zeros(2), lambda f: float("nan"))
    # NaN away from the current point is reported, not looped on
    state = ess.init(np.zeros(2), lambda f: 0.0)
    with pytest.raises(FloatingPointError, match="NaN"):
        ess.step(np.random.default_rng(0), state, L, lambda f: float("nan"))
