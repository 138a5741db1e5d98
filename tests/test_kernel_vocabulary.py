"""The vocabulary of PyMC's pm.gp and GPflow (issue 41 §6): ``c * k`` and ``k + c`` with numbers, the
Constant, Cosine and Polynomial kernels, ``k.fix(...)`` (hyperparameters held at values, the others
sampled) and GPRegressor's known (homoscedastic or per-point) noise.

Independent answers: each kernel entry against its formula written out here one pair at a time;
every derivative against central finite differences; the regression marginal against scipy's
multivariate normal on a covariance built by hand; the posterior of the one sampled hyperparameter
of a fixed model against 1-D quadrature.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

import gpbayes as gb
from gpbayes import kernels as K
from gpbayes import model_spec
from gpbayes.regression import GPRegression

D = 3


# ---------------------------------------------------------------------------
# the formulas, one entry at a time
# ---------------------------------------------------------------------------
def _m52(psi, u, v):
    r = math.sqrt(sum((u[d] - v[d]) ** 2 for d in range(len(u)))) / math.exp(psi[0])
    return math.exp(psi[1]) * (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5) * r)


def ref_entry(k, psi, u, v, same):
    """k(u, v) from the docstrings' formulas; ``same``: a diagonal entry of K(X, X)."""
    if isinstance(k, K.Constant):
        return k.value if k.value is not None else math.exp(psi[0])
    if isinstance(k, K.Cosine):
        ell = np.exp(psi[:-1]) * np.ones(k.input_dim)
        u_, v_ = (u, v) if k.active_dims is None else (u[list(k.active_dims)], v[list(k.active_dims)])
        return math.exp(psi[-1]) * (math.cos(2 * math.pi * sum((u_[d] - v_[d]) / ell[d] for d in range(k.input_dim)))
                                    + same * k.nugget)
    if isinstance(k, K.Polynomial):
        w = np.exp(psi[:-1]) * np.ones(k.input_dim)
        c = math.exp(psi[-1])
        return ((sum(w[d] * u[d] * v[d] for d in range(k.input_dim)) + c) ** k.degree
                + same * k.nugget * (w.sum() + c) ** k.degree)
    if isinstance(k, K.Matern52):
        return _m52(psi, u, v)
    if isinstance(k, K.Scaled):
        return k.scale * ref_entry(k.kernel, psi, u, v, same)
    if isinstance(k, K.Fixed):
        return ref_entry(k.kernel, k.full_psi(psi), u, v, same)
    if isinstance(k, K.Sum):
        return sum(ref_entry(c, p, u, v, same) for c, p in zip(k.kernels, k.split(psi)))
    if isinstance(k, K.Product):
        return float(np.prod([ref_entry(c, p, u, v, same) for c, p in zip(k.kernels, k.split(psi))]))
    raise TypeError(k)  # pragma: no cover


def ref_matrix(k, psi, X, X2=None):
    B = X if X2 is None else X2
    return np.array([[ref_entry(k, psi, X[i], B[j], X2 is None and i == j) for j in range(len(B))]
                     for i in range(len(X))])


KERNELS = {
    "constant": K.Constant(),
    "cosine": K.Cosine(D),
    "cosine-ard-nugget": K.Cosine(D, ard=True, nugget=1e-3),
    "cosine-dims": K.Cosine(ard=True, active_dims=[2, 0]),
    "polynomial": K.Polynomial(D, degree=2),
    "polynomial-ard-nugget": K.Polynomial(D, degree=3, ard=True, nugget=1e-3),
    "scaled": 2.5 * K.Matern52(D),
    "plus-constant": K.Matern52(D) + 1.5,
    "fixed": K.Cosine(D, ard=True).fix(lengthscale_1=0.8),
    "fixed-sum": (K.Matern52(D) + K.Polynomial(D, degree=2)).fix(matern52_lengthscale=1.3),
    "mixed": 0.5 * K.Cosine(D) * K.Constant() + 2.0 + K.Polynomial(D, degree=1),
}


