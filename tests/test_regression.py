import numpy as np
import pytest
from scipy.stats import multivariate_normal

from gpbayes import linalg
from gpbayes.kernels import SquaredExponential
from gpbayes.regression import GPRegression, fit_type2_ml
from reference import finite_difference_grad, se_kernel_double_loop


def problem(seed=0, n=25, d=3, ard=True, param="amis", gradient="fused"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return GPRegression(X, y, SquaredExponential(d, ard=ard, parameterisation=param), gradient=gradient), rng


def test_log_marginal_matches_dense_gaussian():
    model, rng = problem()
    psi = rng.normal(0, 0.3, model.n_params)
    a, w = model.kernel.amplitude_and_precisions(psi[:-1])
    C = se_kernel_double_loop(model.X, model.X, a, w) + np.exp(psi[-1]) * np.eye(model.X.shape[0])
    expected = multivariate_normal(np.zeros(len(model.y)), C).logpdf(model.y)
    assert model.log_marginal(psi) == pytest.approx(expected, rel=1e-10)
    v, _ = model.log_marginal_and_grad(psi)
    assert v == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("gradient", ["fused", "per_parameter"])
@pytest.mark.parametrize("ard,param", [(True, "amis"), (False, "fg"), (True, "ma")])
def test_gradient_matches_finite_differences(ard, param, gradient):
    model, rng = problem(1, ard=ard, param=param, gradient=gradient)
    psi = rng.normal(0, 0.3, model.n_params)
    _, g = model.log_marginal_and_grad(psi)
    np.testing.assert_allclose(g, finite_difference_grad(model.log_marginal, psi), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("gradient", ["fused", "per_parameter"])
def test_cost_units(gradient):
    model, rng = problem(2, gradient=gradient)
    psi = np.zeros(model.n_params)
    with linalg.count_ops() as c:
        model.log_marginal(psi)
    assert c.cubic == 1
    with linalg.count_ops() as c:
        model.log_marginal_and_grad(psi)
    assert c.cubic == 2  # Cholesky + inverse (Xiong et al.: "+2 with gradients" counts the extra work)
    assert (c.cholesky, c.inverse) == (1, 1)


def test_fused_and_per_parameter_gradients_agree_and_values_are_identical():
    # issue 24: "fused" (the default) forms the traces of R&W eq. 5.9 from one GEMM, "per_parameter"
    # from one derivative matrix each (the earlier code, bit for bit); the same numbers up to rounding
    rng = np.random.default_rng(7)
    for trial in range(12):
        n, d = int(rng.integers(5, 80)), int(rng.integers(1, 8))
        param = ("fg", "amis", "ma", "gplvm")[trial % 4]
        X = rng.normal(size=(n, d)) + (40.0 if trial % 3 == 0 else 0.0)
        y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
        k = SquaredExponential(d, ard=trial % 2 == 0, parameterisation=param, nugget=1e-6 * (trial % 2))
        fused, per = GPRegression(X, y, k), GPRegression(X, y, k, gradient="per_parameter")
        assert fused.gradient == "fused"
        psi = rng.normal(0, 0.7, fused.n_params)
        v1, g1 = fused.log_marginal_and_grad(psi)
        v0, g0 = per.log_marginal_and_grad(psi)
        assert v1 == v0 == per.log_marginal(psi)
        np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-9 * np.max(np.abs(g0)))


def test_type2_ml_finds_a_stationary_point_and_is_reproducible():
    model, _ = problem(3, n=40)
    r1 = fit_type2_ml(model, np.random.default_rng(5), n_restarts=3)
    r2 = fit_type2_ml(model, np.random.default_rng(5), n_restarts=3)
    np.testing.assert_array_equal(r1.psi, r2.psi)
    _, g = model.log_marginal_and_grad(r1.psi)
    assert np.max(np.abs(g)) < 1e-3
    assert r1.log_marginal >= np.max(r1.all_objectives) - 1e-9


def test_predict_interpolates_with_small_noise():
    model, _ = problem(4, n=30, d=1, ard=False, param="fg")
    psi = np.array([np.log(0.05), 0.0, np.log(1e-8)])  # short lengthscale: well conditioned
    mean, var = model.predict(psi, model.X)
    np.testing.assert_allclose(mean, model.y, atol=1e-3)
    assert np.all(var < 1e-4)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="NaN"):
        GPRegression(np.array([[np.nan]]), np.array([1.0]), SquaredExponential(1))
    with pytest.raises(ValueError, match=r"gradient must be one of \('fused', 'per_parameter'\), got 'gemm'"):
        GPRegression(np.zeros((2, 1)), np.zeros(2), SquaredExponential(1), gradient="gemm")
    model, _ = problem()
    with pytest.raises(ValueError, match="expected 5 log-parameters"):
        model.log_marginal(np.zeros(3))


@pytest.mark.parametrize("gradient", ["fused", "per_parameter"])
def test_reused_buffers_give_the_numbers_of_fresh_arrays(gradient):
    # log_marginal(_and_grad) build K, C and the factor in buffers kept by the object (issue 24):
    # values at a sequence of points equal those of a fresh object at each point, to the bit
    model, rng = problem(8, n=40, d=3, gradient=gradient)
    points = [rng.normal(0, 0.5, model.n_params) for _ in range(3)]
    for psi in points + points[::-1]:
        fresh = GPRegression(model.X, model.y, model.kernel, gradient=gradient)
        v, g = model.log_marginal_and_grad(psi)
        v0, g0 = fresh.log_marginal_and_grad(psi)
        assert v == v0 and np.array_equal(g, g0)
        assert model.log_marginal(psi) == GPRegression(model.X, model.y, model.kernel).log_marginal(psi) == v
    # the buffers are not part of the model's identity
    assert model == GPRegression(model.X, model.y, model.kernel, gradient=gradient)
