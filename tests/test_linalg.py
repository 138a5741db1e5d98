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


def test_triangular_inverse_recursive_is_the_inverse_and_keeps_the_upper_triangle():
    """Above order 64 ``triangular_inverse`` recurses (dtrmm products, dtrtri leaves): same inverse up to rounding."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(5)
    for n in (1, 2, 64, 65, 130, 257, 517):
        A = spd(n, rng)
        L = np.array(linalg.cholesky(A, count=False), order="F")
        L[np.triu_indices(n, 1)] = rng.normal(size=n * (n - 1) // 2)  # garbage above the diagonal
        with linalg.count_ops() as c:
            Li = linalg.triangular_inverse(L)
        assert c.cubic == 1 and c.inverse == 1
        ref = lapack.dtrtri(L, lower=1)[0]
        if n <= 64:
            np.testing.assert_array_equal(Li, ref)  # LAPACK itself, to the bit
        np.testing.assert_allclose(np.tril(Li), np.tril(ref), rtol=0, atol=1e-14 * np.max(np.abs(ref)))
        np.testing.assert_array_equal(np.triu(Li, 1), np.triu(L, 1))
        np.testing.assert_allclose(np.tril(L) @ np.tril(Li), np.eye(n), atol=1e-13)
        assert L[0, 0] != 0  # the input is not modified
        np.testing.assert_array_equal(np.tril(L), np.tril(linalg.cholesky(A, count=False)))
    S = np.eye(100)
    S[70, 70] = 0.0
    with pytest.raises(linalg.NotPositiveDefiniteError):
        linalg.triangular_inverse(S)


def test_lower_triangle_build_of_B_gives_the_same_factor_to_the_bit():
    """build_B_lower + cholesky_in_place == cholesky(I + D K D) built whole, whatever the stale upper triangle."""
    rng = np.random.default_rng(6)
    for n in (3, 96, 97, 255, 256, 300, 700):
        X = rng.normal(size=(n, 2))
        K = np.asfortranarray(np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)) + 1e-6 * np.eye(n))
        sw = rng.uniform(0.0, 0.7, size=n)
        full = np.asfortranarray(K * sw[None, :])
        full *= sw[:, None]
        full.flat[:: n + 1] += 1.0
        ref = linalg.cholesky(full, count=False)
        buf = np.full((n, n), np.nan, order="F")  # stale: nothing of the upper triangle is read
        buf[0, :] = 1e300
        with linalg.count_ops() as c:
            L = linalg.cholesky_in_place(linalg.build_B_lower(K, sw, buf))
        assert c.cholesky == 1
        np.testing.assert_array_equal(L, ref)
        assert not np.signbit(L[np.triu_indices(n, 1)]).any()


def test_zero_strict_upper_equals_the_masked_copy():
    rng = np.random.default_rng(7)
    for n in (1, 95, 96, 97, 300):
        A = np.asfortranarray(rng.normal(size=(n, n)))
        B = A.copy(order="F")
        linalg.zero_strict_upper(A)
        np.copyto(B, 0.0, where=linalg._strict_upper(n))
        np.testing.assert_array_equal(A, B)
        assert not np.signbit(A[np.triu_indices(n, 1)]).any()


def test_lower_column_sums_of_squares_is_the_loop_ep_made_to_the_bit():
    """The squared column norms of a lower triangle with a stale upper one: EP's former inline loop
    (``diag_sigma``) and a plain reference on the zeroed triangle."""
    rng = np.random.default_rng(9)
    for n in (1, 95, 96, 97, 300):
        T = np.asfortranarray(rng.normal(size=(n, n)))
        ref_T = np.tril(T)
        old = T.copy(order="F")
        t_old = np.empty(n)
        for j0 in range(0, n, 96):  # the loop as it stood in approx/ep.py
            j1 = min(n, j0 + 96)
            np.copyto(old[j0:j1, j0:j1], 0.0, where=linalg._strict_upper(j1 - j0))
            blk = old[j0:, j0:j1]
            np.einsum("ij,ij->j", blk, blk, out=t_old[j0:j1])
        t = linalg.lower_column_sums_of_squares(T, np.empty(n))
        np.testing.assert_array_equal(t, t_old)
        np.testing.assert_array_equal(T, old)
        np.testing.assert_allclose(t, (ref_T * ref_T).sum(axis=0), rtol=1e-13)


def test_record_cubic_counts_as_the_module_s_own_operations_and_names_the_kinds():
    with linalg.count_ops() as outer:
        with linalg.count_ops() as c:
            linalg.record_cubic("cholesky")
            linalg.record_cubic("triangular")
        linalg.cholesky(spd(4, np.random.default_rng(0)))
    assert (c.cubic, c.cholesky, c.triangular) == (2, 1, 1)
    assert (outer.cubic, outer.cholesky) == (3, 2)
    with pytest.raises(ValueError, match=r"kind must be one of \['cholesky', 'failed_cholesky'"):
        linalg.record_cubic("qr")


def test_no_module_outside_linalg_uses_its_private_names():
    """approx/, gplvm/, sparse/ and the rest use linalg's public functions (read from the source)."""
    import ast
    from pathlib import Path

    lib = Path(linalg.__file__).parent
    found = []
    for path in sorted(lib.rglob("*.py")):
        if path.name == "linalg.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "linalg"
                    and node.attr.startswith("_")):
                found.append(f"{path.relative_to(lib)}:{node.lineno} linalg.{node.attr}")
    assert not found, found


def test_in_place_recursive_inverse_is_the_f2py_recursion_to_the_bit():
    """_trtri_in_place (raw BLAS on blocks, leading dimension n) makes the same calls as _trtri_recursive."""
    assert linalg._RAW is not None
    rng = np.random.default_rng(8)
    for n in (65, 200, 333):
        L = np.array(linalg.cholesky(spd(n, rng), count=False), order="F")
        a, b = L.copy(order="F"), L.copy(order="F")
        linalg._trtri_recursive(a)
        linalg._trtri_in_place(b)
        np.testing.assert_array_equal(a, b)
        out = np.full((n, n), np.nan, order="F")
        Li = linalg.triangular_inverse(L, out=out)
        assert Li is out
        np.testing.assert_array_equal(Li, b)


def test_triangular_matmul_is_the_lower_triangle_times_b_and_counts_once():
    rng = np.random.default_rng(8)
    T = np.asfortranarray(rng.standard_normal((40, 40)))  # its upper triangle must be ignored
    B = np.asfortranarray(rng.standard_normal((40, 40)))
    expected, expected_t = np.tril(T) @ B, np.tril(T).T @ B
    with linalg.count_ops() as ops:
        np.testing.assert_allclose(linalg.triangular_matmul(T, B), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(linalg.triangular_matmul(T, B, trans=True), expected_t, rtol=1e-12, atol=1e-12)
        thin = linalg.triangular_matmul(T, B[:, :3])  # an n x 3 right-hand side is O(n^2 k): not counted
    assert (ops.cubic, ops.triangular) == (2, 2)
    np.testing.assert_allclose(thin, expected[:, :3], rtol=1e-12, atol=1e-12)
    out = linalg.triangular_matmul(T, B, trans=True, overwrite_b=True)
    assert np.shares_memory(out, B)
    np.testing.assert_allclose(B, expected_t, rtol=1e-12, atol=1e-12)
