"""gpbayes.posterior (log posterior of GP regression + prior) and gpbayes.finite_differences."""

from __future__ import annotations

import numpy as np
import pytest

from gpbayes import linalg
from gpbayes.finite_differences import hessian_from_gradients, hessian_from_values
from gpbayes.kernels import SquaredExponential
from gpbayes.posterior import log_posterior, log_posterior_value_and_grad
from gpbayes.priors import Gamma, IndependentPrior, Uniform
from gpbayes.regression import GPRegression


def tiny_gp(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=n)
    return GPRegression(X, y, SquaredExponential(1, ard=False, parameterisation="amis"))


PRIOR = IndependentPrior((Gamma(1.0, 1.0), Gamma(1.2, 0.2), Gamma(1.0, 1.0)))


def dense_log_posterior(model, psi):
    """Reference: log N(y | 0, K + lambda I) with numpy's dense algebra, plus the prior."""
    K = model.kernel(psi[:-1], model.X) + np.exp(psi[-1]) * np.eye(model.y.size)
    _, logdet = np.linalg.slogdet(K)
    n = model.y.size
    return -0.5 * model.y @ np.linalg.solve(K, model.y) - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi) \
        + PRIOR.log_density(psi)


def test_value_and_gradient_against_dense_reference_and_finite_differences():
    model = tiny_gp()
    f, fg = log_posterior(model, PRIOR), log_posterior_value_and_grad(model, PRIOR)
    for psi in (np.array([0.1, 0.3, -1.5]), np.array([-0.7, 1.2, -3.0])):
        v, g = fg(psi)
        assert f(psi) == pytest.approx(dense_log_posterior(model, psi), rel=1e-10)
        assert v == pytest.approx(f(psi), rel=1e-12)
        fd = np.array([(f(psi + e) - f(psi - e)) / 2e-6 for e in 1e-6 * np.eye(3)])
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    # the flat-prior version is the marginal itself
    psi = np.array([0.1, 0.3, -1.5])
    assert log_posterior(model)(psi) == model.log_marginal(psi)
    assert log_posterior_value_and_grad(model)(psi)[0] == model.log_marginal(psi)


def test_cost_one_cholesky_for_the_value_two_for_value_and_gradient():
    model = tiny_gp()
    psi = np.array([0.1, 0.3, -1.5])
    with linalg.count_ops() as a:
        log_posterior(model, PRIOR)(psi)
    with linalg.count_ops() as b:
        log_posterior_value_and_grad(model, PRIOR)(psi)
    assert (a.cubic, b.cubic) == (1, 2)


def test_zero_density_cases_are_minus_inf_and_bad_shapes_raise():
    model = tiny_gp()
    f, fg = log_posterior(model, PRIOR), log_posterior_value_and_grad(model, PRIOR)
    bounded = IndependentPrior((Gamma(1.0, 1.0), Uniform(0.5, 5.0), Gamma(1.0, 1.0)))
    outside = np.array([0.0, np.log(6.0), 0.0])
    assert log_posterior(model, bounded)(outside) == -np.inf
    v, g = log_posterior_value_and_grad(model, bounded)(outside)
    assert v == -np.inf and np.all(np.isnan(g))
    # an amplitude of e^800 overflows the kernel; no noise and coincident inputs cannot be factorised
    with np.errstate(all="raise"):  # the functions silence their own warnings
        assert log_posterior(model)(np.array([0.0, 800.0, 0.0])) == -np.inf
        assert log_posterior_value_and_grad(model)(np.array([0.0, 800.0, 0.0]))[0] == -np.inf
    twin = GPRegression(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]), SquaredExponential(1, parameterisation="amis"))
    assert log_posterior(twin)(np.array([0.0, 0.0, -60.0])) == -np.inf
    with pytest.raises(ValueError, match="log-hyperparameters"):
        f(np.zeros(2))
    with pytest.raises(ValueError, match="log-hyperparameters"):
        fg(np.zeros(4))


def test_finite_difference_hessians_of_a_known_function():
    A = np.array([[-2.0, 0.5, 0.1], [0.5, -1.0, -0.3], [0.1, -0.3, -3.0]])

    def f(x):  # its Hessian, written out below: A + 1.2 diag(x^2) + the sin(x_0) x_1 terms
        return 0.5 * x @ A @ x + 0.1 * np.sum(x**4) + np.sin(x[0]) * x[1]

    def grad(x):
        g = A @ x + 0.4 * x**3
        g[0] += np.cos(x[0]) * x[1]
        g[1] += np.sin(x[0])
        return g

    x = np.array([0.3, -0.2, 0.5])
    H = A + np.diag(1.2 * x**2)
    H[0, 0] += -np.sin(x[0]) * x[1]
    H[0, 1] += np.cos(x[0])
    H[1, 0] += np.cos(x[0])
    np.testing.assert_allclose(hessian_from_gradients(grad, x), H, atol=1e-7)
    np.testing.assert_allclose(hessian_from_values(f, x), H, atol=1e-5)
    Hg = hessian_from_gradients(grad, x)
    assert np.array_equal(Hg, Hg.T) and np.array_equal(hessian_from_values(f, x), hessian_from_values(f, x).T)
