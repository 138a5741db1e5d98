"""The one place in gpbayes that factorises or inverts matrices.

Every operation whose cost grows as O(n^3) goes through this module and is
counted, because the papers reproduced here measure cost in "O(n^3)
operations" (Filippone & Girolami 2014, Table II; Xiong et al., Sec. 4.4).
What counts as one O(n^3) operation:

* one Cholesky factorisation (``cholesky``), including each failed attempt
  of the escalating-jitter retry, since each costs a full factorisation;
* one triangular solve or product with an n x n right-hand side
  (``solve_triangular`` when the right-hand side has as many columns as rows,
  ``triangular_matmul``);
* one explicit inverse from a factor (``cho_inverse``, ``triangular_inverse``);
* one dense n x n x n matrix product made through ``matmul``.

Solves against vectors or thin matrices are O(n^2 k) and are not counted.

Counting is done by ``count_ops()``, a context manager that returns an
``OpCounter``; nested counters all see the operations made inside them, so a
sampler can count its own step while a benchmark counts the whole run.

All factorisations use LAPACK ``dpotrf`` through scipy on Fortran-ordered
arrays, lower-triangular.
"""

from __future__ import annotations

import functools

import contextlib
import dataclasses
from collections.abc import Iterator

import numpy as np
from scipy.linalg import blas, lapack
from scipy.linalg import solve_triangular as _scipy_solve_triangular

__all__ = [
    "NotPositiveDefiniteError",
    "OpCounter",
    "count_ops",
    "cholesky",
    "solve_triangular",
    "cho_solve",
    "cho_inverse",
    "triangular_inverse",
    "triangular_matmul",
    "logdet_from_cholesky",
    "matmul",
    "inverse_of_negative_definite",
    "record_cubic",
    "record_not_converged",
    "record_failed_estimate",
    "CUBIC_KINDS",
    "build_B",
    "build_B_lower",
    "cholesky_in_place",
    "zero_strict_upper",
    "lower_column_sums_of_squares",
    "TRTRI_DIRECT",
]


class NotPositiveDefiniteError(np.linalg.LinAlgError):
    """A matrix could not be factorised even after the allowed jitter."""


@dataclasses.dataclass
class OpCounter:
    """Tally of expensive linear-algebra operations.

    ``cubic`` is the total number of O(n^3) operations; the other fields
    break it down.  ``jitter_events`` counts factorisations that needed
    added jitter, ``max_jitter`` the largest jitter added.  The numerical
    trouble of the code running inside the block is tallied here too, so
    that a chain records it per draw (``mcmc.runner``): ``not_converged``
    Gaussian approximations (Laplace/EP) that stopped at their iteration
    limit, ``failed_estimates`` likelihood estimates that could not be
    formed (the proposal is rejected).
    """

    cubic: int = 0
    cholesky: int = 0
    failed_cholesky: int = 0
    triangular: int = 0
    inverse: int = 0
    matmul: int = 0
    jitter_events: int = 0
    max_jitter: float = 0.0
    not_converged: int = 0
    failed_estimates: int = 0

    def as_dict(self) -> dict:
        """The counters as a plain dict (field name -> value)."""
        return dataclasses.asdict(self)

    def trouble(self, prefix: str = "") -> dict:
        """The numerical-trouble tally under the names results record it by: ``n_jitter``,
        ``max_jitter``, ``n_not_converged``, ``n_failed_estimates`` (each with ``prefix``)."""
        return {f"{prefix}n_jitter": int(self.jitter_events), f"{prefix}max_jitter": float(self.max_jitter),
                f"{prefix}n_not_converged": int(self.not_converged),
                f"{prefix}n_failed_estimates": int(self.failed_estimates)}


_ACTIVE: list[OpCounter] = []


@contextlib.contextmanager
def count_ops() -> Iterator[OpCounter]:
    """Count O(n^3) operations made inside the ``with`` block."""
    counter = OpCounter()
    _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        # remove this exact counter (not just the last one) so that an
        # exception in a nested block cannot unbalance the stack
        for i in range(len(_ACTIVE) - 1, -1, -1):
            if _ACTIVE[i] is counter:
                del _ACTIVE[i]
                break


def _tick(field: str, cubic: int = 1) -> None:
    for c in _ACTIVE:
        setattr(c, field, getattr(c, field) + 1)
        c.cubic += cubic


