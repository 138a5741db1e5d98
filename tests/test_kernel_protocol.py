"""The kernel protocol: SquaredExponential satisfies it bit for bit as before, a new kernel
written only here works with GP regression, finite-difference checks of the protocol's VJPs.

``tests/data/kernel_golden.npz`` was made by ``tests/data/make_kernel_golden.py`` with the
code before the protocol (commit 81aef2f).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from gpbayes import classification, regression
from gpbayes.kernels import Kernel, SquaredExponential, median_distance
from gpbayes.sparse import svgp

GOLDEN = np.load(Path(__file__).parent / "data" / "kernel_golden.npz")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """The golden arrays were made with one BLAS thread, as every workflow job runs (README, Performance):
    multi-threaded BLAS may round differently."""
    from gpbayes_repro.threads import blas_single_thread

    with blas_single_thread():
        yield
CASES = [(p, a, f) for p in ("fg", "amis", "ma", "gplvm") for a in (False, True) for f in (False, True)]


@pytest.mark.parametrize("par,ard,fixed", CASES)
def test_squared_exponential_reproduces_the_pre_protocol_numbers(par, ard, fixed):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = rng.normal(size=40)
    Z = rng.normal(size=(6, 3))
    for p2, a2, f2 in CASES:  # replay the generator exactly as the golden script did
        k = SquaredExponential(3, ard=a2, parameterisation=p2, fixed_amplitude=f2, nugget=1e-6)
        psi = rng.normal(scale=0.3, size=k.n_params)
        K12 = k(psi, Z, X)
        K_bar = rng.normal(size=K12.shape)
        cond = svgp.whitened_conditional(k, psi, Z, X, 1e-6)
        W_bar = rng.normal(size=cond.W.shape)
        knn_bar = rng.normal(size=X.shape[0])
        if (p2, a2, f2) != (par, ard, fixed):
            continue
        tag = f"{par}_{int(ard)}_{int(fixed)}"
        assert isinstance(k, Kernel)
        assert np.array_equal(regression.default_init(regression.GPRegression(X, y, k)), GOLDEN[f"{tag}/reg_init"])
        assert np.array_equal(classification.default_init(X, k), GOLDEN[f"{tag}/cls_init"])
        g, dX = k.cross_covariance_vjp(psi, Z, X, K12, K_bar, True)
        assert np.array_equal(g, GOLDEN[f"{tag}/cross_g"]) and np.array_equal(dX, GOLDEN[f"{tag}/cross_dX"])
        gb, dZ = svgp.whitened_conditional_backward(k, psi, Z, X, cond, W_bar, knn_bar, inputs=True)
        assert np.array_equal(gb, GOLDEN[f"{tag}/back_g"]) and np.array_equal(dZ, GOLDEN[f"{tag}/back_dZ"])


@pytest.mark.parametrize("par,ard,fixed", CASES)
def test_vjps_match_finite_differences(par, ard, fixed):
    rng = np.random.default_rng(1)
    k = SquaredExponential(2, ard=ard, parameterisation=par, fixed_amplitude=fixed)
    X1, X2 = rng.normal(size=(4, 2)), rng.normal(size=(5, 2))
    psi = rng.normal(scale=0.3, size=k.n_params)
    K_bar = rng.normal(size=(4, 5))
    g, dX1 = k.cross_covariance_vjp(psi, X1, X2, k(psi, X1, X2), K_bar, True)
    h = 1e-6
    for i in range(k.n_params):
        e = np.zeros(k.n_params)
        e[i] = h
        fd = np.sum(K_bar * (k(psi + e, X1, X2) - k(psi - e, X1, X2))) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    E = np.zeros_like(X1)
    E[2, 1] = h
    fd = np.sum(K_bar * (k(psi, X1 + E, X2) - k(psi, X1 - E, X2))) / (2 * h)
    assert dX1[2, 1] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    d_bar = rng.normal(size=4)
    gd = k.diag_vjp(psi, k.diag(psi, X1), d_bar)
    for i in range(k.n_params):
        e = np.zeros(k.n_params)
        e[i] = h
        fd = np.sum(d_bar * (k.diag(psi + e, X1) - k.diag(psi - e, X1))) / (2 * h)
        assert gd[i] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_initial_psi_puts_the_lengthscale_at_the_median_distance():
    X = np.random.default_rng(2).normal(size=(30, 2))
    med = median_distance(X)
    for par in ("fg", "amis", "ma", "gplvm"):
        k = SquaredExponential(2, ard=True, parameterisation=par)
        a, w = k.amplitude_and_precisions(k.initial_psi(X, amplitude=2.5))
        assert a == pytest.approx(2.5) and np.allclose(w, 1 / med**2)


# ---------------------------------------------------------------------------
# a second kernel, written only here: Matérn 5/2 with psi = (log l, log s2)
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Matern52:
    input_dim: int
    n_params: int = 2
    param_names: tuple = ("lengthscale", "variance")

    def _r(self, psi, X, X2):
        return cdist(X, X if X2 is None else X2) / np.exp(psi[0])

    def __call__(self, psi, X, X2=None):
        r = np.sqrt(5.0) * self._r(psi, X, X2)
        return np.exp(psi[1]) * (1 + r + r * r / 3) * np.exp(-r)

    def diag(self, psi, X):
        return np.full(len(X), np.exp(psi[1]))

    def gradients(self, psi, X, K=None):
        r = np.sqrt(5.0) * self._r(psi, X, None)
        s2 = np.exp(psi[1])
        d_l = s2 * (r * r / 3) * (1 + r) * np.exp(-r)  # dK/dlog l
        return [d_l, self(psi, X)]

    def amplitude(self, psi):
        return float(np.exp(psi[1]))

    def initial_psi(self, X, amplitude=1.0):
        return np.array([np.log(median_distance(X)), np.log(amplitude)])

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs=True):  # pragma: no cover - not used here
        raise NotImplementedError

    def diag_vjp(self, psi, diag, diag_bar):
        return np.array([0.0, float(np.sum(diag * diag_bar))])


def test_a_new_kernel_needs_no_change_outside_kernels():
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(25, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=25)
    k = Matern52(1)
    assert isinstance(k, Kernel)
    model = regression.GPRegression(X, y, k)
    psi = regression.default_init(model)
    v, g = model.log_marginal_and_grad(psi)
    h = 1e-6
    for i in range(psi.size):
        e = np.zeros(psi.size)
        e[i] = h
        fd = (model.log_marginal(psi + e) - model.log_marginal(psi - e)) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-6)
    ml = regression.fit_type2_ml(model, np.random.default_rng(0), n_restarts=2)
    assert ml.log_marginal > v and np.exp(ml.psi[0]) > 0.1


def test_the_optional_gradient_traces_falls_back_everywhere():
    """Issue 33: ``gradient_traces`` is optional.  ``gpbayes.kernels.gradient_traces`` uses the kernel's own
    (SquaredExponential: to the bit) or sums W o dK/dpsi_i over ``gradients``; the Laplace and EP marginals
    (ep-ml, nuts-is) and the whitened joint posterior (nuts-whitened) go through it, so the Matérn written
    above (no ``gradient_traces``) gets their gradients right."""
    from gpbayes import approx, kernels, likelihoods, priors
    from gpbayes.mcmc import whitened_nuts

    rng = np.random.default_rng(4)
    X = rng.normal(size=(15, 1))
    se = SquaredExponential(1, nugget=1e-6)
    psi_se = np.array([0.2, -0.1])
    W = rng.normal(size=(15, 15))
    W = W + W.T
    K = se(psi_se, X)
    assert np.array_equal(kernels.gradient_traces(se, psi_se, X, W, K), se.gradient_traces(psi_se, X, W, K))
    k = Matern52(1)
    assert not hasattr(k, "gradient_traces")
    psi = np.array([0.3, 0.1])
    np.testing.assert_allclose(kernels.gradient_traces(k, psi, X, W, k(psi, X)),
                               [np.sum(W * G) for G in k.gradients(psi, X)], rtol=1e-12)
    y = np.where(np.sin(3 * X[:, 0]) + 0.3 * rng.normal(size=15) > 0, 1.0, -1.0)
    h = 1e-5
    for fn in (approx.laplace_log_marginal_and_grad, functools.partial(approx.ep_log_marginal_and_grad, tol=1e-12)):
        _, g, _ = fn(k, psi, X, y, likelihoods.Probit())
        for i in range(2):
            e = np.eye(2)[i] * h
            fd = (fn(k, psi + e, X, y, likelihoods.Probit())[0] - fn(k, psi - e, X, y, likelihoods.Probit())[0]) / (2 * h)
            assert g[i] == pytest.approx(fd, rel=1e-4, abs=1e-5), (fn, i)
    target = whitened_nuts.WhitenedJointPosterior(k, X, y, likelihoods.Probit(), priors.default_kernel_prior(k))
    pos = np.concatenate([psi, rng.normal(size=15)])
    _, grad = target(pos)
    for i in range(2):
        e = np.zeros(pos.size)
        e[i] = 1e-4  # K's condition number is 1e9 here: a smaller step is rounding, not derivative
        fd = (target.log_density(pos + e) - target.log_density(pos - e)) / 2e-4
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-6)
