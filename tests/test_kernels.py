import numpy as np
import pytest

from gpbayes.kernels import SquaredExponential
from reference import se_kernel_double_loop

CASES = [
    # (parameterisation, ard, expected (a, w) from psi) -- the papers' own forms
    ("fg", False, lambda psi, d: (np.exp(psi[-1]), np.full(d, np.exp(-2 * psi[0])))),
    ("fg", True, lambda psi, d: (np.exp(psi[-1]), np.exp(-2 * psi[:d]))),
    ("amis", False, lambda psi, d: (np.exp(psi[-1]), np.full(d, 2 * np.exp(-2 * psi[0])))),
    ("amis", True, lambda psi, d: (np.exp(psi[-1]), 2 * np.exp(-2 * psi[:d]))),
    ("ma", True, lambda psi, d: (np.exp(2 * psi[-1]), np.exp(-2 * psi[:d]))),
    ("gplvm", True, lambda psi, d: (np.exp(psi[-1]), np.exp(psi[:d]))),
]


@pytest.mark.parametrize("param,ard,expect", CASES)
def test_values_match_double_loop(param, ard, expect):
    rng = np.random.default_rng(0)
    d = 3
    k = SquaredExponential(d, ard=ard, parameterisation=param)
    psi = rng.normal(0, 0.5, k.n_params)
    X, X2 = rng.normal(size=(7, d)), rng.normal(size=(5, d))
    a, w = expect(psi, d)
    np.testing.assert_allclose(k(psi, X, X2), se_kernel_double_loop(X, X2, a, w), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(psi, X), se_kernel_double_loop(X, X, a, w), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.diag(psi, X), np.full(7, a))


def test_paper_forms_written_out():
    # Filippone & Girolami eq. 5: sigma exp(-1/2 (x-x')^T A (x-x')), A^-1 = tau^2 I
    x, xp = np.array([[0.3, -1.0]]), np.array([[1.1, 0.4]])
    tau, sigma = 0.7, 2.08
    k = SquaredExponential(2, parameterisation="fg")
    expected = sigma * np.exp(-0.5 * np.sum((x - xp) ** 2) / tau**2)
    assert k(np.log([tau, sigma]), x, xp)[0, 0] == pytest.approx(expected, rel=1e-13)
    # Xiong et al.: sigma exp(-|x - x'|^2 / tau^2)
    k = SquaredExponential(2, parameterisation="amis")
    assert k(np.log([tau, sigma]), x, xp)[0, 0] == pytest.approx(sigma * np.exp(-np.sum((x - xp) ** 2) / tau**2), rel=1e-13)
    # Murray & Adams: sigma_f^2 exp(-1/2 sum (x-x')^2 / l^2)
    k = SquaredExponential(2, ard=True, parameterisation="ma")
    ell = np.array([0.5, 2.0])
    assert k(np.log([*ell, sigma]), x, xp)[0, 0] == pytest.approx(
        sigma**2 * np.exp(-0.5 * np.sum((x - xp) ** 2 / ell**2)), rel=1e-13)


@pytest.mark.parametrize("param,ard,_", CASES)
def test_gradients_match_finite_differences(param, ard, _):
    rng = np.random.default_rng(1)
    d = 3
    k = SquaredExponential(d, ard=ard, parameterisation=param)
    psi = rng.normal(0, 0.3, k.n_params)
    X = rng.normal(size=(6, d))
    grads = k.gradients(psi, X)
    assert len(grads) == k.n_params
    eps = 1e-6
    for i in range(k.n_params):
        e = np.zeros(k.n_params)
        e[i] = eps
        fd = (k(psi + e, X) - k(psi - e, X)) / (2 * eps)
        np.testing.assert_allclose(grads[i], fd, rtol=1e-6, atol=1e-9)


def test_fixed_amplitude_and_shape_errors():
    k = SquaredExponential(2, ard=True, parameterisation="gplvm", fixed_amplitude=True)
    assert k.n_params == 2 and k.param_names == ["theta_0", "theta_1"]
    X = np.zeros((3, 2))
    np.testing.assert_allclose(np.diag(k(np.zeros(2), X)), 1.0)
    with pytest.raises(ValueError, match="expects 2 log-parameters"):
        k(np.zeros(3), X)
    with pytest.raises(ValueError, match=r"expected shape \(n, 2\)"):
        k(np.zeros(2), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="unknown kernel parameterisation"):
        SquaredExponential(2, parameterisation="nope")


def test_kernel_matrix_is_positive_definite_and_fortran():
    rng = np.random.default_rng(2)
    k = SquaredExponential(4, ard=True, parameterisation="amis")
    K = k(rng.normal(size=5) * 0.2, rng.normal(size=(40, 4)))
    assert K.flags.f_contiguous
    np.testing.assert_allclose(K, K.T, atol=1e-14)
    assert np.linalg.eigvalsh(K + 1e-8 * np.eye(40)).min() > 0


