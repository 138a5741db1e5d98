"""Particle-marginal MH (ADH 2010 PMMH with an importance-sampling "SMC"): the latent in the state."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp, ndtr

from gpbayes import linalg, priors
from gpbayes.estimators.importance import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.mcmc import particle_marginal as pmmh
from gpbayes.mcmc import random_walk
from gpbayes.mcmc.runner import run_chain

PRIOR = priors.IndependentPrior((priors.Gamma(1.0, 1.0), priors.Gamma(1.1, 0.1)))
KERNEL = SquaredExponential(1, ard=False, parameterisation="fg", nugget=1e-6)


def test_latents_are_draws_from_the_exact_posterior_of_f():
    """At a fixed theta (zero proposal) the carried latent must follow p(f | y, theta).

    Three nearly independent latents with a wide prior make p(f_i | y_i) a
    skewed (skew-normal) density; EP matches its mean and variance, so the
    check is on P(y_i f_i < 0 | y), where the Gaussian q is off by ~7
    standard errors: carrying a uniformly chosen importance draw fails it.
    """
    X, y = np.array([[0.0], [5.0], [10.0]]), np.array([1.0, 1.0, -1.0])
    psi = np.log([0.4, 25.0])
    target = PseudoMarginalTarget(X, y, KERNEL, Probit(), PRIOR, approx="ep", n_imp=16)
    fn = target.log_density_and_latent
    n_draws = 2000
    rng = np.random.default_rng(11)
    ch = run_chain(rng, lambda r, st: pmmh.step(r, st, fn, np.zeros((2, 2))), pmmh.init(psi, fn, rng),
                   n_draws=n_draws, n_warmup=20, record=lambda st, info: {"latent": st.latent})
    f = ch.extra["latent"]
    assert f.shape == (n_draws, 3)
    chain = np.mean(f * y < 0)  # pooled over the three latents
    # reference: self-normalised importance sampling with many draws from the same q,
    # weights written out independently of gpbayes.estimators
    q = target.last_approximation
    F = q.sample(np.random.default_rng(12), 200_000, q.K_chol)
    U = linalg.solve_triangular(q.K_chol, F.T, lower=True)
    log_prior = -0.5 * (np.sum(U * U, axis=0) + linalg.logdet_from_cholesky(q.K_chol) + 3 * np.log(2 * np.pi))
    log_w = np.sum(np.log(ndtr(y * F)), axis=1) + log_prior - q.log_density(F)
    w = np.exp(log_w - logsumexp(log_w))
    ref = float(np.mean(w @ (F * y < 0)))
    gauss = float(np.mean(ndtr(-y * q.m / np.sqrt(np.diag(q.covariance())))))
    se = np.sqrt(ref * (1 - ref) / (3 * n_draws / 2))  # allow for ESS >= n_draws / 2 per latent
    assert abs(gauss - ref) > 6 * se  # the Gaussian q itself would fail
    assert abs(chain - ref) < 4 * se


def test_step_is_fg_alg1_when_the_latent_costs_no_draw():
    """With a target that selects without drawing, PMMH and random-walk MH make the same chain."""

    def log_density(x, rng=None):
        return float(-0.5 * np.sum((x - 1.0) ** 2))

    def with_latent(x, rng):
        return log_density(x), 2.0 * x  # a "latent" that is a function of x

    L = 0.8 * np.eye(2)
    ra, rb = np.random.default_rng(4), np.random.default_rng(4)
    sa = random_walk.init(np.zeros(2), log_density, ra)
    sb = pmmh.init(np.zeros(2), with_latent, rb)
    for _ in range(200):
        sa, ia = random_walk.step(ra, sa, log_density, L)
        sb, ib = pmmh.step(rb, sb, with_latent, L)
        assert np.array_equal(sa.position, sb.position) and sa.log_density == sb.log_density
        assert tuple(ia) == tuple(ib)
        assert np.array_equal(sb.latent, 2.0 * sb.position)  # the latent came with the accepted point


def test_latent_is_replaced_only_on_acceptance_and_minus_inf_is_rejected():
    calls = iter(range(10**6))

    def fn(x, rng):
        i = next(calls)
        if x[0] > 0.5:
            return -np.inf, None
        return -0.5 * float(x @ x), np.full(3, float(i))

    rng = np.random.default_rng(0)
    state = pmmh.init(np.zeros(1), fn, rng)
    for _ in range(300):
        new, info = pmmh.step(rng, state, fn, np.eye(1))
        if info.accepted:
            assert new.latent is not state.latent and new.log_density == info.proposal_log_density
            assert np.all(new.position <= 0.5) and new.latent is not None
        else:
            assert new is state
        state = new
    with pytest.raises(ValueError, match="zero density"):
        pmmh.init(np.ones(1), fn, rng)
    with pytest.raises(FloatingPointError, match="NaN"):
        pmmh.step(rng, state, lambda x, r: (np.nan, None), np.eye(1))


def test_same_seed_same_chain_and_latents():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(6, 1))
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    target = PseudoMarginalTarget(X, y, KERNEL, Probit(), PRIOR, approx="laplace", n_imp=5)
    fn = target.log_density_and_latent

    def run(seed):
        r = np.random.default_rng(seed)
        return run_chain(r, lambda g, st: pmmh.step(g, st, fn, 0.4 * np.eye(2)),
                         lambda: pmmh.init(np.log([0.5, 2.0]), fn, r), n_draws=20, n_warmup=2,
                         record=lambda st, info: {"latent": st.latent})

    a, b, c = run(3), run(3), run(4)
    assert np.array_equal(a.draws, b.draws) and np.array_equal(a.extra["latent"], b.extra["latent"])
    assert not np.array_equal(a.extra["latent"], c.extra["latent"])
