"""Expectation propagation for a latent GP with a factorised likelihood (probit classification first).

Rasmussen & Williams (2006), Sec. 3.6 and Algorithm 3.5; Filippone &
Girolami (2014), Sec. 2.1.2, eqs. 14-18.  Each likelihood term p(y_i | f_i)
(Phi(y_i f_i) for the probit) is replaced by an unnormalised Gaussian site
with natural parameters (nu_tilde_i, tau_tilde_i); the approximation is

    q(f) = N(mu, Sigma),  Sigma = (K^-1 + S~)^-1,  mu = Sigma nu~,  S~ = diag(tau~)

(R&W eq. 3.53), and is stored, like the Laplace approximation, through the
Cholesky factor of B = I + S~^1/2 K S~^1/2 (R&W eq. 3.67); see
``gpbayes.approx``.

Two update schedules reach the same fixed point:

``mode="sequential"`` (R&W Alg. 3.5): sites are updated one at a time;
    after each, Sigma gets a rank-one update (R&W eq. 3.70) and mu an O(n)
    update; after each sweep Sigma and mu are recomputed from the sites
    (R&W eq. 3.68) to limit the loss of precision.  Per sweep: n rank-one
    updates (n^3 flops of BLAS-2 work, *not* counted by ``gpbayes.linalg``,
    which counts only its own calls) plus, counted, one Cholesky of B, one
    triangular solve with n right-hand sides and one n x n x n product.

``mode="parallel"``: all cavities are formed from the current diag(Sigma)
    and mu, all sites are updated together, with damping, and then B is
    factorised once; mu = Sigma nu~ follows with O(n^2) work, and diag(Sigma)
    from the inverse of the triangular factor: with A = S~^1/2 K S~^1/2,
    S~^1/2 Sigma S~^1/2 = A (I + A)^-1 = I - B^-1 (R&W eq. 3.68 rearranged),
    so Sigma_ii = (1 - (B^-1)_ii) / tau~_i and (B^-1)_ii is the squared norm
    of column i of L^-1 (``linalg.triangular_inverse``, n^3/3 flops, a third
    of the triangular solve V = L^-1 S~^1/2 K of R&W Alg. 3.5 line 13; above
    n = 64 made recursively with ``dtrmm`` in a reused buffer, 0.7-0.9
    Cholesky-equivalents at n = 768 instead of LAPACK ``dtrtri``'s 1.5-1.9,
    the same inverse up to rounding, and only its lower triangle read).
    Where tau~_i Sigma_ii < 10^-3 (a zero or tiny site precision) the
    subtraction 1 - (B^-1)_ii would lose digits, and those Sigma_ii are taken
    from R&W's form K_ii - |L^-1 S~^1/2 k_i|^2 instead (O(n^2) per such
    site).  Counted cost: k updates cost k Choleskys + k triangular
    inverses; a warm start one more of each (diag(Sigma) at the new theta).

Evaluation of log Z_EP.  log Z_EP is R&W eq. 3.65 with eqs. 3.73-3.74, in the
form of GPML ``infEP`` that stays finite at tau~_i = 0, and it is evaluated
only at *consistent* states: sites (nu~, tau~), the Sigma and mu they define
and the cavities formed from that Sigma and mu (R&W eq. 3.56).  Every
iteration starts from such a state, so log Z_EP of the current sites comes
with the tilted moments the next update needs anyway (O(n) work), and the
value returned is exactly log Z_EP of the returned sites.  (Until 2026-11 the
parallel schedule paired the final sites with the cavities of the update
before, which put log Z_EP 2.6e-3 (n = 200) to 1e-2 (n = 2000) below the
converged value on Pima-like data -- issue 16.)  At the fixed point log Z_EP
is stationary in the site parameters (the property used by R&W eq. 5.27),
so its error is of second order in the sites' distance to the fixed point.

Stopping rules (``stopping``):

``"logz"`` (default): stop at the first consistent state whose log Z_EP
    differs from the previous state's by less than ``tol`` (default 1e-4),
    whose geometric extrapolation of the remaining change,
    |Delta_k| rho / (1 - rho) with rho = |Delta_k / Delta_(k-1)|, is also
    below ``tol``, and at which the last update moved no site parameter
    (nu~_i or tau~_i) by more than ``site_tol`` (default sqrt(tol), i.e.
    1e-2: log Z_EP's error is of second order in the sites').  A ``tol``
    below the rounding level of log Z_EP (64 eps |log Z_EP|, about 1e-11 at
    |log Z_EP| = 1000) is met once the change is at that level.  With
    parallel damping 0.8 the log Z_EP error contracts by about 0.07 per
    update (the square of the sites' contraction, since log Z_EP is
    stationary in them), so the returned log Z_EP is typically within 1e-5
    of the converged value (measured on Pima and simulated data at
    n = 200 ... 3000: benchmarks/README.md, ``bench_marginal.py``).

``"fg2014"``: Filippone & Girolami (2014, Sec. 4): "in both LA and EP we
    imposed a convergence criterion on the change in squared norm of f being
    less than n/10^4": stop when ||mu_new - mu_old||^2 < tol * n, tol = 1e-4
    by default, between two sweeps (sequential) or two parallel updates.
    Kept for the reproduction of F&G's Tables I-III, whose O(n^3) counts per
    iteration (Table II) were made with it; its log Z_EP is still evaluated
    at a consistent state (see above), but the rule itself stops while
    log Z_EP can be 1e-4 to 1e-3 from the converged value.

``max_iter`` bounds the number of sweeps/updates (``converged`` is then
False).  An iteration whose posterior means or variances are no longer finite
(overflow at extreme theta, or a warm start far from the fixed point) has
diverged: every later state would be NaN, so it stops at once instead of
running on to ``max_iter``.

Failed warm starts.  A warm-started run (``sites_init``) that diverges or does
not converge is made again from zero sites (``restarted`` in the result;
``n_iter`` and ``n_cubic`` count both runs): the fixed point does not depend on
the start, and sites carried from a distant theta can keep the iteration from
reaching it.  Measured on 40 linearly separable points (issue 33): a NUTS chain
on log Z_EP (``gb.ISCorrectedNUTS``) kept as its warm start a converged fit
with three site means of 1e12-1e13; from those sites every later fit diverged,
ran its 200 updates in NaN and was refused, so the chain never moved again
(the run printed a warning per fit and did not end); the same fits started
from zero sites converge in 7-9 updates.

Period-2 cycles of damped parallel EP.  With damping 0.8 the parallel update
can overshoot into a limit cycle instead of converging: log Z_EP and the sites
alternate between two states for ever.  Measured on the Breast data (n = 250,
ARD kernel, amplitudes sigma_f ~ 4-5) in Xiong et al.'s PM-MH runs: 49 of 1,818
calls ran into ``max_iter = 200`` with log Z_EP alternating by +-0.001 to
+-0.03 and the sites by 0.03-0.07 at every update, their returned log Z_EP
0.03-0.17 below the fixed point; with damping 0.5 the same calls converge in
15-24 updates to the fixed point of sequential EP (to 1e-4).  So the parallel
schedule watches the signed changes of log Z_EP between consistent states: when
the last three alternate in sign and neither of the last two magnitudes has
shrunk to below ``_CYCLE_RATIO`` (0.9) of its value two updates earlier (a
converging oscillation shrinks by the square of its contraction over two
updates), the damping is halved (down to ``_MIN_DAMPING``) and the watch starts
afresh.  Damping only changes the path to the fixed point, not the fixed point;
a call in which no cycle is detected runs exactly as before.  The damping in
force at the end is returned as ``GaussianApproximation.damping``.  In that
job (every EP call run both ways): the 49 cycling calls converge in 15-31
updates with log Z_EP within 2e-4 of sequential EP's; two calls the ``"logz"``
rule had accepted inside a slowly decaying cycle (its geometric extrapolation
assumes contraction), 2.6e-3 and 3.9e-3 from the fixed point, end within 6e-7;
the other 1,767 calls are bit-identical.

Negative site precisions.  For a log-concave likelihood such as the probit the exact
site update gives tau~_i >= 0 (it equals rho / (1 + sigma_-i^2 (1 - rho))
with rho in (0, 1)); negative values can only come from rounding.  As GPML's
``infEP`` does, site precisions are clipped at zero after each update
(``ttau = max(ttau, 0)``), which keeps B and every cavity proper; a site
whose cavity precision is not positive is left unchanged for that update.

The tilted moments are the likelihood's (``Likelihood.tilted_moments``,
``gpbayes.likelihoods``), R&W eq. 3.58 in the form of the derivatives of
log Z_i in the cavity mean (GPML): for the probit in closed form (GPML
``likErf``: with z = y mu_-i / sqrt(1 + s2_-i) and r = N(z)/Phi(z) in log
space, d log Z/d mu = y r / sqrt(1 + s2), d^2 log Z/d mu^2 =
-r (z + r)/(1 + s2)); for a likelihood without a closed form by the shared
Gauss-Hermite fallback (``gauss_hermite_tilted_moments``).  The new site is
(R&W eq. 3.59) tau~ = -d2 / (1 + d2/tau_-i), nu~ = (d1 - mu_-i d2)/(1 + d2/tau_-i).

Warm starts: ``sites_init=(nu~, tau~)`` from a nearby theta only changes the
starting point of the fixed-point iteration, not the fixed point; the result
depends on the start at the level of the stopping tolerance.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import blas

from .. import linalg
from ..likelihoods import Probit, probit_tilted_moments
from .gaussian import GaussianApproximation, _marginal_and_grad, _not_converged

__all__ = ["ep_approximation", "ep_log_marginal_and_grad", "probit_tilted_moments"]


def _site_update(tilted, y, tau_c, nu_c):
    """New site parameters from cavities (R&W eqs. 3.58-3.59); also log Z_i.

    ``tilted`` is the likelihood's ``tilted_moments``.
    """
    mu_c = nu_c / tau_c
    lZ, d1, d2 = tilted(y, mu_c, 1.0 / tau_c)
    denom = 1.0 + d2 / tau_c
    tau_new = -d2 / denom
    nu_new = (d1 - mu_c * d2) / denom
    return lZ, tau_new, nu_new


#: np.sum of a 1-D array is np.add.reduce of it (the same pairwise sum); called directly in the loops
_sum = np.add.reduce


def _log_Z_ep(L, lZ, tau, nu, tau_c, nu_c, nu_Sigma_nu):
    """log Z_EP (R&W eqs. 3.65, 3.73, 3.74; GPML infEP form with zero mean).

    ``L`` is the Cholesky factor of B at the sites ``(nu, tau)`` (None for
    all-zero sites, where B = I), and ``lZ``, ``tau_c``, ``nu_c`` must come
    from the cavities of the Sigma and mu those sites define.
    """
    logdet_B = 0.0 if L is None else linalg.logdet_from_cholesky(L)
    # np.add.reduce is what np.sum calls for a 1-D array (the same sums), without its Python wrapper
    tt = tau + tau_c
    return float(
        -0.5 * logdet_B
        + _sum(lZ)
        + 0.5 * nu_Sigma_nu
        + 0.5 * _sum(nu_c * (tau / tau_c * nu_c - 2.0 * nu) / tt)
        - 0.5 * _sum(nu * nu / tt)  # tau_c + tau = tau + tau_c exactly (IEEE addition commutes)
        + 0.5 * _sum(np.log1p(tau / tau_c))
    )


def _cavities(s2, mu, tau, nu):
    """Cavity natural parameters (R&W eq. 3.56) and the mask of proper cavities (None: all proper)."""
    tau_c = 1.0 / s2 - tau
    nu_c = mu / s2 - nu
    ok = tau_c > 0
    if ok.all():
        return tau_c, nu_c, None
    # cannot happen in exact arithmetic with tau~ >= 0
    return np.where(ok, tau_c, 1.0), nu_c, ok


#: below this value of tau~_i Sigma_ii = 1 - (B^-1)_ii, Sigma_ii is computed directly
_CANCELLATION = 1e-3


class _Posterior:
    """Sigma, mu from sites via B = I + S^1/2 K S^1/2 (R&W eq. 3.68)."""

    def __init__(self, K: np.ndarray):
        self.K = K
        self.n = K.shape[0]
        self.diagK = np.diag(K).copy()
        # two scratch buffers used in turn: B is factorised in place (``linalg.cholesky_in_place``)
        # and the previous factor stays intact while the next B is built
        self._buffers = (np.empty((self.n, self.n), order="F"), np.empty((self.n, self.n), order="F"))
        self._next = 0
        # scratch for L^-1 (``diag_sigma``), made on first use
        self._inverse = None
        # n >= 256: the factors' strict upper triangles are left stale (``linalg.cholesky_in_place``
        # with ``zero_upper=False``; only the lower triangle is read by dpotrs and by ``diag_sigma``),
        # and the factor returned is zeroed at the end (``finish``)
        self._stale_upper = self.n >= 256

    def factor(self, tau):
        sw = np.sqrt(tau)
        B = self._buffers[self._next]
        self._next ^= 1
        # R&W eq. 3.67/3.68: L = cholesky(I + S~^1/2 K S~^1/2)
        # only the lower triangle, which dpotrf reads (same arithmetic per entry as ``_build``)
        L = linalg.cholesky_in_place(linalg.build_B_lower(self.K, sw, B), zero_upper=not self._stale_upper)
        if L is None:  # not positive definite in floating point: rebuild (whole), retry with jitter
            L = linalg.cholesky(linalg.build_B(self.K, sw, B), name="B = I + S~^1/2 K S~^1/2")
        return sw, L

    def mean(self, L, sw, nu):
        # mu = Sigma nu~ = K nu~ - K S^1/2 B^-1 S^1/2 K nu~; also alpha = K^-1 mu
        Knu = self.K @ nu
        alpha = nu - sw * linalg.cho_solve(L, sw * Knu)
        return self.K @ alpha, alpha

    def V(self, L, sw):
        # V = L \ S~^1/2 K (R&W Alg. 3.5 line 13)
        return linalg.solve_triangular(L, sw[:, None] * self.K, lower=True)

    def diag_sigma(self, L, sw):
        """diag(Sigma) with one triangular inverse (see the module docstring).

        S~^1/2 Sigma S~^1/2 = I - B^-1, so Sigma_ii = (1 - (B^-1)_ii) / tau~_i
        with (B^-1)_ii = sum_j (L^-1)_ji^2; where tau~_i Sigma_ii < 1e-3 (zero
        or tiny sites) R&W's Sigma_ii = K_ii - |L^-1 S~^1/2 k_i|^2 is used.
        """
        if self.n <= linalg.TRTRI_DIRECT:  # dtrtri: as before, to the bit
            Li = linalg.triangular_inverse(L)
            t = 1.0 - np.einsum("ij,ij->j", Li, Li)  # tau~_i Sigma_ii
        else:
            if self._inverse is None:
                self._inverse = np.empty((self.n, self.n), order="F")
            Li = linalg.triangular_inverse(L, out=self._inverse)
            # squared column norms of the lower triangle only, column block by column block (the strict
            # upper triangle of Li is L's, stale for n >= 256; the diagonal blocks' parts are zeroed)
            t = linalg.lower_column_sums_of_squares(Li, np.empty(self.n))
            np.subtract(1.0, t, out=t)  # tau~_i Sigma_ii
        tau = sw * sw
        good = t >= _CANCELLATION
        if good.all():  # the usual case: every Sigma_ii from the inverse (the same quotients)
            return t / tau
        s2 = np.empty(self.n)
        s2[good] = t[good] / tau[good]
        bad = ~good
        if bad.any():
            V = linalg.matmul(np.tril(Li), sw[:, None] * self.K[:, bad])
            s2[bad] = self.diagK[bad] - np.einsum("ij,ij->j", V, V)
        return s2

    def finish(self, L):
        """The factor to return: its strict upper triangle zeroed if it was left stale."""
        if self._stale_upper and L is not None and any(np.shares_memory(L, b) for b in self._buffers):
            linalg.zero_strict_upper(L)
        return L

    def sigma(self, L, sw):
        # Sigma = K - V^T V (R&W Alg. 3.5 line 14), Fortran order for BLAS updates
        V = self.V(L, sw)
        return np.asfortranarray(self.K - linalg.matmul(V.T, V))


#: a period-2 cycle: three alternating changes of log Z_EP, each at least this fraction of the one two updates before
_CYCLE_RATIO = 0.9
#: the damping is halved at each detected cycle, down to this value
_MIN_DAMPING = 1.0 / 64.0


def _cycling(deltas) -> bool:
    """Do the signed changes of log Z_EP (oldest first) end in a period-2 cycle (see the module docstring)?"""
    if len(deltas) < 4:
        return False
    d0, d1, d2, d3 = deltas[-4:]
    alternating = d3 * d2 < 0.0 and d2 * d1 < 0.0 and d1 * d0 < 0.0
    return alternating and abs(d3) >= _CYCLE_RATIO * abs(d1) and abs(d2) >= _CYCLE_RATIO * abs(d0)


#: relative rounding level of log Z_EP (a sum of n terms): changes below it are noise
_ROUNDING = 64 * np.finfo(float).eps


class _Stopping:
    """The two stopping rules of the module docstring, fed one consistent state at a time."""

    def __init__(self, stopping, tol, site_tol, n):
        self.stopping, self.tol, self.site_tol, self.n = stopping, tol, site_tol, n
        self.log_Z = None
        self.delta = None
        self.site_change = None
        self.mu_change = None

    def updated(self, site_change, mu_change):
        """Record what the last update changed (max |Delta site|, ||Delta mu||^2)."""
        self.site_change, self.mu_change = site_change, mu_change

    def done(self, log_Z) -> bool:
        """Is the consistent state with this log Z_EP converged?"""
        prev, self.log_Z = self.log_Z, log_Z
        if self.mu_change is None:  # no update made yet
            return False
        if self.stopping == "fg2014":
            # F&G Sec. 4: ||mu_new - mu_old||^2 < n / 10^4 (with tol = 1e-4)
            return self.mu_change < self.tol * self.n
        delta = abs(log_Z - prev)
        prev_delta, self.delta = self.delta, delta
        # changes below the rounding of log Z_EP itself cannot be resolved: a tolerance tighter than
        # that (EP-ML asks for 1e-12) is met once the change is at rounding level
        resolution = _ROUNDING * max(1.0, abs(log_Z))
        tol = max(self.tol, resolution)
        if not (delta < tol and self.site_change < self.site_tol):
            return False
        if prev_delta is None or prev_delta == 0.0 or delta <= resolution:
            return True
        rho = min(delta / prev_delta, 0.99)
        return delta * rho / (1.0 - rho) < tol


def ep_approximation(
    K: np.ndarray,
    y: np.ndarray,
    likelihood=Probit(),
    sites_init: tuple[np.ndarray, np.ndarray] | None = None,
    mode: str = "parallel",
    damping: float | None = None,
    tol: float = 1e-4,
    max_iter: int = 200,
    *,
    K_chol: np.ndarray | None = None,
    stopping: str = "logz",
    site_tol: float | None = None,
    targets_checked: bool = False,
) -> GaussianApproximation:
    """EP approximation N(mu, (K^-1 + S~)^-1) and log Z_EP (R&W Alg. 3.5; probit by default).

    Parameters
    ----------
    K : prior covariance (n, n).
    y : targets (labels in {-1, +1} for the probit), checked by ``likelihood.check_targets``.
    likelihood : a ``gpbayes.likelihoods.Likelihood`` that lists ``"ep"`` in
        its ``approximations`` (the probit; not the logistic); its
        ``tilted_moments`` give the site updates (closed form for the probit,
        Gauss-Hermite quadrature for a likelihood without one).
    sites_init : ``(nu_tilde, tau_tilde)`` to warm-start from (e.g. the
        previous theta's ``(approx.nu, approx.w)``); default all zero.
    mode : ``"parallel"`` or ``"sequential"`` (see the module docstring).
    damping : step on the natural site parameters, new = (1 - d) old + d
        update, d in (0, 1]; default 1 (sequential) and 0.8 (parallel).
    tol : ``stopping="logz"``: bound on the change of log Z_EP between
        consecutive consistent states and on its extrapolated remaining
        change; ``stopping="fg2014"``: stop when ||mu_new - mu_old||^2 < tol * n
        (F&G: n / 10^4).  Default 1e-4 for both.
    max_iter : at most this many sweeps / parallel updates.
    K_chol : Cholesky factor of K, stored for the importance sampler only.
    stopping : ``"logz"`` (default) or ``"fg2014"`` (F&G Sec. 4; used by the
        reproduction of their Tables I-III only); see the module docstring.
    site_tol : ``"logz"`` only: the last update must have moved every nu~_i
        and tau~_i by less than this; default sqrt(tol) (1e-2 at the default
        tol), since log Z_EP is stationary in the sites and its error is of
        second order in theirs.
    targets_checked : ``y`` is already the output of ``likelihood.check_targets``
        (e.g. from ``PseudoMarginalTarget``); skips the check.

    Returns
    -------
    GaussianApproximation with ``method="ep-<mode>"``, ``m = mu``,
    ``w = tau_tilde``, ``nu = nu_tilde``, ``n_iter`` sweeps/updates,
    ``log_marginal`` = log Z_EP of the returned sites (consistent cavities)
    and the counted ``n_cubic`` (parallel: k Choleskys + k triangular
    inverses cold, + 1 of each warm; sequential: 3 per sweep, + 3 warm).
    """
    if "ep" not in likelihood.approximations:
        raise NotImplementedError(
            f"EP is not offered for the {likelihood.name} likelihood (its approximations: "
            f"{list(likelihood.approximations)}); a likelihood lists 'ep' in ``approximations`` to have it"
        )
    if mode not in ("parallel", "sequential"):
        raise ValueError(f"mode must be 'parallel' or 'sequential', got {mode!r}")
    if stopping not in ("logz", "fg2014"):
        raise ValueError(f"stopping must be 'logz' or 'fg2014', got {stopping!r}")
    if damping is None:
        damping = 0.8 if mode == "parallel" else 1.0
    if not 0.0 < damping <= 1.0:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if site_tol is None:
        site_tol = math.sqrt(tol)
    if not (tol > 0 and site_tol > 0):
        raise ValueError(f"tol and site_tol must be positive, got {tol}, {site_tol}")
    K = np.asfortranarray(np.asarray(K, dtype=np.float64))
    if not targets_checked:
        y = likelihood.check_targets(y)
    n = y.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K has shape {K.shape} but there are {n} targets")

    post = _Posterior(K)
    rule = _Stopping(stopping, tol, site_tol, n)
    with linalg.count_ops() as ops:
        if sites_init is None:
            nu = np.zeros(n)
            tau = np.zeros(n)
            warm = False
        else:
            nu = np.array(sites_init[0], dtype=np.float64)
            tau = np.maximum(np.array(sites_init[1], dtype=np.float64), 0.0)
            if nu.shape != (n,) or tau.shape != (n,):
                raise ValueError(f"sites_init must be two arrays of shape ({n},)")
            warm = bool(np.any(tau > 0) or np.any(nu != 0))
        run = _parallel if mode == "parallel" else _sequential
        # overflow in the tilted moments or the sites is caught as a non-finite state (``_finite``) and
        # reported through ``converged``, not printed once per call
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            result = run(post, likelihood.tilted_moments, y, nu, tau, warm, damping, rule, max_iter)
            restarted = warm and not (result[7] and math.isfinite(result[5]))
            if restarted:
                # the warm start led astray (sites of a distant theta -- a far leapfrog point -- can
                # make every later state NaN, or keep the iteration from converging); the fixed point
                # does not depend on the start, so start again from zero sites, as Laplace's Newton
                # iteration discards a bad f_init (``laplace_approximation``)
                n_first = result[6]
                result = run(post, likelihood.tilted_moments, y, np.zeros(n), np.zeros(n), False, damping,
                             _Stopping(stopping, tol, site_tol, n), max_iter)
                result = result[:6] + (n_first + result[6],) + result[7:]
    mu, alpha, L, nu, tau, log_Z, n_iter, converged, damping_used = result
    L = post.finish(L)
    if not converged:
        diverged = not _finite(mu, tau)
        _not_converged(
            f"EP ({mode}) {'diverged (non-finite sites)' if diverged else f'stopped at max_iter = {max_iter} updates'}"
            f" without meeting its tolerance {tol:g} (stopping={stopping!r})"
            + (" after a cold restart from a failed warm start" if restarted else "")
        )
    if L is None:  # cannot happen: every path makes at least one update
        raise AssertionError("EP returned without factorising B")
    return GaussianApproximation(
        method=f"ep-{mode}",
        m=mu,
        w=tau,
        B_chol=L,
        K=K,
        alpha=alpha,
        log_marginal=log_Z,
        n_cubic=ops.cubic,
        n_iter=n_iter,
        converged=converged,
        nu=nu,
        K_chol=K_chol,
        damping=damping_used,
        restarted=restarted,
    )


def _parallel(post: _Posterior, tilted, y, nu, tau, warm, damping, rule: _Stopping, max_iter):
    n = post.n
    if warm:
        sw, L = post.factor(tau)
        mu, alpha = post.mean(L, sw, nu)
        s2 = post.diag_sigma(L, sw)
    else:
        # zero sites: Sigma = K, mu = 0, B = I, nothing to factorise
        L, alpha = None, np.zeros(n)
        mu = np.zeros(n)
        s2 = post.diagK.copy()
    converged = False
    n_iter = 0
    deltas: list[float] = []  # signed changes of log Z_EP since the damping was last set
    prev_log_Z = None
    while True:
        # a consistent state: cavities from the marginals of the current sites (R&W eq. 3.56) ...
        tau_c, nu_c, ok = _cavities(s2, mu, tau, nu)
        # ... their tilted moments (R&W eq. 3.58) and undamped site updates (eq. 3.59) ...
        lZ, tau_new, nu_new = _site_update(tilted, y, tau_c, nu_c)
        # ... and log Z_EP of the current sites (R&W eqs. 3.65, 3.73-3.74)
        log_Z = _log_Z_ep(L, lZ, tau, nu, tau_c, nu_c, float(nu @ mu))
        if rule.done(log_Z):
            converged = True
            break
        if n_iter >= max_iter or (n_iter > 0 and not _finite(mu, s2)):
            # the limit, or a state no update can recover from (every later one would be NaN)
            break
        if prev_log_Z is not None:
            deltas.append(log_Z - prev_log_Z)
            if _cycling(deltas) and damping > _MIN_DAMPING:
                # a period-2 cycle, not convergence: halve the damping (module docstring)
                damping = max(0.5 * damping, _MIN_DAMPING)
                deltas = []
        prev_log_Z = log_Z
        n_iter += 1
        # damped update of all sites (R&W eq. 3.59), sites with improper cavities kept
        tau_new = (1.0 - damping) * tau + damping * tau_new
        nu_new = (1.0 - damping) * nu + damping * nu_new
        if ok is not None:  # some improper cavity (rounding): keep those sites
            tau_new = np.where(ok, tau_new, tau)
            nu_new = np.where(ok, nu_new, nu)
        tau_new = np.maximum(tau_new, 0.0)  # as GPML infEP: no negative site precisions
        site_change = float(max(np.abs(tau_new - tau).max(), np.abs(nu_new - nu).max()))
        tau, nu = tau_new, nu_new
        # recompute the posterior from all sites with one Cholesky (R&W eq. 3.68)
        sw, L = post.factor(tau)
        mu_new, alpha = post.mean(L, sw, nu)
        rule.updated(site_change, float(_sum((mu_new - mu) ** 2)))
        mu = mu_new
        s2 = post.diag_sigma(L, sw)
    return mu, alpha, L, nu, tau, log_Z, n_iter, converged, damping


def _finite(mu, s2) -> bool:
    """Are the posterior means and variances all finite?  Once one is not, every later cavity, site
    and log Z_EP is NaN: the iteration has diverged and further updates are wasted."""
    return bool(np.isfinite(mu).all() and np.isfinite(s2).all())


def _consistent_log_Z(tilted, y, L, Sigma_diag, mu, tau, nu):
    tau_c, nu_c, _ = _cavities(Sigma_diag, mu, tau, nu)
    lZ, _, _ = tilted(y, nu_c / tau_c, 1.0 / tau_c)
    return _log_Z_ep(L, lZ, tau, nu, tau_c, nu_c, float(nu @ mu))


def _sequential(post: _Posterior, tilted, y, nu, tau, warm, damping, rule: _Stopping, max_iter):
    n = post.n
    if warm:
        sw, L = post.factor(tau)
        Sigma = post.sigma(L, sw)
        mu, alpha = post.mean(L, sw, nu)
    else:
        L, alpha = None, np.zeros(n)
        Sigma = np.array(post.K, order="F", copy=True)  # R&W Alg. 3.5 line 2
        mu = np.zeros(n)
    # log Z_EP of the starting sites (consistent: Sigma and mu are theirs)
    log_Z = _consistent_log_Z(tilted, y, L, np.diag(Sigma).copy(), mu, tau, nu)
    rule.done(log_Z)
    s = np.empty(n)
    converged = False
    n_iter = 0
    while n_iter < max_iter:  # R&W Alg. 3.5 line 3: repeat
        n_iter += 1
        mu_old, tau_old, nu_old = mu.copy(), tau.copy(), nu.copy()
        for i in range(n):  # line 4: for i := 1 to n
            s_ii = Sigma[i, i]
            # line 5: cavity parameters (R&W eq. 3.56)
            tau_ci = 1.0 / s_ii - tau[i]
            nu_ci = mu[i] / s_ii - nu[i]
            if not tau_ci > 0:
                continue
            # line 6: marginal moments (R&W eq. 3.58); line 7-8: site update (3.59)
            _, tn, nn = _site_update(tilted, y[i], tau_ci, nu_ci)
            tn = max((1.0 - damping) * tau[i] + damping * float(tn), 0.0)
            nn = (1.0 - damping) * nu[i] + damping * float(nn)
            dtt, dtn = tn - tau[i], nn - nu[i]
            tau[i], nu[i] = tn, nn
            if dtt == 0.0 and dtn == 0.0:
                continue
            # line 9: Sigma := Sigma - ((dtau)^-1 + Sigma_ii)^-1 s_i s_i^T (R&W eq. 3.70);
            # Sigma is kept in its lower triangle, so s_i = column i of the symmetric matrix
            s[:i] = Sigma[i, :i]
            s[i:] = Sigma[i:, i]
            c = dtt / (1.0 + dtt * s_ii)
            if c != 0.0:
                Sigma = blas.dsyr(-c, s, lower=1, a=Sigma, overwrite_a=1)
            # line 10: mu := Sigma nu~, as an O(n) update (GPML infEP)
            mu -= (c * (mu[i] + s_ii * dtn) - dtn) * s
        # lines 12-14: recompute Sigma and mu from the sites after each sweep
        sw, L = post.factor(tau)
        Sigma = post.sigma(L, sw)
        mu, alpha = post.mean(L, sw, nu)
        site_change = float(max(np.max(np.abs(tau - tau_old)), np.max(np.abs(nu - nu_old))))
        rule.updated(site_change, float(np.sum((mu - mu_old) ** 2)))
        # log Z_EP with cavities from the recomputed Sigma (GPML epComputeParams)
        log_Z = _consistent_log_Z(tilted, y, L, np.diag(Sigma).copy(), mu, tau, nu)
        # line 15: until convergence (module docstring, "Stopping rules")
        if rule.done(log_Z):
            converged = True
            break
        if not _finite(mu, np.diag(Sigma)):  # no later sweep can recover (every later state would be NaN)
            break
    return mu, alpha, L, nu, tau, log_Z, n_iter, converged, damping


def ep_log_marginal_and_grad(
    kernel,
    psi,
    X: np.ndarray,
    y: np.ndarray,
    likelihood=Probit(),
    sites_init: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    tol: float = 1e-6,
    max_iter: int = 200,
    targets_checked: bool = False,
) -> tuple[float, np.ndarray, GaussianApproximation]:
    """log Z_EP(psi) (R&W eqs. 3.65, 3.73-3.74) and its gradient in psi (R&W eq. 5.27).

    At the EP fixed point log Z_EP is stationary in the site parameters, so its derivative in
    psi_j is the explicit one (R&W Alg. 5.2):

        d log Z_EP / d psi_j = 1/2 tr((b b^T - S~^1/2 B^-1 S~^1/2) C_j),   b = K^-1 mu,

    with C_j = dK/dpsi_j; all p traces come from ``kernel.gradient_traces`` (one elementwise
    product and one GEMM against the inputs).  The identity holds at the fixed point only, hence a
    tighter ``tol`` than :func:`ep_approximation`'s default; a gradient a little off the fixed point
    still gives a valid HMC/NUTS chain on log Z_EP's values (the leapfrog map stays reversible and
    volume preserving), only a less efficient one.  ``gpbayes.classification.ep_log_marginal_and_grad``
    is the per-matrix form the reproduction's EP type-II ML uses (same quantity, other rounding).

    Cost: the EP run (warm-started from ``sites_init``, e.g. the previous psi's ``(q.nu, q.w)``)
    plus one inverse B^-1 from its Cholesky factor.
    """
    def fit(K, y):
        return ep_approximation(K, y, likelihood, sites_init=sites_init, tol=tol, max_iter=max_iter,
                                targets_checked=True)

    def trace_matrix(q, K, y):
        # b b^T - S~^1/2 B^-1 S~^1/2 (R&W Alg. 5.2), B^-1 from its factor, in place
        sw = q.sqrt_w
        M = linalg.cho_inverse(q.B_chol)
        M *= -sw[:, None]
        M *= sw[None, :]
        M += np.outer(q.alpha, q.alpha)
        return np.asfortranarray(M)

    return _marginal_and_grad(kernel, psi, X, y, likelihood, fit, trace_matrix, targets_checked)