def _data(seed=0, n=8, m=5):
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=(n, D)), rng.normal(size=(m, D))


def _fd(f, psi, i, h=1e-6):
    e = np.zeros(psi.size)
    e[i] = h
    return (f(psi + e) - f(psi - e)) / (2 * h)


@pytest.mark.parametrize("name", list(KERNELS))
def test_matrices_match_the_formulas_and_are_positive_semi_definite(name):
    k = KERNELS[name]
    rng, X, X2 = _data()
    psi = rng.normal(scale=0.4, size=k.n_params)
    assert isinstance(k, K.Kernel) and len(k.param_names) == k.n_params == len(k.default_priors())
    np.testing.assert_allclose(k(psi, X), ref_matrix(k, psi, X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k(psi, X, X2), ref_matrix(k, psi, X, X2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k.diag(psi, X), np.diag(ref_matrix(k, psi, X)), rtol=1e-12, atol=1e-12)
    Kx = k(psi, rng.normal(size=(25, D)))
    ev = np.linalg.eigvalsh(0.5 * (Kx + Kx.T))
    assert ev.min() >= -1e-9 * max(ev.max(), 1.0)
    assert np.isfinite(k.amplitude(psi)) and k.initial_psi(X).shape == (k.n_params,)


@pytest.mark.parametrize("name", list(KERNELS))
def test_every_derivative_matches_finite_differences(name):
    """What NUTS, the Laplace/EP marginals and the sparse GP's reverse mode read: dK/dpsi, the traces
    tr(W dK/dpsi), <K_bar, dK(X1, X2)/dpsi>, <K_bar, dK/dX1>, <d_bar, d diag K/dpsi>."""
    k = KERNELS[name]
    rng, X, X2 = _data(1)
    psi = rng.normal(scale=0.4, size=k.n_params)
    Kxx = k(psi, X)
    G = k.gradients(psi, X, Kxx)
    W = rng.normal(size=Kxx.shape)
    W = W + W.T
    traces = K.gradient_traces(k, psi, X, W.copy(order="F"), Kxx)
    K_bar = rng.normal(size=(len(X), len(X2)))
    g, dX = k.cross_covariance_vjp(psi, X, X2, k(psi, X, X2), K_bar, True)
    d_bar = rng.normal(size=len(X))
    gd = k.diag_vjp(psi, k.diag(psi, X), d_bar, X=X)
    assert len(G) == len(traces) == len(g) == len(gd) == k.n_params
    for i in range(k.n_params):
        np.testing.assert_allclose(G[i], _fd(lambda p: k(p, X), psi, i), rtol=1e-6, atol=1e-7)
        assert traces[i] == pytest.approx(_fd(lambda p: np.sum(W * k(p, X)), psi, i), rel=1e-6, abs=1e-6)
        assert g[i] == pytest.approx(_fd(lambda p: np.sum(K_bar * k(p, X, X2)), psi, i), rel=1e-6, abs=1e-7)
        assert gd[i] == pytest.approx(_fd(lambda p: np.sum(d_bar * k.diag(p, X)), psi, i), rel=1e-6, abs=1e-7)
    h = 1e-6
    for row, col in ((0, 0), (3, 1), (7, 2)):
        E = np.zeros_like(X)
        E[row, col] = h
        fd = np.sum(K_bar * (k(psi, X + E, X2) - k(psi, X - E, X2))) / (2 * h)
        assert dX[row, col] == pytest.approx(fd, rel=1e-6, abs=1e-7)


# ---------------------------------------------------------------------------
# numbers with kernels
# ---------------------------------------------------------------------------
def test_numbers_scale_and_shift_a_kernel_without_new_parameters():
    k = K.Matern52(2)
    rng = np.random.default_rng(2)
    X, psi = rng.normal(size=(6, 2)), np.array([0.2, -0.3])
    for scaled in (2.0 * k, k * 2, np.float64(2.0) * k):
        assert isinstance(scaled, K.Scaled) and scaled.param_names == k.param_names
        np.testing.assert_array_equal(scaled(psi, X), 2.0 * k(psi, X))
    assert 3.0 * (2.0 * k) == K.Scaled(k, 6.0)
    for shifted in (k + 1.5, 1.5 + k):
        assert shifted.param_names == k.param_names and shifted.n_params == 2
        np.testing.assert_allclose(shifted(psi, X), k(psi, X) + 1.5, rtol=1e-15)
    assert k + 0 is k and 0 + k is k and k + 0.0 is k
    total = sum([k, K.Linear(2), K.Constant()])
    assert total.param_names == ["matern52_lengthscale", "matern52_variance", "linear_variance", "constant_variance"]
    # names in a model: the descriptive ones of k, unchanged by the number
    X5, y5 = rng.normal(size=(12, 2)), rng.normal(size=12)
    assert gb.GPRegressor(X5, y5, kernel=2.0 * k + 1.0).hyperparameter_names == \
        ["lengthscale", "signal_variance", "noise_variance"]


@pytest.mark.parametrize("expr, match", [
    (lambda k: 0 * k, r"c > 0"), (lambda k: -2.0 * k, r"c > 0"), (lambda k: k * float("nan"), r"c > 0"),
    (lambda k: k + -1.0, r"c >= 0"), (lambda k: k + float("inf"), r"c >= 0"),
])
def test_a_number_that_makes_no_kernel_is_refused_with_the_rule(expr, match):
    with pytest.raises(ValueError, match=match):
        expr(K.Matern52(2))


@pytest.mark.parametrize("make, match", [
    (lambda: K.Constant(value=-1.0), r"value must be a finite number >= 0"),
    (lambda: K.Constant(value="1"), r"value must be None \(a sampled variance\) or a number"),
    (lambda: K.Polynomial(2, degree=2.5), r"degree must be a whole number >= 1"),
    (lambda: K.Polynomial(2, degree=0), r"degree must be a whole number >= 1"),
    (lambda: K.Cosine(2, ard="no"), r"ard must be True or False"),
    (lambda: K.Matern52(2).fix(lenghtscale=0.5), r"unknown hyperparameter 'lenghtscale' to fix.*lengthscale"),
    (lambda: K.Matern52(2).fix(lengthscale=-0.5), r"value of 'lengthscale' must be a finite number > 0"),
    (lambda: K.Matern52(2).fix(lengthscale="1"), r"value of 'lengthscale' must be a finite number > 0"),
    (lambda: K.Matern52(2).fix(), r"give at least one hyperparameter to fix"),
    (lambda: K.SquaredExponential(2).fix(sigma=1.0, signal_variance=2.0), r"already fixed by another key"),
])
def test_misuse_of_the_new_kernels_is_refused_at_construction(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_a_constant_kernel_acts_on_any_columns_and_its_marginal_is_the_hand_built_gaussian():
    """y ~ N(0, v 1 1^T + lambda I): GP regression's log marginal against scipy's multivariate normal."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(7, 4)), rng.normal(size=7) + 0.8
    gp = GPRegression(X, y, K.Constant())
    v, lam = 1.7, 0.3
    C = v * np.ones((7, 7)) + lam * np.eye(7)
    value, grad = gp.log_marginal_and_grad(np.log([v, lam]))
    assert value == pytest.approx(stats.multivariate_normal(np.zeros(7), C).logpdf(y), rel=1e-12)
    for i in range(2):
        assert grad[i] == pytest.approx(_fd(gp.log_marginal, np.log([v, lam]), i), rel=1e-6)
    model = gb.GPRegressor(X, y, kernel=K.Matern52(4) + K.Constant())  # Constant's input_dim is not X's: fine
    assert model.hyperparameter_names == ["matern52_lengthscale", "matern52_signal_variance", "constant_variance",
                                          "noise_variance"]


def test_the_new_kernels_are_named_in_a_model_error_and_travel_in_the_saved_spec():
    X = np.random.default_rng(4).normal(size=(10, 2))
    with pytest.raises(TypeError, match=r"'cosine' names gpbayes.kernels.Cosine"):
        gb.GPRegressor(X, X[:, 0], kernel="cosine")
    for k in KERNELS.values():
        assert model_spec.component_from_spec(model_spec.component_spec(k)) == k


# ---------------------------------------------------------------------------
# fixed hyperparameters
# ---------------------------------------------------------------------------
def test_a_fixed_kernel_is_the_full_kernel_at_the_fixed_values():
    k = K.SquaredExponential(3, ard=True)  # F&G's names tau_j (lengthscale_j), sigma (signal_variance)
    for fix, full_at in (({"lengthscale_1": 0.4}, {1: 0.4}), ({"tau_1": 0.4}, {1: 0.4}),
                         ({"lengthscale": 0.7}, {0: 0.7, 1: 0.7, 2: 0.7}), ({"signal_variance": 2.0}, {3: 2.0})):
        f = k.fix(**fix)
        free = [i for i in range(4) if i not in full_at]
        assert f.param_names == [k.param_names[i] for i in free]
        psi = np.random.default_rng(5).normal(size=f.n_params)
        full = np.empty(4)
        full[free] = psi
        for i, v in full_at.items():
            full[i] = math.log(v)
        X = np.random.default_rng(6).normal(size=(6, 3))
        np.testing.assert_array_equal(f(psi, X), k(full, X))


def test_fixing_leaves_one_sampled_hyperparameter_whose_posterior_matches_quadrature():
    """GPRegressor with the kernel's two hyperparameters held: the posterior of the noise variance alone,
    its mean from the sampler against 1-D quadrature of the exact marginal times the prior."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, size=(15, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(15)
    model = gb.GPRegressor(X, y, kernel=K.Matern52(1).fix(lengthscale=0.8, variance=1.2))
    assert model.hyperparameter_names == ["noise_variance"]

    def log_post(t):  # t = log lambda on the model's scale; the prior's density on psi
        p = np.array([t])
        return model.gp.log_marginal(p) + model.prior.log_density(p)

    mode = max(np.linspace(-8, 2, 201), key=log_post)
    z, _ = integrate.quad(lambda t: math.exp(log_post(t) - log_post(mode)), mode - 8, mode + 8, limit=200)
    m1, _ = integrate.quad(lambda t: t * math.exp(log_post(t) - log_post(mode)), mode - 8, mode + 8, limit=200)
    m2, _ = integrate.quad(lambda t: t * t * math.exp(log_post(t) - log_post(mode)), mode - 8, mode + 8, limit=200)
    mean, sd = m1 / z, math.sqrt(m2 / z - (m1 / z) ** 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        idata = gb.sample(model, "slice", chains=2, draws=1500, n_warmup=100, seed=3, progress=False, cores=1)
    draws = gb.api.psi_draws(idata).values.ravel()  # psi = log lambda
    ess = float(np.asarray(gb.summary(idata)["ess_bulk"])[0])
    assert abs(draws.mean() - mean) < 4 * sd / math.sqrt(ess), (draws.mean(), mean, sd, ess)


# ---------------------------------------------------------------------------
# known noise in GPRegressor
# ---------------------------------------------------------------------------
def _hetero(seed=8, n=12):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 1))
    sd = 0.05 + 0.3 * rng.uniform(size=n)
    return X, np.sin(2 * X[:, 0]) + sd * rng.standard_normal(n), sd


def test_per_point_noise_gives_the_hand_built_marginal_and_its_gradient():
    X, y, sd = _hetero()
    model = gb.GPRegressor(X, y, kernel=K.Matern52(1), noise=sd ** 2)
    assert model.hyperparameter_names == ["lengthscale", "signal_variance"] and model.gp.n_params == 2
    psi = np.array([0.1, -0.2])
    Xs, ys = model.X, model.y  # the model's (standardised) scale: the noise is divided by y_scale^2
    Kxx = np.array([[_m52(psi, a, b) for b in Xs] for a in Xs])
    C = Kxx + np.diag(sd ** 2 / model.y_scale ** 2)
    value, grad = model.gp.log_marginal_and_grad(psi)
    assert value == pytest.approx(stats.multivariate_normal(np.zeros(len(y)), C).logpdf(ys), rel=1e-12)
    assert model.gp.log_marginal(psi) == pytest.approx(value, rel=1e-13)
    for i in range(2):
        assert grad[i] == pytest.approx(_fd(model.gp.log_marginal, psi, i), rel=1e-6)
    per = GPRegression(Xs, ys, K.Matern52(1), gradient="per_parameter", noise=sd ** 2 / model.y_scale ** 2)
    np.testing.assert_allclose(per.log_marginal_and_grad(psi)[1], grad, rtol=1e-10)


def test_one_known_noise_value_is_the_sampled_model_at_that_value():
    X, y, _ = _hetero(9)
    known = gb.GPRegressor(X, y, noise=0.04)
    free = gb.GPRegressor(X, y)
    assert "noise_variance" not in known.hyperparameter_names and len(known.prior) == free.gp.n_params - 1
    psi = free.gp.kernel_psi(np.array([0.3, -0.1]))
    full = np.append(psi, math.log(0.04 / free.y_scale ** 2))
    assert known.gp.log_marginal(psi) == pytest.approx(free.gp.log_marginal(full), rel=1e-12)
    np.testing.assert_allclose(known.gp.log_marginal_and_grad(psi)[1], free.gp.log_marginal_and_grad(full)[1][:-1],
                               rtol=1e-10)
    np.testing.assert_allclose(known.gp.predict(psi, X[:3])[1], free.gp.predict(full, X[:3])[1], rtol=1e-12)


@pytest.mark.parametrize("noise, match", [
    (np.ones(5), r"one variance or one per row of X \(12\), got shape \(5,\)"),
    (-0.1, r"finite variances > 0.*row 0"), (np.r_[np.ones(11), np.nan], r"finite variances > 0.*row 11"),
    ("0.1", r"noise must be None \(sampled\), a noise variance > 0"),
    (np.ones((12, 1)), r"noise.ravel\(\)"),
])
def test_bad_known_noise_is_refused_naming_it(noise, match):
    X, y, _ = _hetero()
    with pytest.raises((ValueError, TypeError), match=match):
        gb.GPRegressor(X, y, noise=noise)


def test_a_heteroscedastic_model_samples_predicts_and_rebuilds_from_its_result():
    X, y, sd = _hetero(10)
    model = gb.GPRegressor(X, y, kernel=K.Matern52(1), noise=sd ** 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        idata = gb.sample(model, "nuts", chains=1, draws=20, n_warmup=20, seed=1, progress=False, cores=1)
    assert list(gb.api.psi_draws(idata).coords["param"].values) == ["lengthscale", "signal_variance"]
    with pytest.warns(UserWarning, match=r"known per training point.*not at the new inputs"):
        given = gb.predict(model, idata, X[:4])
    with pytest.warns(UserWarning, match=r"known per training point"):
        rebuilt = gb.predict(idata, X[:4])  # the model rebuilt from the result alone
    np.testing.assert_allclose(rebuilt["mean"].values, given["mean"].values, rtol=1e-12)
    assert np.all(given["y_lower"].values < given["mean"].values)


def test_the_new_kernels_sample_with_nuts():
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, size=(20, 1))
    y = np.cos(5 * X[:, 0]) + X[:, 0] ** 2 + 0.1 * rng.standard_normal(20)
    kernel = 2.0 * K.Cosine(1) + K.Polynomial(1, degree=2) + 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gb.NotConvergedWarning)
        idata = gb.sample(gb.GPRegressor(X, y, kernel=kernel), "nuts", chains=1, draws=30, n_warmup=30, seed=2,
                          progress=False, cores=1)
    draws = gb.api.psi_draws(idata).values
    assert draws.shape == (1, 30, 5) and np.all(np.isfinite(draws))
