"""IQR-across-replicates convergence curves on inputs worked out by hand."""

import types

import numpy as np
import pytest

from gpbayes import amis as A
from gpbayes_repro import convergence as C

NAN = np.nan

RUNS = [
    C.Run(np.array([1.0, 3.0, 5.0]), np.array([10.0, 20.0, 30.0])),
    C.Run(np.array([2.0, 4.0]), np.array([1.0, 2.0])),
    C.Run(np.array([1.0, 2.0, 6.0]), np.array([5.0, 6.0, 7.0])),
    C.Run(np.array([0.5, 5.0]), np.array([0.0, 4.0])),
]


def test_on_grid_is_a_step_function():
    np.testing.assert_array_equal(C.on_grid(RUNS[0], [0.0, 1.0, 2.9, 3.0, 7.0]), [NAN, 10, 10, 20, 30])
    np.testing.assert_array_equal(C.on_grid(RUNS[1], [1.0, 2.0, 3.0, 4.0]), [NAN, 1, 1, 2])


def test_iqr_by_hand():
    curve = C.iqr_across_replicates(RUNS, grid=[1.0, 2.0, 4.0, 5.0])
    # grid 1: replicate 2 has no estimate yet -> undefined
    # grid 2: values {10, 1, 6, 0} -> sorted 0 1 6 10; type-7 quartiles at positions 0.75 and 2.25:
    #         q25 = 0 + 0.75 (1 - 0) = 0.75, q75 = 6 + 0.25 (10 - 6) = 7, IQR = 6.25 (R: IQR(c(0,1,6,10)))
    # grid 4: {20, 2, 6, 0} -> 0 2 6 20: q25 = 1.5, q75 = 9.5, IQR = 8
    # grid 5: {30, 2, 6, 4} -> 2 4 6 30: q25 = 3.5, q75 = 12, IQR = 8.5
    np.testing.assert_array_equal(curve.n_available, [3, 4, 4, 4])
    np.testing.assert_allclose(curve.iqr, [NAN, 6.25, 8.0, 8.5])
    np.testing.assert_allclose(curve.q25, [NAN, 0.75, 1.5, 3.5])
    np.testing.assert_allclose(curve.q75, [NAN, 7.0, 9.5, 12.0])
    np.testing.assert_allclose(curve.median, [NAN, 3.5, 4.0, 5.0])


def test_common_grid_spans_costs_every_replicate_reached():
    g = C.common_grid(RUNS, n_points=3, spacing="linear")
    np.testing.assert_allclose(g, [2.0, 3.0, 4.0])
    np.testing.assert_allclose(C.common_grid(RUNS, n_points=3), [2.0, 2.0 * np.sqrt(2.0), 4.0])
    curve = C.iqr_across_replicates(RUNS, n_points=3, spacing="linear")
    # grid 3: {20, 1, 6, 0} -> 0 1 6 20: q25 = 0.75, q75 = 9.5
    np.testing.assert_allclose(curve.iqr, [6.25, 8.75, 8.0])
    assert np.all(curve.n_available == 4)


def test_mcmc_running_estimate_by_hand():
    draws = np.array([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]])  # norms 5, 1, 10
    run = C.mcmc_running_estimate(draws, [1, 1, 3], cost_offset=10)
    np.testing.assert_allclose(run.cost, [11, 12, 15])
    np.testing.assert_allclose(run.estimate, [5.0, 3.0, 16.0 / 3.0])
    run = C.mcmc_running_estimate(np.log(draws + 1.0), 2.0, transform=lambda x: np.exp(x) - 1.0)
    np.testing.assert_allclose(run.cost, [2, 4, 6])
    np.testing.assert_allclose(run.estimate, [5.0, 3.0, 16.0 / 3.0])


def test_amis_running_estimate_uses_result_fields():
    fake = types.SimpleNamespace(n_cubic=np.array([25, 50, 75]), estimate_norm=np.array([1.0, NAN, 2.0]))
    run = C.amis_running_estimate(fake)
    np.testing.assert_array_equal(run.cost, [25, 50, 75])
    np.testing.assert_array_equal(C.on_grid(run, [60.0, 80.0]), [NAN, 2.0])


def test_amis_replicates_iqr_shrinks_with_cost():
    # end to end: IQR across AMIS replicates of E||theta|| for a Gaussian target decreases
    mean = np.array([1.0, 2.0])
    target = lambda X, rng: -0.5 * np.sum((X - mean) ** 2, axis=1)
    runs = []
    for seed in range(12):
        res = A.amis(np.random.default_rng(seed), target, np.zeros(2), 4.0 * np.eye(2), n_iterations=20,
                     n_per_iteration=50, vectorized=True)
        # an exact vectorized target costs no counted O(n^3) operations: use samples as cost
        runs.append(C.Run(np.cumsum(res.sample_sizes).astype(float), res.estimate_norm))
    curve = C.iqr_across_replicates(runs, grid=[50.0, 1000.0])
    assert curve.iqr[1] < 0.5 * curve.iqr[0]


def test_bad_inputs():
    with pytest.raises(ValueError):
        C.iqr_across_replicates(RUNS[:1])
    with pytest.raises(ValueError):
        C.iqr_across_replicates([(np.array([2.0, 1.0]), np.array([1.0, 2.0])), RUNS[0]])
    with pytest.raises(ValueError):
        C.common_grid([C.Run(np.array([1.0, 2.0]), np.ones(2)), C.Run(np.array([3.0, 4.0]), np.ones(2))])
    with pytest.raises(ValueError):
        C.mcmc_running_estimate(np.ones((3, 2)), [1, -1, 1])
