"""The library's kernels (issue 33 §1): every kernel, a Sum and a Product (with ARD and active_dims)
against a naive double-loop reference written here, finite differences of every derivative,
``gradient_traces`` and the reverse-mode products, positive semi-definiteness, names and default
priors; then every kernel through every method that applies to GPRegressor and GPClassifier, and a
kernel written here to the bare protocol (no ``gradient_traces``) through the default classifier.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import gpbayes as gb
from gpbayes import approx, kernels, likelihoods, priors
from gpbayes.kernels import (Kernel, Linear, Matern12, Matern32, Matern52, Periodic, Product, RationalQuadratic,
                             SquaredExponential, Sum, White, median_distance)
from gpbayes.mcmc import whitened_nuts

D = 4  # columns of the test inputs

KERNELS = {
    "matern12": Matern12(D),
    "matern32-ard": Matern32(D, ard=True, nugget=1e-6),
    "matern52-ard-dims": Matern52(ard=True, active_dims=[0, 2]),
    "rq-ard": RationalQuadratic(D, ard=True),
    "periodic-ard-dims": Periodic(ard=True, active_dims=(1, 3), nugget=1e-6),
    "linear-ard": Linear(D, ard=True, nugget=1e-3),
    "white": White(D),
    "se-ard-dims": SquaredExponential(ard=True, active_dims=[3, 1], nugget=1e-6),
    "sum": Matern52(ard=True, active_dims=[0, 1]) + Periodic(active_dims=[2]) + White(D),
    "product": SquaredExponential(D, ard=True, parameterisation="ma") * Linear(active_dims=[2, 3], ard=True),
    "sum-of-product": Matern32(D) * Periodic(active_dims=[0]) + Linear(D),
}


# ---------------------------------------------------------------------------
# the naive reference: one entry at a time, from the formulas in the docstrings
# ---------------------------------------------------------------------------
_SE = {"fg": (1.0, -2.0, 0.0), "amis": (1.0, -2.0, math.log(2.0)), "ma": (2.0, -2.0, 0.0), "gplvm": (1.0, 1.0, 0.0)}


def _cols(k, x):
    return x if k.active_dims is None else x[list(k.active_dims)]


def _scales(k, psi):
    n = k.input_dim if k.ard else 1
    ell = np.exp(psi[:n])
    return ell if k.ard else np.full(k.input_dim, ell[0])


def ref_entry(k, psi, x, xp, same: bool) -> float:
    """k(x, x'); ``same``: x and x' are the same point (a diagonal entry of K(X, X))."""
    if isinstance(k, (Sum, Product)):
        vals = [ref_entry(c, p, x, xp, same) for c, p in zip(k.kernels, k.split(psi))]
        return float(sum(vals)) if isinstance(k, Sum) else float(np.prod(vals))
    u, v = _cols(k, x), _cols(k, xp)
    if isinstance(k, SquaredExponential):
        c_a, c_w, b_w = _SE[k.parameterisation]
        ns = k.input_dim if k.ard else 1
        w = np.exp(c_w * psi[:ns] + b_w) * np.ones(k.input_dim)
        a = 1.0 if k.fixed_amplitude else math.exp(c_a * psi[-1])
        return a * math.exp(-0.5 * sum(w[d] * (u[d] - v[d]) ** 2 for d in range(k.input_dim))) + same * a * k.nugget
    if isinstance(k, White):
        return same * math.exp(psi[0])
    if isinstance(k, Linear):
        vv = np.exp(psi) * np.ones(k.input_dim)
        return sum(vv[d] * u[d] * v[d] for d in range(k.input_dim)) + same * k.nugget * vv.sum()
    a = math.exp(psi[-1])
    ell = _scales(k, psi)
    if isinstance(k, Periodic):
        p = math.exp(psi[-2])
        s = sum(math.sin(math.pi * (u[d] - v[d]) / p) ** 2 / ell[d] ** 2 for d in range(k.input_dim))
        return a * math.exp(-2.0 * s) + same * a * k.nugget
    r = math.sqrt(sum((u[d] - v[d]) ** 2 / ell[d] ** 2 for d in range(k.input_dim)))
    if isinstance(k, Matern12):
        g = math.exp(-r)
    elif isinstance(k, Matern32):
        g = (1 + math.sqrt(3) * r) * math.exp(-math.sqrt(3) * r)
    elif isinstance(k, Matern52):
        g = (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5) * r)
    elif isinstance(k, RationalQuadratic):
        alpha = math.exp(psi[-2])
        g = (1 + r * r / (2 * alpha)) ** -alpha
    else:  # pragma: no cover
        raise TypeError(k)
    return a * g + same * a * k.nugget


def ref_matrix(k, psi, X, X2=None) -> np.ndarray:
    B = X if X2 is None else X2
    return np.array([[ref_entry(k, psi, X[i], B[j], X2 is None and i == j) for j in range(len(B))]
                     for i in range(len(X))])


def _data(seed=0, n=9, m=6):
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=(n, D)), rng.normal(size=(m, D))


def _fd(f, psi, i, h=1e-6):
    e = np.zeros(psi.size)
    e[i] = h
    return (f(psi + e) - f(psi - e)) / (2 * h)


# ---------------------------------------------------------------------------
# values, derivatives, traces, reverse-mode products
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(KERNELS))
def test_matrices_match_the_double_loop_reference(name):
    k = KERNELS[name]
    rng, X, X2 = _data()
    psi = rng.normal(scale=0.4, size=k.n_params)
    assert isinstance(k, Kernel) and len(psi) == len(k.param_names)
    np.testing.assert_allclose(k(psi, X), ref_matrix(k, psi, X), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(k(psi, X, X2), ref_matrix(k, psi, X, X2), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(k.diag(psi, X), np.diag(ref_matrix(k, psi, X)), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", list(KERNELS))
def test_positive_semi_definite(name):
    k = KERNELS[name]
    rng, X, _ = _data(1, n=30)
    for _ in range(3):
        psi = rng.normal(scale=0.7, size=k.n_params)
        K = k(psi, X)
        assert np.array_equal(K, K.T)
        ev = np.linalg.eigvalsh(K)
        assert ev.min() >= -1e-10 * max(ev.max(), 1.0), (name, ev.min())


@pytest.mark.parametrize("name", list(KERNELS))
def test_gradients_and_traces_match_finite_differences(name):
    k = KERNELS[name]
    rng, X, _ = _data(2)
    psi = rng.normal(scale=0.4, size=k.n_params)
    K = k(psi, X)
    G = k.gradients(psi, X, K)
    assert len(G) == k.n_params
    W = rng.normal(size=K.shape)
    W = W + W.T
    traces = kernels.gradient_traces(k, psi, X, W.copy(order="F"), K, overwrite_W=True)
    # K + D for a diagonal D (GP regression passes C = K + lambda I): the same traces
    traces_C = k.gradient_traces(psi, X, W.copy(), K + 0.3 * np.eye(len(X)))
    for i in range(k.n_params):
        fd = _fd(lambda p: k(p, X), psi, i)
        np.testing.assert_allclose(G[i], fd, rtol=1e-6, atol=1e-7, err_msg=f"{name}: {k.param_names[i]}")
        fd_tr = _fd(lambda p: np.sum(W * k(p, X)), psi, i)
        assert traces[i] == pytest.approx(fd_tr, rel=1e-6, abs=1e-6), k.param_names[i]
        assert traces_C[i] == pytest.approx(traces[i], rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(traces, kernels.traces_from_gradients(k, psi, X, W, K), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", list(KERNELS))
def test_reverse_mode_products_match_finite_differences(name):
    k = KERNELS[name]
    rng, X1, X2 = _data(3)
    psi = rng.normal(scale=0.4, size=k.n_params)
    K_bar = rng.normal(size=(len(X1), len(X2)))
    g, dX1 = k.cross_covariance_vjp(psi, X1, X2, k(psi, X1, X2), K_bar, True)
    assert dX1.shape == X1.shape
    for i in range(k.n_params):
        assert g[i] == pytest.approx(_fd(lambda p: np.sum(K_bar * k(p, X1, X2)), psi, i), rel=1e-6, abs=1e-7)
    h = 1e-6
    for row, col in ((0, 0), (2, 1), (4, 2), (5, 3)):
        E = np.zeros_like(X1)
        E[row, col] = h
        fd = np.sum(K_bar * (k(psi, X1 + E, X2) - k(psi, X1 - E, X2))) / (2 * h)
        assert dX1[row, col] == pytest.approx(fd, rel=1e-6, abs=1e-7), (row, col)
    d_bar = rng.normal(size=len(X1))
    gd = k.diag_vjp(psi, k.diag(psi, X1), d_bar, X=X1)
    for i in range(k.n_params):
        assert gd[i] == pytest.approx(_fd(lambda p: np.sum(d_bar * k.diag(p, X1)), psi, i), rel=1e-6, abs=1e-7)


def test_active_dims_select_columns_and_name_the_ard_parameters():
    rng, X, X2 = _data(4)
    for full, sub in ((Matern52(ard=True, active_dims=[2, 0]), Matern52(2, ard=True)),
                      (Periodic(active_dims=[3]), Periodic(1)),
                      (SquaredExponential(ard=True, active_dims=(1, 2)), SquaredExponential(2, ard=True))):
        psi = rng.normal(scale=0.3, size=full.n_params)
        cols = list(full.active_dims)
        assert np.array_equal(full(psi, X), sub(psi, X[:, cols]))
        assert np.array_equal(full(psi, X, X2), sub(psi, X[:, cols], X2[:, cols]))
        Y = X.copy()
        Y[:, [c for c in range(D) if c not in cols]] += 5.0  # the other columns do not matter
        assert np.array_equal(full(psi, Y), full(psi, X))
    assert Matern52(ard=True, active_dims=[2, 0]).param_names == ["lengthscale_2", "lengthscale_0", "variance"]
    assert SquaredExponential(ard=True, active_dims=(1, 2)).param_names == ["tau_1", "tau_2", "sigma"]
    with pytest.raises(ValueError, match=r"input_dim = 3 but active_dims \[0, 1\] selects 2"):
        Matern32(3, active_dims=[0, 1])
    with pytest.raises(ValueError, match="active_dims must be distinct"):
        Matern32(active_dims=[1, 1])
    with pytest.raises(ValueError, match=r"d > 3 \(active_dims \[3\]\)"):
        Periodic(active_dims=[3])(np.zeros(3), X[:, :3])


def test_sums_and_products_compose_names_priors_and_flatten():
    k = SquaredExponential(2) + SquaredExponential(2, ard=True) + Periodic(1)
    assert isinstance(k, Sum) and len(k.kernels) == 3  # flattened
    assert k.param_names == ["se0_tau", "se0_sigma", "se1_tau_0", "se1_tau_1", "se1_sigma",
                             "periodic_lengthscale", "periodic_period", "periodic_variance"]
    assert len(set(k.param_names)) == k.n_params
    prior = priors.default_kernel_prior(k)
    assert len(prior) == k.n_params
    assert prior.components[-2] == priors.LogNormal(0.0, 1.0)  # the period's documented default
    p = Matern52(1) * Linear(1)
    assert isinstance(p, Product) and p.param_names == ["matern52_lengthscale", "matern52_variance",
                                                        "linear_variance"]
    # a component's amplitude: sums add, products multiply
    psi = np.array([0.1, 0.5, -0.2])
    assert p.amplitude(psi) == pytest.approx(math.exp(0.5) * math.exp(-0.2))
    X = np.random.default_rng(0).normal(size=(20, 1))
    s = Matern52(1) + White(1)
    assert s.amplitude(s.initial_psi(X, amplitude=3.0)) == pytest.approx(3.0)
    assert Matern52(1).initial_psi(X)[0] == pytest.approx(math.log(median_distance(X)))
    with pytest.raises(TypeError, match="every component must implement"):
        Sum((Matern52(1), object()))
    # the squared exponential's default prior is the one it had before it had its own
    se = SquaredExponential(3, ard=True)
    assert priors.default_kernel_prior(se).components == (priors.fg_scale_prior(3),) * 3 + (priors.FG_AMPLITUDE_PRIOR,)


# ---------------------------------------------------------------------------
# every kernel through every method that applies
# ---------------------------------------------------------------------------
MODEL_KERNELS = {
    "matern12": Matern12(2),
    "matern52-ard": Matern52(2, ard=True),
    "rq": RationalQuadratic(2),
    "se+periodic": SquaredExponential(2, ard=True) + Periodic(active_dims=[0]),
    "matern32*linear": Matern32(2) * Linear(active_dims=[1]),
    "linear+white": Linear(2, ard=True) + White(2),
}
#: short settings for methods whose defaults are sized for real problems
_SHORT = {"amis": {"n_iterations": 3, "n_per_iteration": 20, "n_resample": 20},
          "mamis": {"n_iterations": 3, "slope": 5, "base": 10, "n_resample": 20},
          "mamis-p": {"n_iterations": 3, "slope": 5, "base": 10, "n_resample": 20},
          "amis-mamis": {"n_tuning_samples": 40, "n_per_iteration_amis": 20, "n_iterations": 3, "slope": 5,
                         "base": 10, "n_resample": 20},
          "pm-amis": {"n_iterations": 3, "n_per_iteration": 10, "n_imp": 8, "n_resample": 20},
          "pseudo-marginal": {"n_imp": 8}, "nuts-is": {"n_imp": 8, "max_tree_depth": 4},
          "nuts": {"max_tree_depth": 4}, "nuts-whitened": {"max_tree_depth": 4}, "type2-ml": {"n_restarts": 1},
          "aa": {"n_latent_updates": 2}, "surr": {"n_latent_updates": 2}}
_SHORT.update({f"slice-{r}": {"n_latent_updates": 2} for r in ("fixed", "prior-white", "surr-site", "surr-taylor",
                                                                 "post-site", "post-taylor")})


def _latent_nugget(k):
    """The kernel with a nugget on its stationary/linear components (a latent GP's K must factorise)."""
    if isinstance(k, (Sum, Product)):
        return type(k)(tuple(_latent_nugget(c) for c in k.kernels))
    return dataclasses.replace(k, nugget=1e-6) if hasattr(k, "nugget") else k


def _run(model, method, seed=0):
    opts = dict(_SHORT.get(method, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gb.sample(model, method=method, chains=1, draws=6, n_warmup=6, seed=seed, progress=False, **opts)


def _finite_draws(idata, names):
    for nm in names:
        v = idata.posterior[nm].values
        assert v.size and np.all(np.isfinite(v)), nm


@pytest.fixture(scope="module")
def small_data():
    rng = np.random.default_rng(11)
    X = rng.uniform(-2, 2, size=(14, 2))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
    return X, f + 0.2 * rng.normal(size=14), np.where(f + 0.3 * rng.normal(size=14) > 0, 1, 0)


@pytest.mark.parametrize("kname", list(MODEL_KERNELS))
def test_every_kernel_through_every_regression_method(kname, small_data):
    X, y, _ = small_data
    model = gb.GPRegressor(X, y, kernel=MODEL_KERNELS[kname])
    assert model.param_names == MODEL_KERNELS[kname].param_names + ["noise_variance"]
    methods = gb.methods(model)
    assert {"rwmh", "nuts", "slice", "amis"} <= set(methods)
    for m in methods:
        try:
            _finite_draws(_run(model, m), model.hyperparameter_names)
        except Exception as err:  # name the method that failed
            raise AssertionError(f"{kname} x {m}: {type(err).__name__}: {err}") from err


@pytest.mark.parametrize("kname", list(MODEL_KERNELS))
def test_every_kernel_through_every_classification_method(kname, small_data):
    X, _, labels = small_data
    model = gb.GPClassifier(X, labels, kernel=_latent_nugget(MODEL_KERNELS[kname]))
    methods = gb.methods(model)
    assert {"pseudo-marginal", "nuts-is", "nuts-whitened", "ep-ml"} <= set(methods)
    for m in methods:
        try:
            _finite_draws(_run(model, m), model.hyperparameter_names)
        except Exception as err:
            raise AssertionError(f"{kname} x {m}: {type(err).__name__}: {err}") from err


# ---------------------------------------------------------------------------
# a kernel of the bare protocol (no gradient_traces, no + or *) through the default classifier
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BareMatern32:
    """Matérn-3/2 with one lengthscale per input, psi = (log l_1, log l_2, log s2): the protocol's
    required methods only."""

    input_dim: int = 2
    n_params: int = 3
    param_names: tuple = ("l_a", "l_b", "s2")

    def _r(self, psi, X, X2):
        ell = np.exp(psi[:2])
        return math.sqrt(3.0) * cdist(X / ell, (X if X2 is None else X2) / ell)

    def __call__(self, psi, X, X2=None):
        r = self._r(psi, X, X2)
        K = np.exp(psi[2]) * (1 + r) * np.exp(-r)
        if X2 is None:
            K[np.diag_indices_from(K)] *= 1 + 1e-6
        return K

    def diag(self, psi, X):
        return np.full(len(X), np.exp(psi[2]))

    def gradients(self, psi, X, K=None):
        r = self._r(psi, X, None)
        base = np.exp(psi[2]) * np.exp(-r)
        out = []
        for d in range(2):
            dd = 3.0 * np.subtract.outer(X[:, d], X[:, d]) ** 2 / np.exp(2 * psi[d])
            out.append(base * dd)  # dK/dlog l_d = s2 3 (x_d - x'_d)^2 / l_d^2 exp(-r)
        return out + [self(psi, X)]

    def amplitude(self, psi):
        return float(np.exp(psi[2]))

    def initial_psi(self, X, amplitude=1.0):
        return np.array([math.log(median_distance(X))] * 2 + [math.log(amplitude)])

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs=True):
        raise NotImplementedError("the sparse GP is not used here")

    def diag_vjp(self, psi, diag, diag_bar):
        return np.array([0.0, 0.0, float(np.sum(diag * diag_bar))])


def test_a_bare_protocol_kernel_runs_through_the_default_classifier(small_data):
    X, _, labels = small_data
    k = BareMatern32()
    assert isinstance(k, Kernel) and not hasattr(k, "gradient_traces")
    rng = np.random.default_rng(5)
    psi = rng.normal(scale=0.3, size=3)
    G = k.gradients(psi, X)
    for i in range(3):  # the test kernel itself is right
        np.testing.assert_allclose(G[i], _fd(lambda p: k(p, X), psi, i), rtol=1e-6, atol=1e-7)
    # the marginals of nuts-is and ep-ml: gradients by the fallback, against finite differences
    y = np.where(labels == 1, 1.0, -1.0)
    for fn in (approx.laplace_log_marginal_and_grad, functools.partial(approx.ep_log_marginal_and_grad, tol=1e-12)):
        _, g, _ = fn(k, psi, X, y, likelihoods.Probit())
        for i in range(3):
            fd = _fd(lambda p: fn(k, p, X, y, likelihoods.Probit())[0], psi, i, h=1e-5)
            assert g[i] == pytest.approx(fd, rel=1e-4, abs=1e-5), (fn, i)
    # the whitened joint posterior (nuts-whitened)
    target = whitened_nuts.WhitenedJointPosterior(k, X, y, likelihoods.Probit(), priors.default_kernel_prior(k))
    pos = np.concatenate([psi, rng.normal(size=len(X))])
    _, grad = target(pos)
    for i in range(3):
        assert grad[i] == pytest.approx(_fd(target.log_density, pos, i, h=1e-4), rel=1e-5, abs=1e-6)
    # the default method (3 hyperparameters: nuts-is) end to end
    model = gb.GPClassifier(X, labels, kernel=k)
    with pytest.warns(gb.methods.DefaultMethodWarning, match="importance-sampling correction"):
        idata = gb.sample(model, chains=1, budget=30, seed=2, progress=False)
    _finite_draws(idata, ["l_a", "l_b", "s2"])
    _finite_draws(_run(model, "nuts-whitened"), ["l_a", "l_b", "s2"])


@pytest.mark.parametrize("cls", [kernels.Matern12, kernels.Matern32, kernels.Matern52, kernels.RationalQuadratic])
@pytest.mark.parametrize("ard", [True, False])
def test_stationary_fused_traces_equal_the_fallback_on_hard_inputs(cls, ard):
    """The stationary kernels' own ``gradient_traces`` (no n x n derivative matrices) against the protocol's
    fallback: duplicated rows (r = 0 off the diagonal), inputs far from the origin (the expanded sum's
    cancellation), a nugget, active columns, and W overwritten only when allowed."""
    rng = np.random.default_rng(11)
    X = 1e3 + rng.normal(size=(35, 4))
    X[5] = X[4]
    k = cls(3, ard=ard, active_dims=(0, 2, 3), nugget=1e-3)
    psi = rng.normal(scale=0.5, size=k.n_params)
    K = k(psi, X)
    W = rng.normal(size=K.shape)
    W = W + W.T
    want = kernels.traces_from_gradients(k, psi, X, W, K)
    W0 = W.copy()
    got = k.gradient_traces(psi, X, W, K)
    np.testing.assert_array_equal(W, W0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(k.gradient_traces(psi, X, W.copy(order="F"), K, overwrite_W=True), want,
                               rtol=1e-9, atol=1e-9)


@dataclasses.dataclass(frozen=True)
class _NoOwnTraces:
    """A library kernel seen through the bare protocol: every method but ``gradient_traces`` (so a Sum
    around it takes the protocol's fallback, ``traces_from_gradients``, for its parameters)."""

    inner: Kernel

    def __getattr__(self, name):
        if name == "gradient_traces":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __call__(self, psi, X, X2=None):
        return self.inner(psi, X, X2)


@pytest.mark.parametrize("ard", [True, False])
def test_periodic_fused_traces_equal_the_fallback(ard):
    """Periodic's own ``gradient_traces`` (B = W o K and two sines per input dimension, no n x n derivative
    matrices) against the protocol's fallback to 1e-10: inputs far from the origin with duplicated rows,
    periods shorter and longer than the spacing, a nugget, active columns, K + D passed for K, W overwritten
    only when allowed; and inside a Sum with a SquaredExponential against the same Sum with the periodic
    component behind the bare protocol."""
    rng = np.random.default_rng(12)
    X = 1e3 + 2.0 * rng.normal(size=(35, 4))
    X[5] = X[4]
    k = Periodic(ard=ard, active_dims=(0, 2, 3), nugget=1e-3)
    for log_p in (-1.5, 0.0, 2.0):
        psi = rng.normal(scale=0.5, size=k.n_params)
        psi[-2] = log_p
        K = k(psi, X)
        W = rng.normal(size=K.shape)
        W = W + W.T
        want = kernels.traces_from_gradients(k, psi, X, W, K)
        W0 = W.copy()
        got = k.gradient_traces(psi, X, W, K + 0.3 * np.eye(len(X)))
        np.testing.assert_array_equal(W, W0)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.abs(want).max())
        np.testing.assert_allclose(k.gradient_traces(psi, X, W.copy(order="F"), K, overwrite_W=True), want,
                                   rtol=1e-10, atol=1e-10 * np.abs(want).max())
    t = np.arange(60.0) / 12.0  # monthly, in years (the CO2 problem's inputs)
    se, per = SquaredExponential(1, parameterisation="ma"), Periodic(1)
    fused, fallback = se + per, Sum((se, _NoOwnTraces(per)))
    psi = np.array([1.2, 0.1, 0.3, 0.02, -0.4])
    K = fused(psi, t)
    W = rng.normal(size=K.shape)
    W = W + W.T
    want = fallback.gradient_traces(psi, t, W, K)
    np.testing.assert_allclose(want, kernels.traces_from_gradients(fused, psi, t, W, K), rtol=1e-12)
    np.testing.assert_allclose(fused.gradient_traces(psi, t, W, K), want, rtol=1e-10)


def test_periodic_regression_gradient_equals_the_per_parameter_gradient_and_finite_differences():
    """GP regression's gradient (R&W eq. 5.9) on SE + periodic through the fused traces equals the
    per-parameter fallback's (the same value to the bit) and central differences of log p(y | psi)."""
    from gpbayes.regression import GPRegression

    rng = np.random.default_rng(13)
    t = (np.arange(48.0) / 12.0)[:, None]
    y = 0.3 * t[:, 0] + np.sin(2 * math.pi * t[:, 0]) + 0.1 * rng.normal(size=48)
    k = SquaredExponential(1, parameterisation="ma") + Periodic(1)
    psi = np.array([1.0, 0.0, 0.2, 0.01, -0.5, math.log(0.01)])
    v_f, g_f = GPRegression(t, y, k).log_marginal_and_grad(psi)
    v_p, g_p = GPRegression(t, y, k, gradient="per_parameter").log_marginal_and_grad(psi)
    assert v_f == v_p
    np.testing.assert_allclose(g_f, g_p, rtol=1e-10, atol=1e-10 * np.abs(g_p).max())
    lm = GPRegression(t, y, k).log_marginal
    for i in range(psi.size):
        assert g_f[i] == pytest.approx(_fd(lm, psi, i, h=1e-5), rel=1e-6, abs=1e-5), k.param_names[i]
