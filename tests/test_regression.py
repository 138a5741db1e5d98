import numpy as np
import pytest
from scipy.stats import multivariate_normal

from gpbayes import linalg
from gpbayes.kernels import SquaredExponential
from gpbayes.regression import GPRegression, fit_type2_ml
from reference import finite_difference_grad, se_kernel_double_loop


def problem(seed=0, n=25, d=3, ard=True, param="amis"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return GPRegression(X, y, SquaredExponential(d, ard=ard, parameterisation=param)), rng


def test_log_marginal_matches_dense_gaussian():
    model, rng = problem()
    psi = rng.normal(0, 0.3, model.n_params)
    a, w = model.kernel.amplitude_and_precisions(psi[:-1])
    C = se_kernel_double_loop(model.X, model.X, a, w) + np.exp(psi[-1]) * np.eye(model.X.shape[0])
    expected = multivariate_normal(np.zeros(len(model.y)), C).logpdf(model.y)
    assert model.log_marginal(psi) == pytest.approx(expected, rel=1e-10)
    v, _ = model.log_marginal_and_grad(psi)
    assert v == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("ard,param", [(True, "amis"), (False, "fg"), (True, "ma")])
def test_gradient_matches_finite_differences(ard, param):
    model, rng = problem(1, ard=ard, param=param)
    psi = rng.normal(0, 0.3, model.n_params)
    _, g = model.log_marginal_and_grad(psi)
    np.testing.assert_allclose(g, finite_difference_grad(model.log_marginal, psi), rtol=1e-6, atol=1e-7)


def test_cost_units():
    model, rng = problem(2)
    psi = np.zeros(model.n_params)
    with linalg.count_ops() as c:
        model.log_marginal(psi)
    assert c.cubic == 1
    with linalg.count_ops() as c:
        model.log_marginal_and_grad(psi)
    assert c.cubic == 2  # Cholesky + inverse (Xiong et al.: "+2 with gradients" counts the extra work)


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
    model, _ = problem()
    with pytest.raises(ValueError, match="expected 5 log-parameters"):
        model.log_marginal(np.zeros(3))
