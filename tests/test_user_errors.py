"""No silent wrong answer, no unclear error (issue 41, point 4): each mistake below stops where it is made
(model, kernel, likelihood or method construction) with an error naming the argument, the value given and
what is allowed; siblings of each measured case (other non-integers, other wrong types) are covered too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpbayes as gb
from gpbayes import kernels as K


def _xy(n=20, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


# ---------------------------------------------------------------------------
# kernels: active_dims / input_dim / boolean options / + and *
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [[1.7], [0, 1.5], [np.float64(0.5)], [True], ["1"], [None]])
def test_a_non_integer_active_dim_is_refused_not_truncated(dims):
    with pytest.raises(TypeError, match=r"active_dims must be column indices .* not a whole number"):
        K.Matern52(active_dims=dims)


def test_a_string_of_active_dims_is_refused():
    with pytest.raises(TypeError, match="active_dims must be a list of column indices"):
        K.SquaredExponential(active_dims="01")


def test_whole_number_active_dims_and_input_dim_are_accepted_as_before():
    assert K.Matern52(active_dims=[1.0, 2]).active_dims == (1, 2)
    assert K.Matern52(active_dims=np.array([0, 2])).active_dims == (0, 2)
    assert K.SquaredExponential(2.0).input_dim == 2


@pytest.mark.parametrize("make", [K.Matern52, K.SquaredExponential, K.Periodic, K.Linear, K.White])
@pytest.mark.parametrize("value", [2.5, "2", True])
def test_a_non_integer_input_dim_is_refused(make, value):
    with pytest.raises(TypeError, match=r"input_dim must be a whole number"):
        make(value)


@pytest.mark.parametrize("make", [K.Matern52, K.Matern12, K.RationalQuadratic, K.SquaredExponential, K.Periodic,
                                  K.Linear])
@pytest.mark.parametrize("value", ["no", "False", 1, 0, None, 1.0])
def test_a_non_bool_ard_is_refused(make, value):
    with pytest.raises(TypeError, match=rf"ard must be True or False, got {value!r}"):
        make(2, ard=value)


def test_numpy_bools_are_accepted_for_kernel_flags():
    assert K.SquaredExponential(2, ard=np.True_).n_params == 3
    assert K.SquaredExponential(2, fixed_amplitude=np.bool_(True)).n_params == 1
    with pytest.raises(TypeError, match="fixed_amplitude must be True or False"):
        K.SquaredExponential(2, fixed_amplitude="yes")


@pytest.mark.parametrize("expr", [lambda k: k + 1.0, lambda k: 1.0 + k, lambda k: 2.0 * k, lambda k: k * 2,
                                  lambda k: k + np.float64(1.0), lambda k: k + "rbf", lambda k: k * [k]])
def test_a_kernel_with_a_non_kernel_is_a_clear_type_error(expr):
    with pytest.raises(TypeError, match=r"unsupported operand for a gpbayes kernel.*Kernels combine only with "
                                        r"kernels: k1 \+ k2 \(Sum\), k1 \* k2 \(Product\)"):
        expr(K.Matern52(2))


def test_a_kernel_with_a_kernel_class_says_instantiate_it():
    with pytest.raises(TypeError, match=r"instantiate it: Periodic\(\.\.\.\)"):
        K.Matern52(2) + K.Periodic


def test_sum_of_kernels_is_their_sum():
    ks = [K.Matern52(2), K.Linear(2), K.White(2)]
    total = sum(ks)
    assert isinstance(total, K.Sum) and total == ks[0] + ks[1] + ks[2]
    assert sum(ks[:1]) is ks[0]
    X = np.random.default_rng(1).normal(size=(5, 2))
    psi = total.initial_psi(X)
    np.testing.assert_array_equal(total(psi, X), (ks[0] + ks[1] + ks[2])(psi, X))
