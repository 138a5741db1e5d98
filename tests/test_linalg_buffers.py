"""Issue 24: the factor and the inverse into the caller's memory are the same numbers as fresh arrays."""

import numpy as np
import pytest
from scipy.linalg import lapack

from gpbayes import linalg


def spd(n, seed=0):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return np.asfortranarray(A @ A.T + n * np.eye(n))


@pytest.mark.parametrize("n", [1, 5, 100, 300])  # both sides of cholesky's n >= 256 switch
def test_cholesky_into_a_buffer_is_the_same_factor(n):
    A = spd(n)
    buf = np.full((n, n), np.nan, order="F")
    with linalg.count_ops() as c:
        L = linalg.cholesky(A, max_tries=1, out=buf)
    assert c.cholesky == 1 and np.shares_memory(L, buf)
    assert L.tobytes() == linalg.cholesky(A, max_tries=1).tobytes()
    with pytest.raises(ValueError, match="out: expected a Fortran-ordered"):
        linalg.cholesky(A, out=np.empty((n, n)) if n > 1 else np.empty((n, n + 1), order="F"))
    with pytest.raises(ValueError, match="not A itself"):
        linalg.cholesky(A, out=A)


def test_cholesky_into_a_buffer_still_fails_and_jitters_as_before():
    A = np.asfortranarray(np.ones((4, 4)))  # rank one
    with pytest.raises(linalg.NotPositiveDefiniteError):
        linalg.cholesky(A, max_tries=1, out=np.empty((4, 4), order="F"))
    L = linalg.cholesky(A, max_tries=5, out=np.empty((4, 4), order="F"))
    assert L.tobytes() == linalg.cholesky(A, max_tries=5).tobytes()


@pytest.mark.parametrize("n", [1, 7, 300])
def test_cho_inverse_mirrors_dpotri_and_overwrites_on_request(n):
    L = linalg.cholesky(spd(n, 1), max_tries=1)
    inv = lapack.dpotri(L, lower=1)[0]
    old = np.tril(inv)
    old = np.asfortranarray(old + np.tril(old, -1).T)  # the code before issue 24
    new = linalg.cho_inverse(L)
    assert new.tobytes() == old.tobytes()
    L2 = L.copy(order="F")
    with linalg.count_ops() as c:
        again = linalg.cho_inverse(L2, overwrite=True)
    assert c.inverse == 1 and np.shares_memory(again, L2) and again.tobytes() == old.tobytes()
