import numpy as np
import pytest

from gpbayes.mcmc import random_walk


def gaussian_target(mean, cov):
    prec = np.linalg.inv(cov)
    return lambda x, rng: float(-0.5 * (x - mean) @ prec @ (x - mean))


def test_recovers_known_gaussian_moments_within_mc_error():
    mean = np.array([1.0, -2.0])
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    target = gaussian_target(mean, cov)
    n_chains, n = 4, 20000
    draws = []
    for c in range(n_chains):
        out = random_walk.run_chain(np.random.default_rng(c), mean + 3.0, target, cov, n_burn=2000, n_draws=n)
        assert 0.15 < out.stats["accepted"].mean() < 0.40  # tuned towards 25%
        draws.append(out.draws)
    draws = np.stack(draws)
    from gpbayes.diagnostics import ess

    flat = draws.reshape(-1, 2)
    for j in range(2):
        n_eff = ess(draws[..., j])
        se_mean = np.sqrt(cov[j, j] / n_eff)
        assert abs(flat[:, j].mean() - mean[j]) < 4 * se_mean
        # variance: se of sample variance ~ var * sqrt(2 / n_eff)
        assert abs(flat[:, j].var() - cov[j, j]) < 4 * cov[j, j] * np.sqrt(2 / n_eff)


def test_same_seed_same_chain_bit_for_bit():
    target = gaussian_target(np.zeros(3), np.eye(3))
    a = random_walk.run_chain(np.random.default_rng(42), np.ones(3), target, np.eye(3), n_burn=100, n_draws=200)
    b = random_walk.run_chain(np.random.default_rng(42), np.ones(3), target, np.eye(3), n_burn=100, n_draws=200)
    np.testing.assert_array_equal(a.draws, b.draws)
    np.testing.assert_array_equal(a.stats["lp"], b.stats["lp"])
    c = random_walk.run_chain(np.random.default_rng(43), np.ones(3), target, np.eye(3), n_burn=100, n_draws=200)
    assert not np.array_equal(a.draws, c.draws)


def test_stored_estimate_is_never_recomputed():
    # a "noisy" target that returns a fresh random value at each call: the
    # state must keep the value of the accepted call, not ask again
    calls = []

    def noisy(x, rng):
        v = float(-0.5 * x @ x + rng.normal())
        calls.append(v)
        return v

    rng = np.random.default_rng(0)
    state = random_walk.init(np.zeros(2), noisy, rng)
    assert state.log_density == calls[-1]
    for _ in range(50):
        before = state
        state, info = random_walk.step(rng, state, noisy, 0.5 * np.eye(2))
        if info.accepted:
            assert state.log_density == calls[-1]
        else:
            assert state.log_density == before.log_density
    assert len(calls) == 51  # one evaluation per step, none for the current point


def test_nan_density_raises():
    with pytest.raises(FloatingPointError, match="NaN"):
        random_walk.init(np.zeros(1), lambda x, r: float("nan"), np.random.default_rng(0))


def test_covariance_adaptation_works_in_one_dimension():
    target = gaussian_target(np.zeros(1), np.eye(1) * 4.0)
    out = random_walk.run_chain(np.random.default_rng(0), np.ones(1), target, np.eye(1), n_burn=400, n_draws=50)
    assert out.params["proposal_factor"].shape == (1, 1) and out.params["proposal_factor"][0, 0] > 0


class _CarryingGaussian:
    """N(0, 1) log density whose evaluations pass a carry on: the count of evaluations so far."""

    def evaluate_with_carry(self, x, rng, carry):
        return float(-0.5 * x @ x), (0 if carry is None else carry) + 1

    def __call__(self, x, rng):
        return float(-0.5 * x @ x)


def test_carry_is_passed_from_each_evaluation_to_the_next_accepted_or_not():
    fn = _CarryingGaussian()
    state = random_walk.init(np.zeros(1), fn, np.random.default_rng(0))
    assert state.carry == 1
    n_acc = 0
    for k in range(50):
        state, info = random_walk.step(np.random.default_rng(k), state, fn, 2.0 * np.eye(1))
        n_acc += info.accepted
        assert state.carry == k + 2  # every evaluation counted, rejected proposals included
    assert 0 < n_acc < 50
    # the same state and key give the same step; a plain function leaves the carry alone
    a = random_walk.step(np.random.default_rng(3), state, fn, np.eye(1))
    b = random_walk.step(np.random.default_rng(3), state, fn, np.eye(1))
    assert a == b
    plain = random_walk.step(np.random.default_rng(3), state, fn.__call__, np.eye(1))[0]
    assert plain.carry == state.carry and np.array_equal(plain.position, a[0].position)