#: the kinds of O(n^3) operation an ``OpCounter`` tallies (its fields; each adds one to ``cubic``)
CUBIC_KINDS = ("cholesky", "failed_cholesky", "triangular", "inverse", "matmul")


def record_cubic(kind: str) -> None:
    """Count one O(n^3) operation of ``kind`` (one of :data:`CUBIC_KINDS`) made outside this module:
    a factorisation or solve the caller makes with LAPACK or numpy itself (a batch of Cholesky
    factors by ``numpy.linalg.cholesky``, a ``dtrtrs`` into a buffer of its own) is counted here
    exactly as the functions of this module count theirs (the field and ``cubic`` each + 1)."""
    if kind not in CUBIC_KINDS:
        raise ValueError(f"kind must be one of {list(CUBIC_KINDS)}, got {kind!r}")
    _tick(kind)


def _record_jitter(jitter: float) -> None:
    for c in _ACTIVE:
        c.jitter_events += 1
        c.max_jitter = max(c.max_jitter, jitter)


def record_not_converged() -> None:
    """Tally a Gaussian approximation that stopped at its iteration limit (see ``OpCounter``)."""
    for c in _ACTIVE:
        c.not_converged += 1


def record_failed_estimate() -> None:
    """Tally a likelihood estimate that could not be formed (see ``OpCounter``)."""
    for c in _ACTIVE:
        c.failed_estimates += 1


def _check_square(A: np.ndarray, name: str) -> None:
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name}: expected a square matrix, got shape {A.shape}")
    # a NaN or inf entry makes the sum NaN or inf, so a finite sum proves every entry finite in one
    # read-only pass (no n x n boolean temporary); a non-finite sum (or an overflow) is checked exactly
    if not np.isfinite(np.add.reduce(A, axis=None)) and not np.all(np.isfinite(A)):
        bad = int(np.count_nonzero(~np.isfinite(A)))
        raise ValueError(f"{name}: contains {bad} non-finite entries (NaN or inf)")


@functools.lru_cache(maxsize=8)
def _strict_upper(n: int) -> np.ndarray:
    """Boolean mask of the strictly upper triangle (Fortran order, like the factor), cached per n."""
    return np.asfortranarray(np.triu(np.ones((n, n), dtype=bool), 1))


#: column-block width of the triangle-only passes below (``zero_strict_upper``, ``build_B_lower``,
#: ``lower_column_sums_of_squares``)
_BLOCK = 96


def zero_strict_upper(L: np.ndarray) -> None:
    """Set the strictly upper triangle of the Fortran-ordered square ``L`` to zero, in place.

    Column blocks of width ``_BLOCK``: above each diagonal block a plain slice
    assignment, inside it the cached mask of a block; only the upper half is
    written and no n x n mask is read (one pass over half the matrix instead
    of ``np.copyto(L, 0, where=mask)``'s pass over all of it and its mask).
    The result is the same array of zeros as the masked copy's.
    """
    n = L.shape[0]
    for j0 in range(0, n, _BLOCK):
        j1 = min(n, j0 + _BLOCK)
        L[:j0, j0:j1] = 0.0
        np.copyto(L[j0:j1, j0:j1], 0.0, where=_strict_upper(j1 - j0))


