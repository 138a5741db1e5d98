"""Laplace approximation to p(f | y, theta) by Newton's method.

Rasmussen & Williams (2006), Algorithm 3.1, with Filippone & Girolami (2014,
Sec. 2.1.1, eqs. 9-13) for the notation.  The objective is

    Psi(f) = log p(y | f) - 1/2 f^T K^-1 f   (R&W eq. 3.12 without constants),

evaluated as ``log p(y|f) - 1/2 a^T f`` with ``f = K a`` so that K^-1 is
never formed.  Each Newton step factorises B = I + W^1/2 K W^1/2 once (its
eigenvalues are >= 1, so this is always well conditioned) and makes no
other O(n^3) operation; the rest is matrix-vector work.

Stopping rule: stop when a Newton step (after step halving) raises Psi by
less than ``tol`` (absolute, default 1e-6), or after ``max_iter`` steps
(default 50; ``converged`` is then False).  Newton's method converges
quadratically near the mode, so when the objective changes by less than
``tol`` the returned iterate is within O(tol) of the mode.

Step halving: if a full Newton step lowers Psi (possible far from the mode,
e.g. a Poisson likelihood with large counts started at f = 0), the step is
halved (in f and in a together, since f = K a is linear) up to
``max_halvings`` times; if no tried fraction of the step increases Psi the
iteration stops at the current point, flagged ``converged`` only if the
decrease was below ``tol`` (i.e. rounding at the maximum).

Ordering and cost (exact, and why there is no Cholesky to drop).  The loop
visits iterates f_0, f_1, ..., f_N and factorises B once at each of them:
the Newton step from f_k (R&W Alg. 3.1 lines 6-8) uses the factor at f_k,
and the stopping test compares Psi(f_(k+1)) with Psi(f_k), which needs no
factorisation.  When it is met, the factor at the returned f_N is made by
the loop's next pass (lines 4-5 at f_N) and the loop exits there; nothing
is refactorised after the loop.  So ``n_cubic = n_iter + 1`` = one
Cholesky per Newton step plus the one at the returned point, and the
returned Gaussian is exactly N(f_N, (K^-1 + W(f_N))^-1) with log q(y) =
Psi(f_N) - sum log diag L(f_N) (eq. 3.32 at f_N).  That last factor cannot
be saved exactly: log |B(f)| has a non-zero gradient at the mode, so
pairing Psi(f_N) with the factor of f_(N-1) would move the log marginal by
O(|f_N - f_(N-1)|) -- measured on Pima (n = 768) at psi = (1.5, 1.0):
-1.5e-4, at (0, 0): -7.8e-7 --, far above the 1e-10 to which this function
keeps its values; and returning f_(N-1) with its own factor would stop one
step earlier than the rule says.  Each factorisation is made in place in
one of two scratch buffers used in turn (``linalg.cholesky_in_place``), so
no copy of B is made, and only B's lower triangle -- the part ``dpotrf``
reads -- is built (``linalg.build_B_lower``, same arithmetic per entry);
the factor is the same to the bit as ``linalg.cholesky``'s of the full B.  A warm start adds no factorisation (a discarded
``f_init`` costs its one wasted step, counted in ``n_iter``).  The
importance sampler then needs no further O(n^3) operation beyond the
Cholesky of K (see ``gpbayes.approx``).

Warm starts.  For a log-concave likelihood Psi is strictly concave and has a
unique maximiser; a different starting point only changes the path to it,
and the returned mode differs from a cold start's by O(tol).  So starting
from the previous theta's mode (``f_init``) or from its ``alpha``
(``alpha_init``, giving f = K_new alpha) changes the cost, not the target.
As in GPML's ``infLaplace``, a warm start that is worse than f = 0 is
discarded.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas as _blas

from .. import linalg
from .gaussian import GaussianApproximation, _marginal_and_grad, _not_converged

__all__ = ["laplace_approximation", "laplace_log_marginal_and_grad"]


def laplace_approximation(
    K: np.ndarray,
    y: np.ndarray,
    likelihood,
    f_init: np.ndarray | None = None,
    *,
    alpha_init: np.ndarray | None = None,
    K_chol: np.ndarray | None = None,
    tol: float = 1e-6,
    max_iter: int = 50,
    max_halvings: int = 30,
    targets_checked: bool = False,
) -> GaussianApproximation:
    """Laplace approximation N(f_hat, (K^-1 + W)^-1) and R&W eq. 3.32.

    Parameters
    ----------
    K : prior covariance (n, n).
    y : targets, checked by ``likelihood.check_targets``.
    likelihood : a ``gpbayes.likelihoods.Likelihood`` (only ``check_targets``,
        ``log_lik``, ``d1``, ``d2`` are used); must be log-concave
        (W = -d2 >= 0), as probit, logistic, Gaussian and Poisson are.
    f_init : warm start in f (e.g. the previous theta's mode ``approx.m``).
        Evaluating Psi(f_init) would need K^-1 f_init, which is ill-conditioned
        when K is; instead the first Newton step from f_init is taken without
        a comparison, and discarded in favour of f = 0 if it is worse.  This
        is the cheaper warm start when theta moves (fewer Newton steps than
        ``alpha_init``, whose f = K_new alpha scales with the amplitude).
    alpha_init : warm start in a = K^-1 f (``approx.alpha``); f = K alpha_init,
        kept if Psi is higher there than at f = 0 (GPML ``infLaplace``).
    K_chol : lower Cholesky factor of K, if the caller has it; only stored in
        the result for the importance sampler (never computed here).
    tol, max_iter, max_halvings : see the module docstring.
    targets_checked : ``y`` is already the output of ``likelihood.check_targets``
        (callers that checked it once, e.g. ``PseudoMarginalTarget``); skips
        the check (75 us at n = 768, about 0.02 Cholesky-equivalents).

    Returns
    -------
    GaussianApproximation with ``method="laplace"``, ``m`` = mode, ``w`` = W at
    the mode, ``alpha`` = K^-1 m, ``n_iter`` Newton steps and
    ``n_cubic = n_iter + 1`` Cholesky factorisations of B.
    """
    if f_init is not None and alpha_init is not None:
        raise ValueError("give at most one of f_init and alpha_init")
    K = np.asfortranarray(np.asarray(K, dtype=np.float64))
    if not targets_checked:
        y = likelihood.check_targets(y)
    n = y.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K has shape {K.shape} but there are {n} targets")

    def objective(a, f):
        # Psi(f) = -1/2 a^T f + log p(y|f), f = K a  (R&W Alg. 3.1 line 10 without log|B|)
        return float(-0.5 * (a @ f) + np.sum(likelihood.log_lik(y, f)))

    with linalg.count_ops() as ops:
        # R&W Alg. 3.1 line 2: f := 0 (or a warm start)
        a = np.zeros(n)
        f = np.zeros(n)
        psi = objective(a, f)
        if alpha_init is not None:
            a1 = np.asarray(alpha_init, dtype=np.float64)
            f1 = K @ a1
            psi1 = objective(a1, f1)
            if psi1 > psi:
                a, f, psi = a1, f1, psi1
        elif f_init is not None:
            # Psi(f_init) would need K^-1 f_init; instead the first Newton step
            # from f_init is taken unconditionally (it needs only K and W), and
            # kept only if it beats f = 0 (the GPML guard, one step later)
            psi_zero = psi
            a, f, psi = None, np.array(f_init, dtype=np.float64), -np.inf

        # two scratch buffers, used in turn: B is factorised in place, and the factor of the
        # previous step stays intact while the next B is built
        buffers = (np.empty((n, n), order="F"), np.empty((n, n), order="F"))
        converged = False
        n_iter = 0
        while True:
            # R&W Alg. 3.1 line 4: W := -grad grad log p(y|f)
            W = -likelihood.d2(y, f)
            if np.any(W < 0):
                raise ValueError(
                    f"{getattr(likelihood, 'name', likelihood)}: negative W at "
                    f"{int(np.sum(W < 0))} points; the likelihood is not log-concave here"
                )
            sW = np.sqrt(W)
            # R&W Alg. 3.1 line 5: L := cholesky(I + W^1/2 K W^1/2)
            B = buffers[n_iter % 2]
            # the strict upper triangle is zeroed only in the factor returned (after the loop)
            L = linalg.cholesky_in_place(linalg.build_B_lower(K, sW, B), zero_upper=False)
            if L is None:  # not positive definite in floating point: rebuild (whole), retry with jitter
                L = linalg.cholesky(linalg.build_B(K, sW, B), name="B = I + W^1/2 K W^1/2")
            if converged or n_iter >= max_iter:
                break
            # R&W Alg. 3.1 line 6: b := W f + grad log p(y|f)
            b = W * f + likelihood.d1(y, f)
            # R&W Alg. 3.1 line 7: a := b - W^1/2 L^T \ (L \ (W^1/2 K b))
            a_new = b - sW * linalg.cho_solve(L, sW * (K @ b))
            # R&W Alg. 3.1 line 8: f := K a
            f_new = K @ a_new
            n_iter += 1
            psi_new = objective(a_new, f_new)
            if a is None and not psi_new >= psi_zero:
                # the step from f_init is worse than f = 0: discard the warm start
                a_new, f_new, psi_new = np.zeros(n), np.zeros(n), psi_zero
            elif a is not None:
                # step halving while the objective decreases
                da, df = a_new - a, f_new - f
                s = 1.0
                halvings = 0
                while not psi_new >= psi and halvings < max_halvings:
                    s *= 0.5
                    halvings += 1
                    a_new, f_new = a + s * da, f + s * df
                    psi_new = objective(a_new, f_new)
                if not psi_new >= psi:
                    # no tried fraction of the Newton step increases Psi: stop at f
                    # (L is already at f); at the maximum this is rounding
                    # (converged), otherwise max_halvings was too small (not)
                    converged = bool(psi - psi_new < tol)
                    break
            # R&W Alg. 3.1 line 9: until convergence (change of the objective)
            converged = psi_new - psi < tol
            a, f, psi = a_new, f_new, psi_new

        # R&W Alg. 3.1 line 10: log q(y|X,theta) = -1/2 a^T f + log p(y|f) - sum log L_ii
        log_marginal = psi - 0.5 * linalg.logdet_from_cholesky(L)
        if n >= 256:  # as linalg.cholesky's factor (below 256 dpotrf cleaned it itself)
            linalg.zero_strict_upper(L)

    if not converged:
        _not_converged(f"Laplace's Newton iteration stopped after {n_iter} steps without meeting its tolerance")
    return GaussianApproximation(
        method="laplace",
        m=f,
        w=W,
        B_chol=L,
        K=K,
        alpha=a,
        log_marginal=float(log_marginal),
        n_cubic=ops.cubic,
        n_iter=n_iter,
        converged=bool(converged),
        nu=None,
        K_chol=K_chol,
    )


def laplace_log_marginal_and_grad(
    kernel,
    psi,
    X: np.ndarray,
    y: np.ndarray,
    likelihood,
    f_init: np.ndarray | None = None,
    *,
    tol: float = 1e-9,
    max_iter: int = 50,
    targets_checked: bool = False,
) -> tuple[float, np.ndarray, GaussianApproximation]:
    """log q(y | theta) (R&W eq. 3.32) and its gradient in psi (R&W Alg. 5.1, eqs. 5.20-5.23).

    The Laplace approximate log marginal depends on psi directly (through K) and through the
    mode f_hat(psi); R&W Alg. 5.1 collects both:

        d log q / d psi_j = 1/2 a^T C_j a - 1/2 tr(R C_j) + s2^T (I - K R) C_j u,

    with C_j = dK/dpsi_j, a = K^-1 f_hat, u = grad log p(y | f_hat), R = W^1/2 B^-1 W^1/2,
    s2 = d log q / d f_hat = +1/2 diag(Sigma) * d3 log p(y | f_hat) (Sigma = (K^-1 + W)^-1,
    eq. 5.23): -1/2 log|K^-1 + W| changes by -1/2 Sigma_ii per unit of W_ii, and W_ii = -d2_i
    changes by -d3_i per unit of f_i, hence the plus sign (GPML's ``infLaplace`` has it too;
    the finite-difference tests in tests/test_is_corrected.py fail with the other sign).  With
    v = (I - R K) s2 the last term is v^T C_j u = 1/2 tr(C_j (u v^T + v u^T)) (C_j symmetric),
    so the whole gradient is 1/2 tr(M C_j) for the one symmetric matrix

        M = a a^T - R + u v^T + v u^T,

    and all p traces come from ``kernel.gradient_traces`` (one elementwise product and one
    GEMM against the inputs, ``gpbayes.kernels``) instead of p products with n x n derivative
    matrices: the ARD case (p = d + 1) costs as much as the isotropic one up to O(n^2 d).

    Cost, counted by ``gpbayes.linalg``: the Laplace approximation's ``n_iter + 1`` Cholesky
    factorisations of B, one inverse B^-1 from its factor (R) and one triangular solve
    L \\ (W^1/2 K) (diag Sigma); K itself is never factorised.  ``tol`` is tighter than
    :func:`laplace_approximation`'s default because the formula assumes the exact mode: at
    Newton's quadratic convergence the tighter tolerance costs at most one more step.

    Returns ``(log q, gradient (p,), the approximation)``; the approximation's ``m`` is the
    warm start (``f_init``) of the next call at a nearby psi.
    """
    def fit(K, y):
        return laplace_approximation(K, y, likelihood, f_init=f_init, tol=tol, max_iter=max_iter, targets_checked=True)

    def trace_matrix(q, K, y):
        sw = q.sqrt_w
        u = likelihood.d1(y, q.m)
        # R = W^1/2 B^-1 W^1/2 (R&W Alg. 5.1 line 5, from the factor of B)
        R = linalg.cho_inverse(q.B_chol)
        R *= sw[:, None]
        R *= sw[None, :]
        # diag(Sigma) = diag(K) - diag(C^T C), C = L \ (W^1/2 K) (Alg. 5.1 lines 6-7)
        C = linalg.solve_triangular(q.B_chol, sw[:, None] * K, lower=True)
        diag_sigma = np.diagonal(K) - np.einsum("ij,ij->j", C, C)
        s2 = 0.5 * diag_sigma * likelihood.d3(y, q.m)
        v = s2 - R @ (K @ s2)
        # M = a a^T - R + u v^T + v u^T: -R in place, then the three rank-one terms as one GEMM of
        # [a, u, v] against [a, v, u] (one pass over the n x n memory instead of three outer products)
        M = np.asfortranarray(R)
        M *= -1.0
        return _blas.dgemm(1.0, np.column_stack([q.alpha, u, v]), np.column_stack([q.alpha, v, u]), beta=1.0, c=M,
                           trans_b=True, overwrite_c=True)

    return _marginal_and_grad(kernel, psi, X, y, likelihood, fit, trace_matrix, targets_checked)
