"""Expectation propagation for GP probit classification.

Rasmussen & Williams (2006), Sec. 3.6 and Algorithm 3.5; Filippone &
Girolami (2014), Sec. 2.1.2, eqs. 14-18.  Each likelihood term Phi(y_i f_i)
is replaced by an unnormalised Gaussian site with natural parameters
(nu_tilde_i, tau_tilde_i); the approximation is

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
    factorised once; mu = Sigma nu~ follows with O(n^2) work, and
    diag(Sigma) = diag(K) - colsum(V * V), V = L^-1 S~^1/2 K, with one
    triangular solve.  The triangular solve is skipped after the last
    update (the stopping test only needs mu).  Counted cost:
    cold start, k updates: k Choleskys + (k - 1) triangular solves;
    warm start: one more of each, to get diag(Sigma) at the new theta.

Stopping rule (Filippone & Girolami 2014, Sec. 4: "in both LA and EP we
imposed a convergence criterion on the change in squared norm of f being
less than n/10^4"): we stop when ||mu_new - mu_old||^2 < tol * n with
tol = 1e-4 by default, i.e. the squared norm of the change of the posterior
mean between two sweeps (sequential) or two parallel updates.  ``max_iter``
bounds the number of sweeps/updates (``converged`` is then False).

Negative site precisions.  For the probit likelihood (log-concave) the exact
site update gives tau~_i >= 0 (it equals rho / (1 + sigma_-i^2 (1 - rho))
with rho in (0, 1)); negative values can only come from rounding.  As GPML's
``infEP`` does, site precisions are clipped at zero after each update
(``ttau = max(ttau, 0)``), which keeps B and every cavity proper; a site
whose cavity precision is not positive is left unchanged for that update.

The tilted moments use R&W eq. 3.58 in the form of their derivatives
(GPML ``likErf``): with z = y mu_-i / sqrt(1 + s2_-i) and r = N(z)/Phi(z)
(in log space), d log Z/d mu = y r / sqrt(1 + s2), d^2 log Z/d mu^2 =
-r (z + r)/(1 + s2); the new site is (R&W eq. 3.59)
tau~ = -d2 / (1 + d2/tau_-i), nu~ = (d1 - mu_-i d2)/(1 + d2/tau_-i).

log Z_EP is R&W eq. 3.65 with eqs. 3.73-3.74, in the form of GPML ``infEP``
that stays finite at tau~_i = 0.  For the sequential schedule the cavities
in it come from the final, recomputed Sigma.  For the parallel schedule they
are those used for the last update (which coincide with the final Sigma's
at the fixed point; the difference is of the order of the stopping
tolerance), so that no extra triangular solve is needed.

Warm starts: ``sites_init=(nu~, tau~)`` from a nearby theta only changes the
starting point of the fixed-point iteration, not the fixed point; with the
default loose tolerance the result still depends on the start at the level
of that tolerance.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import blas
from scipy.special import log_ndtr

from .. import linalg
from ..likelihoods import Probit
from . import GaussianApproximation, _not_converged

__all__ = ["ep_approximation", "probit_tilted_moments"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def probit_tilted_moments(y, mu_c, s2_c):
    """log Z_i, d log Z_i / d mu_c, d^2 log Z_i / d mu_c^2 for Phi(y f) N(f | mu_c, s2_c)."""
    scale = np.sqrt(1.0 + s2_c)
    z = y * mu_c / scale
    lZ = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - lZ)  # N(z) / Phi(z)
    d1 = y * r / scale
    d2 = -r * (z + r) / (1.0 + s2_c)
    return lZ, d1, d2


def _site_update(y, tau_c, nu_c):
    """New site parameters from cavities (R&W eqs. 3.58-3.59); also log Z_i."""
    mu_c = nu_c / tau_c
    lZ, d1, d2 = probit_tilted_moments(y, mu_c, 1.0 / tau_c)
    denom = 1.0 + d2 / tau_c
    tau_new = -d2 / denom
    nu_new = (d1 - mu_c * d2) / denom
    return lZ, tau_new, nu_new


def _log_Z_ep(L, lZ, tau, nu, tau_c, nu_c, nu_Sigma_nu):
    """log Z_EP (R&W eqs. 3.65, 3.73, 3.74; GPML infEP form with zero mean)."""
    return float(
        -0.5 * linalg.logdet_from_cholesky(L)
        + np.sum(lZ)
        + 0.5 * nu_Sigma_nu
        + 0.5 * np.sum(nu_c * (tau / tau_c * nu_c - 2.0 * nu) / (tau + tau_c))
        - 0.5 * np.sum(nu * nu / (tau_c + tau))
        + 0.5 * np.sum(np.log1p(tau / tau_c))
    )


class _Posterior:
    """Sigma, mu from sites via B = I + S^1/2 K S^1/2 (R&W eq. 3.68)."""

    def __init__(self, K: np.ndarray):
        self.K = K
        self.n = K.shape[0]
        self.diagK = np.diag(K).copy()
        self._B = np.empty((self.n, self.n), order="F")

    def factor(self, tau):
        sw = np.sqrt(tau)
        B = self._B
        np.multiply(self.K, sw[None, :], out=B)
        B *= sw[:, None]
        B.flat[:: self.n + 1] += 1.0
        # R&W eq. 3.67/3.68: L = cholesky(I + S~^1/2 K S~^1/2)
        return sw, linalg.cholesky(B, name="B = I + S~^1/2 K S~^1/2")

    def mean(self, L, sw, nu):
        # mu = Sigma nu~ = K nu~ - K S^1/2 B^-1 S^1/2 K nu~; also alpha = K^-1 mu
        Knu = self.K @ nu
        alpha = nu - sw * linalg.cho_solve(L, sw * Knu)
        return self.K @ alpha, alpha

    def V(self, L, sw):
        # V = L \ S~^1/2 K (R&W Alg. 3.5 line 13)
        return linalg.solve_triangular(L, sw[:, None] * self.K, lower=True)

    def diag_sigma(self, L, sw):
        V = self.V(L, sw)
        return self.diagK - np.einsum("ij,ij->j", V, V)

    def sigma(self, L, sw):
        # Sigma = K - V^T V (R&W Alg. 3.5 line 14), Fortran order for BLAS updates
        V = self.V(L, sw)
        return np.asfortranarray(self.K - linalg.matmul(V.T, V))


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
) -> GaussianApproximation:
    """EP approximation N(mu, (K^-1 + S~)^-1) and log Z_EP for a probit likelihood.

    Parameters
    ----------
    K : prior covariance (n, n).
    y : labels in {-1, +1}.
    likelihood : must be ``Probit`` (the tilted moments are the probit ones).
    sites_init : ``(nu_tilde, tau_tilde)`` to warm-start from (e.g. the
        previous theta's ``(approx.nu, approx.w)``); default all zero.
    mode : ``"parallel"`` or ``"sequential"`` (see the module docstring).
    damping : step on the natural site parameters, new = (1 - d) old + d
        update, d in (0, 1]; default 1 (sequential) and 0.8 (parallel).
    tol : stop when ||mu_new - mu_old||^2 < tol * n (F&G: n / 10^4).
    max_iter : at most this many sweeps / parallel updates.
    K_chol : Cholesky factor of K, stored for the importance sampler only.

    Returns
    -------
    GaussianApproximation with ``method="ep-<mode>"``, ``m = mu``,
    ``w = tau_tilde``, ``nu = nu_tilde``, ``n_iter`` sweeps/updates and the
    counted ``n_cubic`` (parallel: k Choleskys + (k - 1) triangular solves
    cold, + 1 of each warm; sequential: 3 per sweep, + 3 warm).
    """
    if not isinstance(likelihood, Probit):
        raise NotImplementedError(
            f"EP is implemented for the probit likelihood only, got {type(likelihood).__name__}"
        )
    if mode not in ("parallel", "sequential"):
        raise ValueError(f"mode must be 'parallel' or 'sequential', got {mode!r}")
    if damping is None:
        damping = 0.8 if mode == "parallel" else 1.0
    if not 0.0 < damping <= 1.0:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    K = np.asfortranarray(np.asarray(K, dtype=np.float64))
    y = likelihood.check_targets(y)
    n = y.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K has shape {K.shape} but there are {n} targets")

    post = _Posterior(K)
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
        if mode == "parallel":
            result = _parallel(post, y, nu, tau, warm, damping, tol, max_iter)
        else:
            result = _sequential(post, y, nu, tau, warm, damping, tol, max_iter)
    mu, alpha, L, nu, tau, log_Z, n_iter, converged = result
    if not converged:
        _not_converged(f"EP ({mode}) stopped at max_iter = {max_iter} updates without meeting its tolerance {tol:g}")
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
    )


def _parallel(post: _Posterior, y, nu, tau, warm, damping, tol, max_iter):
    n = post.n
    if warm:
        sw, L = post.factor(tau)
        mu, alpha = post.mean(L, sw, nu)
        s2 = post.diag_sigma(L, sw)
    else:
        # zero sites: Sigma = K, mu = 0, nothing to factorise
        mu = np.zeros(n)
        s2 = post.diagK.copy()
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        # cavities from the current marginals (R&W eq. 3.56), all at once
        tau_c = 1.0 / s2 - tau
        nu_c = mu / s2 - nu
        ok = tau_c > 0
        if not np.all(ok):  # cannot happen in exact arithmetic with tau~ >= 0
            tau_c = np.where(ok, tau_c, 1.0)
        lZ, tau_new, nu_new = _site_update(y, tau_c, nu_c)
        # damped site update (R&W eq. 3.59), sites with improper cavities kept
        tau_new = np.where(ok, (1.0 - damping) * tau + damping * tau_new, tau)
        nu = np.where(ok, (1.0 - damping) * nu + damping * nu_new, nu)
        tau = np.maximum(tau_new, 0.0)  # as GPML infEP: no negative site precisions
        # recompute the posterior from all sites with one Cholesky (R&W eq. 3.68)
        sw, L = post.factor(tau)
        mu_new, alpha = post.mean(L, sw, nu)
        change = float(np.sum((mu_new - mu) ** 2))
        mu = mu_new
        if change < tol * n:
            converged = True
            break
        s2 = post.diag_sigma(L, sw)
    nu_Sigma_nu = float(nu @ mu)
    log_Z = _log_Z_ep(L, lZ, tau, nu, tau_c, nu_c, nu_Sigma_nu)
    return mu, alpha, L, nu, tau, log_Z, n_iter, converged


def _sequential(post: _Posterior, y, nu, tau, warm, damping, tol, max_iter):
    n = post.n
    if warm:
        sw, L = post.factor(tau)
        Sigma = post.sigma(L, sw)
        mu, _ = post.mean(L, sw, nu)
    else:
        Sigma = np.array(post.K, order="F", copy=True)  # R&W Alg. 3.5 line 2
        mu = np.zeros(n)
    s = np.empty(n)
    converged = False
    n_iter = 0
    while n_iter < max_iter:  # R&W Alg. 3.5 line 3: repeat
        n_iter += 1
        mu_old = mu.copy()
        for i in range(n):  # line 4: for i := 1 to n
            s_ii = Sigma[i, i]
            # line 5: cavity parameters (R&W eq. 3.56)
            tau_ci = 1.0 / s_ii - tau[i]
            nu_ci = mu[i] / s_ii - nu[i]
            if not tau_ci > 0:
                continue
            # line 6: marginal moments (R&W eq. 3.58); line 7-8: site update (3.59)
            _, tn, nn = _site_update(y[i], tau_ci, nu_ci)
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
        # line 15: until convergence (F&G: change in squared norm of mu < n/10^4)
        if float(np.sum((mu - mu_old) ** 2)) < tol * n:
            converged = True
            break
    # log Z_EP with cavities from the final Sigma (GPML epComputeParams)
    s2 = np.diag(Sigma).copy()
    tau_c = 1.0 / s2 - tau
    nu_c = mu / s2 - nu
    lZ, _, _ = probit_tilted_moments(y, nu_c / tau_c, 1.0 / tau_c)
    log_Z = _log_Z_ep(L, lZ, tau, nu, tau_c, nu_c, float(nu @ mu))
    return mu, alpha, L, nu, tau, log_Z, n_iter, converged
