"""Psi-statistics of the SE-ARD kernel under a Gaussian q(Z) (Titsias & Lawrence 2010).

Squared-exponential only, by their mathematics (the Gaussian integrals below
have closed forms for the SE kernel): the functions take the SE amplitude and
precisions, not a kernel object, and ``gplvm.SupervisedGPLVM`` builds its SE
kernels itself, so no other kernel can reach them.

Kernel (Gadd et al., Sec. 6.1, k_f):  k(z, z') = a exp(-1/2 sum_j w_j (z_j - z'_j)^2),
with amplitude a = theta_S and precisions w_j = theta_j.  For inducing inputs
u_1..u_M (rows of ``inducing``) the statistics of Gadd et al. Sec. 3 are

    psi0 = <tr K_ff>_q,   Psi1 = <K_fu>_q  (N x M),   Psi2 = <K_uf K_fu>_q  (M x M).

Why only the marginals q(z_n) matter
------------------------------------
In Gadd et al. q(Z) = prod_j N(z_:,j | mu_j, S_j) with a *full* N x N S_j
(correlations between data points n, n' within a latent dimension j).  But
each statistic is a sum of expectations that involve one data point at a
time:

    psi0 = sum_n <k(z_n, z_n)>,   Psi1[n, m] = <k(z_n, u_m)>,
    Psi2 = sum_n <k(u_m, z_n) k(z_n, u_m')>,

so only the marginal of one row z_n enters.  Because q factorises over j,
that marginal is q(z_n) = N(mu_n, diag_j(s_nj)) with s_nj = S_j[n, n]
(mean: row n of [mu_1 ... mu_kz]; covariance diagonal across j because the
columns are independent under q).  The off-diagonal entries of S_j enter the
bound only through KL(q(Z) || p(Z | X)) (``gpbayes.gplvm.vb``).

Closed forms (Titsias & Lawrence 2010, eqs. 14-15; Gaussian integrals of
products of Gaussians), with s_nj the marginal variances:

    psi0 = N a
    Psi1[n, m] = a prod_j (1 + w_j s_nj)^-1/2
                   exp(-1/2 w_j (mu_nj - u_mj)^2 / (1 + w_j s_nj))
    Psi2[m, m'] = sum_n a^2 prod_j (1 + 2 w_j s_nj)^-1/2
                   exp(-1/4 w_j (u_mj - u_m'j)^2
                       - w_j (mu_nj - ubar_j)^2 / (1 + 2 w_j s_nj)),
    ubar = (u_m + u_m') / 2.

Derivation of Psi1: z ~ N(mu, s) (one dimension), E exp(-w (z - u)^2 / 2) =
N(mu; u, s + 1/w) / N(0; 0, 1/w) = (1 + w s)^-1/2 exp(-w (mu - u)^2 / (2 (1 + w s))).
Psi2: the product of the two kernels is
exp(-w (u - u')^2 / 4) exp(-w (z - ubar)^2) (completing the square), then the
same Gaussian integral with w replaced by 2 w.

Gradients (``psi_stats_vjp``): given the adjoints dF/dpsi0, dF/dPsi1 (N x M)
and dF/dPsi2 (M x M; symmetrised here), returns dF/d(mu, s, inducing,
log a, log w) by the chain rule through the logs of the products above:

    dlogPsi1/dmu_nj   = -w_j d / D1,  d = mu_nj - u_mj, D1 = 1 + w_j s_nj
    dlogPsi1/du_mj    = +w_j d / D1
    dlogPsi1/ds_nj    = -w_j / (2 D1) + w_j^2 d^2 / (2 D1^2)
    dlogPsi1/dlog w_j = -w_j (s_nj / D1 + d^2 / D1^2) / 2
    dlogPsi2n/dmu_nj  = -2 w_j e / D2,  e = mu_nj - ubar_j, D2 = 1 + 2 w_j s_nj
    dlogPsi2n/ds_nj   = -w_j / D2 + 2 w_j^2 e^2 / D2^2
    dlogPsi2n/dlog w_j = -w_j (s_nj / D2 + (u_mj - u_m'j)^2 / 4 + e^2 / D2^2)
    dlogPsi2n/du_mj (first index) = -w_j (u_mj - u_m'j) / 2 + w_j e / D2

(the derivative in u_m collects the first and second index, hence a factor 2
with a symmetric adjoint); d log Psi1 / d log a = 1, d log Psi2 / d log a = 2.

These are pure numpy functions with no factorisations; Psi2 builds an
(N, M, M, k_z) array, which is small for the problem sizes of the paper
(N <= 100, M <= N).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["PsiStats", "PsiGradients", "psi_stats", "psi_stats_vjp"]


class PsiStats(NamedTuple):
    """The Psi-statistics of the variational bound (Gadd et al. Sec. 3; Titsias & Lawrence 2010):
    psi0, psi1 (N x M) and psi2 (M x M, summed over the data).
    """

    psi0: float
    psi1: np.ndarray  # (N, M)
    psi2: np.ndarray  # (M, M), summed over the N data points


class PsiGradients(NamedTuple):
    """Gradients of a scalar of the Psi-statistics with respect to q's means and variances, the
    inducing inputs, the log amplitude and the log precisions.
    """

    mean: np.ndarray  # (N, k_z)  dF/dmu
    variance: np.ndarray  # (N, k_z)  dF/ds (marginal variances)
    inducing: np.ndarray  # (M, k_z)
    log_amplitude: float
    log_precisions: np.ndarray  # (k_z,)


def _check(amplitude, precisions, mean, variance, inducing):
    mean = np.asarray(mean, dtype=np.float64)
    variance = np.asarray(variance, dtype=np.float64)
    inducing = np.asarray(inducing, dtype=np.float64)
    precisions = np.asarray(precisions, dtype=np.float64)
    if mean.ndim != 2 or variance.shape != mean.shape:
        raise ValueError(f"mean and variance must both be (N, k_z); got {mean.shape}, {variance.shape}")
    if inducing.ndim != 2 or inducing.shape[1] != mean.shape[1]:
        raise ValueError(f"inducing must be (M, {mean.shape[1]}), got {inducing.shape}")
    if precisions.shape != (mean.shape[1],):
        raise ValueError(f"precisions must have length k_z = {mean.shape[1]}, got {precisions.shape}")
    if np.any(variance < 0):
        raise ValueError("marginal variances must be non-negative")
    if not amplitude > 0:
        raise ValueError(f"amplitude must be positive, got {amplitude}")
    return float(amplitude), precisions, mean, variance, inducing


def _psi1_terms(w, mean, variance, inducing):
    D1 = 1.0 + w * variance  # (N, kz)
    d = mean[:, None, :] - inducing[None, :, :]  # (N, M, kz)
    log_psi1 = -0.5 * np.sum(np.log(D1), axis=1)[:, None] - 0.5 * np.einsum(
        "nmj,nj->nm", d * d, w / D1
    )
    return D1, d, log_psi1


def _psi2_terms(w, mean, variance, inducing):
    D2 = 1.0 + 2.0 * w * variance  # (N, kz)
    delta = inducing[:, None, :] - inducing[None, :, :]  # (M, M, kz)
    ubar = 0.5 * (inducing[:, None, :] + inducing[None, :, :])  # (M, M, kz)
    e = mean[:, None, None, :] - ubar[None]  # (N, M, M, kz)
    log_psi2n = (
        -0.5 * np.sum(np.log(D2), axis=1)[:, None, None]
        - 0.25 * np.einsum("abj,j->ab", delta * delta, w)[None]
        - np.einsum("nabj,nj->nab", e * e, w / D2)
    )  # (N, M, M), without the a^2
    return D2, delta, e, log_psi2n


class _Terms(NamedTuple):
    D1: np.ndarray
    d: np.ndarray
    psi1_unit: np.ndarray  # Psi1 / a
    D2: np.ndarray
    delta: np.ndarray
    e: np.ndarray
    psi2n_unit: np.ndarray  # Psi2n / a^2, (N, M, M)


def _forward(amplitude, precisions, mean, variance, inducing):
    a, w, mean, variance, inducing = _check(amplitude, precisions, mean, variance, inducing)
    D1, d, log_psi1 = _psi1_terms(w, mean, variance, inducing)
    D2, delta, e, log_psi2n = _psi2_terms(w, mean, variance, inducing)
    terms = _Terms(D1, d, np.exp(log_psi1), D2, delta, e, np.exp(log_psi2n))
    psi2 = (a * a) * terms.psi2n_unit.sum(axis=0)
    stats = PsiStats(mean.shape[0] * a, a * terms.psi1_unit, 0.5 * (psi2 + psi2.T))
    return stats, terms, (a, w, mean, variance, inducing)


def psi_stats(amplitude, precisions, mean, variance, inducing) -> PsiStats:
    """psi0, Psi1, Psi2 for q(z_n) = N(mean[n], diag(variance[n])) (module docstring)."""
    return _forward(amplitude, precisions, mean, variance, inducing)[0]


def psi_stats_vjp(
    amplitude, precisions, mean, variance, inducing, d_psi0: float, d_psi1: np.ndarray, d_psi2: np.ndarray
) -> PsiGradients:
    """Gradients of F(psi0, Psi1, Psi2) given dF/dpsi0, dF/dPsi1, dF/dPsi2 (module docstring).

    ``d_psi2`` is symmetrised first, i.e. F is taken as a function of the
    symmetric matrix Psi2 with dF = tr(d_psi2^T dPsi2).
    """
    _, terms, args = _forward(amplitude, precisions, mean, variance, inducing)
    return _backward(terms, args, d_psi0, d_psi1, d_psi2)


def _backward(terms: _Terms, args, d_psi0, d_psi1, d_psi2) -> PsiGradients:
    a, w, mean, variance, inducing = args
    n = mean.shape[0]
    d_psi1 = np.asarray(d_psi1, dtype=np.float64)
    d_psi2 = np.asarray(d_psi2, dtype=np.float64)
    G2 = 0.5 * (d_psi2 + d_psi2.T)

    # --- Psi1: P1 = dF/dPsi1 * Psi1 is the adjoint of log Psi1
    D1, d = terms.D1, terms.d
    P1 = d_psi1 * (a * terms.psi1_unit)  # (N, M)
    wd = d * (w / D1)[:, None, :]  # (N, M, kz): w_j d / D1
    g_mean = -np.einsum("nm,nmj->nj", P1, wd)
    g_ind = np.einsum("nm,nmj->mj", P1, wd)
    row = P1.sum(axis=1)[:, None]  # (N, 1)
    sq1 = np.einsum("nm,nmj->nj", P1, d * d)  # sum_m P1 d^2
    g_var = -0.5 * (w / D1) * row + 0.5 * (w / D1) ** 2 * sq1
    g_logw = -0.5 * w * np.sum(variance / D1 * row + sq1 / D1**2, axis=0)
    g_loga = float(P1.sum())

    # --- Psi2: P2[n] = G2 * Psi2n is the adjoint of log Psi2n
    D2, delta, e = terms.D2, terms.delta, terms.e
    P2 = G2[None] * ((a * a) * terms.psi2n_unit)  # (N, M, M)
    tot = P2.sum(axis=(1, 2))[:, None]  # (N, 1)
    pe = np.einsum("nab,nabj->nj", P2, e)
    pe2 = np.einsum("nab,nabj->nj", P2, e * e)
    g_mean += -2.0 * (w / D2) * pe
    g_var += -(w / D2) * tot + 2.0 * (w / D2) ** 2 * pe2
    P2sum = P2.sum(axis=0)  # (M, M)
    g_logw += -w * (
        np.sum(variance / D2 * tot, axis=0)
        + 0.25 * np.einsum("ab,abj->j", P2sum, delta * delta)
        + np.sum(pe2 / D2**2, axis=0)
    )
    # first index derivative, doubled for the second index (P2[n] symmetric)
    g_ind += 2.0 * (
        -0.5 * w * np.einsum("ab,abj->aj", P2sum, delta)
        + np.einsum("nab,nabj,nj->aj", P2, e, w / D2)
    )
    g_loga += 2.0 * float(P2sum.sum())

    # --- psi0 = N a
    g_loga += float(d_psi0) * n * a
    return PsiGradients(g_mean, g_var, g_ind, g_loga, g_logw)