def lower_column_sums_of_squares(T: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Sum of squares of each column's lower triangle (diagonal included) of the Fortran-ordered
    square ``T`` into ``out``, column block by column block (width ``_BLOCK``): inside each diagonal
    block the strict upper part is first set to zero in ``T`` itself (in place; above the diagonal
    blocks nothing is read).  For a lower-triangular factor whose strict upper triangle is stale
    (``cholesky_in_place(..., zero_upper=False)``, ``triangular_inverse(..., out=)`` of it): the
    squared column norms of the triangle, O(n^2), not counted."""
    n = T.shape[0]
    for j0 in range(0, n, _BLOCK):
        j1 = min(n, j0 + _BLOCK)
        np.copyto(T[j0:j1, j0:j1], 0.0, where=_strict_upper(j1 - j0))
        blk = T[j0:, j0:j1]
        np.einsum("ij,ij->j", blk, blk, out=out[j0:j1])
    return out


def build_B(K: np.ndarray, sw: np.ndarray, out: np.ndarray) -> np.ndarray:
    """B = I + diag(sw) K diag(sw), whole, in place in the Fortran buffer ``out`` (the
    jitter fallback of Laplace and EP, whose ``cholesky`` reads both triangles)."""
    np.multiply(K, sw[None, :], out=out)
    out *= sw[:, None]
    out.flat[:: out.shape[0] + 1] += 1.0
    return out


def build_B_lower(K: np.ndarray, sw: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Lower triangle of B = I + diag(sw) K diag(sw) into the Fortran buffer ``out``, in place.

    Each entry is computed exactly as the full build ``out = K * sw[None, :];
    out *= sw[:, None]; diag += 1`` computes it ((K_ij sw_j) sw_i, then + 1 on
    the diagonal), so the lower triangle is the same to the bit; the strictly
    upper triangle outside the diagonal blocks is left as it was (stale).  For
    ``dpotrf`` with ``lower=1``, which reads the lower triangle only, followed
    by the zeroing of the strict upper triangle (``zero_strict_upper``, or
    ``clean=1`` below n = 256): the factor is the same to the bit as from the
    full B, at about half the memory traffic.  Column blocks of width ``_BLOCK``.
    """
    n = out.shape[0]
    for j0 in range(0, n, _BLOCK):
        j1 = min(n, j0 + _BLOCK)
        blk = out[j0:, j0:j1]
        np.multiply(K[j0:, j0:j1], sw[j0:j1], out=blk)
        blk *= sw[j0:, None]
    out.flat[:: n + 1] += 1.0
    return out


def cholesky(
    A: np.ndarray,
    *,
    name: str = "matrix",
    max_tries: int = 5,
    initial_jitter: float = 1e-8,
    count: bool = True,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Lower Cholesky factor L (Fortran order) with L @ L.T = A (+ jitter I).

    ``out``: a Fortran-ordered float64 array of A's shape (not A) that receives the first attempt's
    copy of A and its factor in place, e.g. a buffer reused from call to call: no n x n
    allocation, the same factor.  (A jitter retry factorises a fresh copy.)

    The factorisation is first tried on ``A`` itself.  If LAPACK reports that
    ``A`` is not positive definite, jitter ``initial_jitter * mean(diag(A))``
    is added to the diagonal and multiplied by 10 at each further try, at most
    ``max_tries`` attempts in all; each attempt counts as one O(n^3)
    operation and each jitter used is recorded in the active counters.
    ``max_tries=1`` disables jitter.  ``count=False`` is for matrices whose
    size is the number of hyperparameters (proposal covariances), which are
    not the O(n^3) operations the papers count.  If every attempt fails,
    ``NotPositiveDefiniteError`` names the matrix and the jitter tried.
    """
    A = np.asarray(A, dtype=np.float64)
    _check_square(A, name)
    n = A.shape[0]
    if n == 0:
        return np.zeros((0, 0), order="F")
    scale = float(np.mean(np.diag(A)))
    if not scale > 0:
        raise NotPositiveDefiniteError(
            f"{name}: mean diagonal is {scale:g}; a covariance needs a positive diagonal"
        )
    jitter = 0.0
    info = 0
    for attempt in range(max_tries):
        if attempt == 0 and out is not None:
            if out.shape != A.shape or not out.flags.f_contiguous or out.dtype != np.float64 or out is A:
                raise ValueError(f"out: expected a Fortran-ordered float64 array of shape {A.shape}, not A itself")
            np.copyto(out, A)
            M, overwrite = out, True
        elif attempt == 0:
            M = np.asfortranarray(A)
            overwrite = False
        else:
            jitter = initial_jitter * scale * 10.0 ** (attempt - 1)
            M = np.array(A, order="F", copy=True)
            M[np.diag_indices(n)] += jitter
            overwrite = True
        # n >= 256: clean=0 and one masked pass over the upper triangle; scipy's own (strided) zeroing
        # cost up to 1.3x a cho_factor there (measured in commit 08a255f; the figures were never written to the
        # README nor to docs/performance.md).  Below, clean=1 is cheaper.
        # Either way the factor is the same to the bit.
        big = n >= 256
        L, info = lapack.dpotrf(M, lower=1, clean=0 if big else 1, overwrite_a=overwrite)
        if info == 0:
            if big:
                zero_strict_upper(L)
            if count:
                _tick("cholesky")
            if jitter > 0:
                _record_jitter(jitter)
            return L
        if info < 0:  # pragma: no cover - argument error inside LAPACK
            raise ValueError(f"{name}: dpotrf argument {-info} was illegal")
        if count:
            _tick("failed_cholesky")
    raise NotPositiveDefiniteError(
        f"{name} ({n}x{n}) is not positive definite: dpotrf failed at leading minor "
        f"{info} after {max_tries} attempt(s), last jitter {jitter:.3g} "
        f"(relative {jitter / scale:.1g} of the mean diagonal)"
    )


def cholesky_in_place(A: np.ndarray, zero_upper: bool = True) -> np.ndarray | None:
    """``cholesky`` of a scratch matrix the caller owns, factorised in place; None if not PD.

    For the approximations' B = I + W^1/2 K W^1/2 (``gpbayes.approx``), which
    they rebuild at every iteration into a Fortran-ordered buffer of their
    own: no copy of the input, no finiteness check (B is made from a checked
    K and finite W), only the lower triangle read (``dpotrf`` with
    ``lower=1``; the buffer may hold only B's lower triangle,
    ``build_B_lower``), the strictly upper triangle zeroed as by
    ``cholesky``, so the factor is the same to the bit.  Counted as one Cholesky.  If
    ``dpotrf`` fails, one failed attempt is counted and None is returned:
    ``A`` is then overwritten, and the caller rebuilds it and calls
    ``cholesky`` for the escalating-jitter retries.

    ``zero_upper=False`` (n >= 256 only) leaves the strict upper triangle as
    it was, for a factor that is only used through lower-triangle routines
    (``cho_solve``) and then discarded; the caller zeroes the one it keeps
    (``zero_strict_upper``).  The lower triangle is the same either way.
    """
    n = A.shape[0]
    if not (A.ndim == 2 and A.shape == (n, n) and A.flags.f_contiguous and A.dtype == np.float64):
        raise ValueError("cholesky_in_place needs a square Fortran-ordered float64 array")
    if n == 0:
        return A
    big = n >= 256  # as in cholesky
    L, info = lapack.dpotrf(A, lower=1, clean=0 if big else 1, overwrite_a=1)
    if info == 0:
        if big and zero_upper:
            zero_strict_upper(L)
        _tick("cholesky")
        return L
    _tick("failed_cholesky")
    return None


def solve_triangular(
    L: np.ndarray, B: np.ndarray, *, lower: bool = True, trans: bool = False
) -> np.ndarray:
    """Solve L x = B (or L^T x = B with ``trans``); counted if B is n x n."""
    B = np.asarray(B, dtype=np.float64)
    if B.ndim == 2 and B.shape[1] >= L.shape[0] and L.shape[0] > 1:
        _tick("triangular")
    return _scipy_solve_triangular(
        L, B, lower=lower, trans=1 if trans else 0, check_finite=False
    )


def cho_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve (L L^T) x = B given the lower factor L."""
    B = np.asarray(B, dtype=np.float64)
    wide = B.ndim == 2 and B.shape[1] >= L.shape[0] and L.shape[0] > 1
    if wide:
        _tick("triangular")
    x, info = lapack.dpotrs(L, B, lower=1)
    if info != 0:  # pragma: no cover
        raise ValueError(f"dpotrs failed with info={info}")
    return x


def cho_inverse(L: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """(L L^T)^{-1} from its lower factor; one O(n^3) operation.

    ``overwrite=True`` computes it in the memory of a Fortran-ordered ``L`` (which is then lost):
    no n x n allocation, the same numbers.
    """
    inv, info = lapack.dpotri(L, lower=1, overwrite_c=int(bool(overwrite)))
    if info != 0:
        raise NotPositiveDefiniteError(f"dpotri failed with info={info}")
    _tick("inverse")
    # dpotri wrote the lower triangle; mirror it into the strict upper one in place (one masked
    # copy, was np.tril twice, a transpose and an add: 4.3 of 5.7 ms at n = 506).  ``+= 0.0``
    # turns a -0.0 into +0.0 as the add of the old code did, so the result is the same to the bit.
    np.copyto(inv, inv.T, where=_strict_upper(inv.shape[0]))
    inv += 0.0
    return np.asfortranarray(inv)


#: ``triangular_inverse`` calls LAPACK ``dtrtri`` directly up to this order, recursion above it
#: (callers that need ``dtrtri``'s own bits, e.g. EP's ``diag_sigma``, branch on it)
TRTRI_DIRECT = 64
#: leaf size of the recursion (blocks of at most this order go to ``dtrtri``)
_TRTRI_LEAF = 64


def _trtri_recursive(T: np.ndarray) -> None:
    """Invert the lower-triangular Fortran-ordered ``T`` in place (strict upper triangle untouched).

    With T = [[A, 0], [C, D]], T^-1 = [[A^-1, 0], [-D^-1 C A^-1, D^-1]]: the two
    diagonal blocks are inverted recursively, then C <- -D^-1 (C A^-1) by two
    triangular matrix products (BLAS ``dtrmm``), blocks of order <= ``_TRTRI_LEAF``
    by ``dtrtri``.  n^3/3 flops as ``dtrtri``, but nearly all of them in ``dtrmm``,
    which OpenBLAS runs at GEMM speed: 0.9 instead of 1.5-1.7 Cholesky-equivalents
    at n = 768 (benchmarks/README.md).  The result differs from ``dtrtri``'s in
    the last bits (relative 4e-16 at n = 768; another order of the same sums).
    """
    m = T.shape[0]
    if m <= _TRTRI_LEAF:
        Ti, info = lapack.dtrtri(T, lower=1, overwrite_c=1)
        if info != 0:
            raise NotPositiveDefiniteError(f"dtrtri failed with info={info} (singular triangular factor)")
        if not np.shares_memory(Ti, T):  # T was a strided view: f2py worked on a copy
            T[...] = Ti
        return
    h = m // 2
    _trtri_recursive(T[:h, :h])
    _trtri_recursive(T[h:, h:])
    C = blas.dtrmm(1.0, T[:h, :h], T[h:, :h], side=1, lower=1)  # C A^-1
    T[h:, :h] = blas.dtrmm(-1.0, T[h:, h:], C, side=0, lower=1, overwrite_b=1)  # -D^-1 C A^-1


def _raw_blas():
    """(dtrmm, dtrtri) of scipy's own BLAS/LAPACK as ctypes functions, or None if unavailable.

    Taken from the function-pointer capsules that ``scipy.linalg.cython_blas``
    and ``cython_lapack`` publish for compiled callers (the same library the
    f2py wrappers call).  Unlike the f2py wrappers they accept a leading
    dimension, so ``_trtri_in_place`` works on blocks of one Fortran array
    without copying them.
    """
    try:
        import ctypes

        from scipy.linalg import cython_blas, cython_lapack

        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
        get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

        def ptr(module, name):
            cap = module.__pyx_capi__[name]
            return get_ptr(cap, get_name(cap))

        c, i, d = ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_void_p
        dtrmm = ctypes.CFUNCTYPE(None, c, c, c, c, i, i, d, d, i, d, i)(ptr(cython_blas, "dtrmm"))
        dtrtri = ctypes.CFUNCTYPE(None, c, c, i, d, i, i)(ptr(cython_lapack, "dtrtri"))
        return ctypes, dtrmm, dtrtri
    except Exception:  # pragma: no cover - another scipy layout: fall back to the f2py recursion
        return None


_RAW = _raw_blas()


def _trtri_in_place(T: np.ndarray) -> None:
    """``_trtri_recursive`` on the Fortran-ordered ``T`` through raw BLAS calls (no block copies).

    The same calls in the same order as ``_trtri_recursive`` (``dtrtri`` on the
    leaves, then ``dtrmm`` C <- C A^-1 and C <- -D^-1 C), made on the blocks
    in place with leading dimension n instead of on f2py's contiguous copies;
    checked equal to the bit in ``tests/test_linalg.py``.
    """
    ctypes, dtrmm, dtrtri = _RAW
    n = T.shape[0]
    base = T.ctypes.data
    lda = ctypes.byref(ctypes.c_int(n))
    one, minus_one = ctypes.c_double(1.0), ctypes.c_double(-1.0)
    info = ctypes.c_int(0)

    def at(r, col):
        return base + 8 * (r + col * n)

    def rec(off, m):
        if m <= _TRTRI_LEAF:
            dtrtri(b"L", b"N", ctypes.byref(ctypes.c_int(m)), at(off, off), lda, ctypes.byref(info))
            if info.value != 0:
                raise NotPositiveDefiniteError(f"dtrtri failed with info={info.value} (singular triangular factor)")
            return
        h = m // 2
        rec(off, h)
        rec(off + h, m - h)
        mm, hh = ctypes.byref(ctypes.c_int(m - h)), ctypes.byref(ctypes.c_int(h))
        # C <- C A^-1 (side R), then C <- -D^-1 C (side L); C = T[off+h:off+m, off:off+h]
        dtrmm(b"R", b"L", b"N", b"N", mm, hh, ctypes.addressof(one), at(off, off), lda, at(off + h, off), lda)
        dtrmm(b"L", b"L", b"N", b"N", mm, hh, ctypes.addressof(minus_one), at(off + h, off + h), lda,
              at(off + h, off), lda)

    rec(0, n)


def triangular_inverse(L: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """L^{-1} of a lower-triangular L (n^3/3 flops); one O(n^3) operation.

    LAPACK ``dtrtri`` for n <= ``TRTRI_DIRECT`` (64); above, the recursive
    blocked form of ``_trtri_recursive`` (``dtrmm`` products, ``dtrtri`` on
    blocks of order <= 64), the same inverse up to rounding in a faster order,
    made in place in ``out`` (a Fortran-ordered n x n float64 scratch array of
    the caller's) if given, else in a new array.  The strictly upper triangle
    of the result is that of ``L`` (zero for the factors made by ``cholesky``).
    """
    n = L.shape[0]
    if n <= TRTRI_DIRECT:
        Li, info = lapack.dtrtri(L, lower=1)
        if info != 0:
            raise NotPositiveDefiniteError(f"dtrtri failed with info={info} (singular triangular factor)")
    else:
        if np.any(np.diag(L) == 0):
            raise NotPositiveDefiniteError("singular triangular factor (zero on the diagonal)")
        if out is not None and out.shape == (n, n) and out.flags.f_contiguous and out.dtype == np.float64:
            Li = out
            np.copyto(Li, L)
        else:
            Li = np.array(L, dtype=np.float64, order="F", copy=True)
        if _RAW is not None:
            _trtri_in_place(Li)
        else:  # pragma: no cover
            _trtri_recursive(Li)
    _tick("inverse")
    return Li


def triangular_matmul(T: np.ndarray, B: np.ndarray, *, trans: bool = False, overwrite_b: bool = False) -> np.ndarray:
    """T B (T^T B with ``trans``) for a lower-triangular T (BLAS ``dtrmm``, n^3 flops for an n x n B,
    half a general product's); counted as one triangular operation when B is n x n.

    Only T's lower triangle is read.  ``overwrite_b``: the product is written into ``B`` when it is a
    Fortran-ordered float64 array (else into a new array); the same numbers either way.
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim == 2 and B.shape[1] >= T.shape[0] and T.shape[0] > 1:
        _tick("triangular")
    return blas.dtrmm(1.0, T, B, side=0, lower=1, trans_a=1 if trans else 0, overwrite_b=1 if overwrite_b else 0)


def logdet_from_cholesky(L: np.ndarray) -> float:
    """log |L L^T| = 2 sum log diag L."""
    # np.diag of a matrix is its diagonal() view and np.sum of a vector np.add.reduce: the same numbers
    # without the two Python wrappers (this runs several times per EP update)
    return 2.0 * float(np.add.reduce(np.log(np.asarray(L).diagonal())))


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Dense product, counted as O(n^3) when both factors are n x n-like."""
    if A.ndim == 2 and B.ndim == 2 and min(A.shape[0], A.shape[1], B.shape[1]) > 1:
        if B.shape[1] >= A.shape[0] and A.shape[1] >= A.shape[0]:
            _tick("matmul")
    return A @ B


def inverse_of_negative_definite(H: np.ndarray, floor_ratio: float = 1e-3) -> np.ndarray:
    """(-H)^{-1} for a Hessian H at a mode (hyperparameter-sized, not counted).

    Eigenvalues of -H below ``floor_ratio * max(largest, 1)`` (flat or
    negative-curvature directions, common for ARD lengthscales of irrelevant
    covariates) are raised to that floor, so the result is a usable proposal
    covariance.
    """
    w, V = np.linalg.eigh(-np.asarray(H, dtype=float))
    floor = floor_ratio * max(float(np.max(w)), 1.0)
    return (V / np.maximum(w, floor)) @ V.T