def test_nugget_scales_with_amplitude_and_keeps_gradients_exact():
    rng = np.random.default_rng(3)
    k0 = SquaredExponential(2, ard=True, parameterisation="fg")
    k = SquaredExponential(2, ard=True, parameterisation="fg", nugget=1e-6)
    psi = rng.normal(0, 0.3, 3)
    X = rng.uniform(size=(6, 2))
    a = np.exp(psi[-1])
    np.testing.assert_allclose(k(psi, X) - k0(psi, X), a * 1e-6 * np.eye(6), atol=1e-15)
    np.testing.assert_allclose(k(psi, X, X[:3]), k0(psi, X, X[:3]))  # cross-covariance: no nugget
    np.testing.assert_allclose(k.diag(psi, X), a * (1 + 1e-6))
    eps = 1e-6
    for i, g in enumerate(k.gradients(psi, X)):
        e = np.zeros(3)
        e[i] = eps
        np.testing.assert_allclose(g, (k(psi + e, X) - k(psi - e, X)) / (2 * eps), rtol=1e-5, atol=1e-9)
    # a long lengthscale makes K numerically singular without the nugget
    from gpbayes import linalg
    X = rng.uniform(size=(200, 2))
    with linalg.count_ops() as c:
        linalg.cholesky(k(np.log([3.0, 3.0, 2.0]), X))
    assert c.failed_cholesky == 0
    with pytest.raises(ValueError, match="nugget"):
        SquaredExponential(2, nugget=-1.0)


@pytest.mark.parametrize("param", ["fg", "amis", "ma", "gplvm"])
@pytest.mark.parametrize("ard", [False, True])
def test_symmetric_build_is_the_distance_formula_to_the_bit(param, ard):
    """K(X, X) (one temporary, exponent G - (|a_i|^2 + |a_j|^2)/2) equals a exp(-1/2 sqdist) bit for bit."""
    rng = np.random.default_rng(11)
    for n, d, scale in ((1, 1, 1.0), (9, 2, 1e-3), (40, 3, 1.0), (300, 8, 30.0)):
        k = SquaredExponential(d, ard=ard, parameterisation=param, nugget=1e-6 if n == 40 else 0.0)
        X = rng.normal(size=(n, d)) * scale
        if n > 3:
            X[1] = X[0]
            X[2] = 0.0
        psi = rng.normal(size=k.n_params)
        a, w = k.amplitude_and_precisions(psi)
        ref = k._scaled_sqdist(w, X, None)
        ref *= -0.5
        np.exp(ref, out=ref)
        if k.nugget:
            ref[np.diag_indices_from(ref)] += k.nugget
        ref *= a
        K = k(psi, X)
        assert K.flags.f_contiguous
        np.testing.assert_array_equal(K, ref)


# --------------------------------------------------------------- issue 24: traces without derivative matrices
def _trace_reference(k, psi, X, W):
    """tr(W dK/dpsi_i) by direct sums in long double over the derivative matrices."""
    Xl = X.astype(np.longdouble)
    Wl = W.astype(np.longdouble)
    out, scale = [], []
    for G in k.gradients(psi, X):
        terms = Wl * G.astype(np.longdouble)
        out.append(terms.sum())
        scale.append(np.abs(terms).sum())
    return np.array(out, dtype=np.longdouble), np.array(scale, dtype=np.longdouble), Xl


@pytest.mark.parametrize("param,ard,_", CASES)
@pytest.mark.parametrize("nugget,shift", [(0.0, 0.0), (1e-6, 30.0)])
def test_gradient_traces_match_the_derivative_matrices(param, ard, _, nugget, shift):
    rng = np.random.default_rng(11)
    d, n = 4, 60
    k = SquaredExponential(d, ard=ard, parameterisation=param, nugget=nugget)
    X = rng.normal(size=(n, d)) + shift  # shifted inputs: the centring inside keeps the sums small
    for scale in (0.3, 2.0):  # moderate and very short/long lengthscales
        psi = rng.normal(0, scale, k.n_params)
        A = rng.normal(size=(n, n))
        W = A + A.T
        K = k(psi, X)
        ref, size, _ = _trace_reference(k, psi, X, W)
        got = k.gradient_traces(psi, X, W, K)
        # within a few hundred ulps of the sum of |terms| (the direct sums are within ~n ulps)
        assert np.all(np.abs(got - ref) <= 1e-12 * size + 1e-300), (got, ref)
        # the diagonal of K is not read: K + D gives the same traces (GP regression passes C)
        C = K + np.diag(rng.uniform(1, 2, n))
        np.testing.assert_array_equal(k.gradient_traces(psi, X, W, C), got)
        # overwrite_W: the same numbers, formed in W's memory
        Wf = np.asfortranarray(W)
        np.testing.assert_array_equal(k.gradient_traces(psi, X, Wf, K, overwrite_W=True), got)
        assert not np.array_equal(Wf, W)


def test_gradient_traces_fixed_amplitude_and_shapes():
    rng = np.random.default_rng(12)
    k = SquaredExponential(3, ard=True, parameterisation="gplvm", fixed_amplitude=True)
    X = rng.normal(size=(20, 3))
    psi = rng.normal(size=3)
    W = np.eye(20) + 0.1
    got = k.gradient_traces(psi, X, W, k(psi, X))
    assert got.shape == (3,)
    np.testing.assert_allclose(got, [np.sum(W * G) for G in k.gradients(psi, X)], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"W and K: expected shape \(20, 20\)"):
        k.gradient_traces(psi, X, np.eye(3), k(psi, X))


def test_kernel_into_a_buffer_is_the_same_matrix():
    rng = np.random.default_rng(13)
    k = SquaredExponential(5, ard=True, parameterisation="amis", nugget=1e-6)
    X = rng.normal(size=(300, 5))
    psi = rng.normal(0, 0.3, 6)
    buf = np.empty((300, 300), order="F")
    K = k(psi, X, out=buf)
    assert K.base is buf or K is buf or np.shares_memory(K, buf)
    assert K.flags.f_contiguous and K.tobytes() == k(psi, X).tobytes()
    with pytest.raises(ValueError, match="out: expected a Fortran-ordered"):
        k(psi, X, out=np.empty((300, 300)))
    with pytest.raises(ValueError, match="out is for K"):
        k(psi, X, X[:3], out=buf)
