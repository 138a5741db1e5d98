import numpy as np
import pytest

from gpbayes import linalg


def spd(n, rng):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def test_cholesky_matches_numpy_and_counts():
    rng = np.random.default_rng(0)
    A = spd(30, rng)
    with linalg.count_ops() as outer:
        with linalg.count_ops() as inner:
            L = linalg.cholesky(A)
        linalg.cho_inverse(L)
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-12)
    assert L.flags.f_contiguous
    assert inner.cubic == 1 and inner.cholesky == 1
    assert outer.cubic == 2 and outer.inverse == 1
    assert linalg.logdet_from_cholesky(L) == pytest.approx(np.linalg.slogdet(A)[1], rel=1e-12)


def test_solves_and_inverse():
    rng = np.random.default_rng(1)
    A = spd(12, rng)
    b = rng.normal(size=12)
    L = linalg.cholesky(A)
    np.testing.assert_allclose(linalg.cho_solve(L, b), np.linalg.solve(A, b), rtol=1e-10)
    np.testing.assert_allclose(linalg.cho_inverse(L), np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    with linalg.count_ops() as c:
        linalg.solve_triangular(L, b)  # vector rhs: O(n^2), not counted
        linalg.solve_triangular(L, np.eye(12))  # n x n rhs: counted
    assert c.cubic == 1 and c.triangular == 1


def test_jitter_escalates_and_is_recorded():
    # rank-deficient PSD matrix: plain Cholesky fails, jitter rescues it
    x = np.linspace(0, 1, 5)
    A = np.outer(x, x) + np.outer(1 - x, 1 - x)
    with linalg.count_ops() as c:
        L = linalg.cholesky(A, name="lowrank")
    assert c.jitter_events == 1 and c.max_jitter > 0
    assert c.failed_cholesky >= 1 and c.cubic == c.failed_cholesky + 1
    np.testing.assert_allclose(L @ L.T, A + c.max_jitter * np.eye(5), atol=1e-12)


def test_not_positive_definite_is_named():
    A = np.diag([1.0, -1.0, 1.0])
    with pytest.raises(linalg.NotPositiveDefiniteError, match="K_test .*not positive definite"):
        linalg.cholesky(A, name="K_test", max_tries=1)
    with pytest.raises(ValueError, match="K_nan: contains 1 non-finite"):
        linalg.cholesky(np.array([[1.0, np.nan], [0.0, 1.0]]), name="K_nan")
    with pytest.raises(ValueError, match="square"):
        linalg.cholesky(np.ones((2, 3)))


def test_cholesky_factor_has_a_zero_upper_triangle_and_equals_lapack_bit_for_bit():
    """dpotrf runs with clean=0 and the wrapper zeroes the strict upper triangle itself."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(3)
    for n in (1, 7, 256):
        B = rng.normal(size=(n, n))
        A = B @ B.T + n * np.eye(n)
        L = linalg.cholesky(A, count=False)
        assert L.flags.f_contiguous
        assert np.all(L[np.triu_indices(n, 1)] == 0.0) and not np.signbit(L[np.triu_indices(n, 1)]).any()
        ref = lapack.dpotrf(np.asfortranarray(A), lower=1, clean=1)[0]
        np.testing.assert_array_equal(L, ref)
        # the same after a jitter retry (a copy, overwritten in place)
        A2 = A.copy()
        A2[0, 0] = -1.0
        with linalg.count_ops():
            try:
                L2 = linalg.cholesky(A2, max_tries=5, count=False)
            except linalg.NotPositiveDefiniteError:
                continue
        assert np.all(L2[np.triu_indices(n, 1)] == 0.0)
