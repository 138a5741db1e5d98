"""MCMC convergence and efficiency diagnostics.

Every function takes draws as an array of shape ``(chain, draw)``; a 1-D array
is treated as a single chain.  Inputs containing NaN or infinite values, or with
fewer than :data:`MIN_DRAWS` draws per chain, are rejected with ``ValueError``.

Contents
--------
autocovariance, autocorrelation
    FFT-based (biased, divisor ``n``) per-chain autocovariance / autocorrelation.
integrated_autocorr_time, ess
    Geyer's initial-monotone-sequence estimator in the multi-chain form used by
    Stan, ArviZ and the R package *posterior* (Vehtari et al. 2021), with the
    ``"identity"`` (no splitting), ``"mean"`` (split chains) and ``"bulk"``
    (split chains + rank normalisation) variants.
spectrum0_ar, ess_coda
    R-CODA's ``effectiveSize``: spectral density at frequency zero from an AR(p)
    model fitted by Yule-Walker with the order chosen by AIC (``spectrum0.ar``).
    This is what Murray & Adams (2010) report.
rhat, split_rhat, gelman_diag, psrf_evolution
    Gelman-Rubin potential scale reduction factor: classic, split / rank
    normalised (Vehtari et al. 2021), CODA's ``gelman.diag`` (point estimate and
    upper confidence limit, as plotted by ``gelman.plot`` and in Filippone &
    Girolami 2014, Fig. 3-4), and its evolution over the first ``k`` draws.
summarise
    Per-variable table of mean, sd, ESS, CODA ESS and R-hat for an
    ``xarray.Dataset`` (or a mapping of arrays) with dims ``(chain, draw, ...)``.

References
----------
* Geyer, C. J. (1992). Practical Markov chain Monte Carlo. *Statistical
  Science* 7(4), 473-483.
* Gelman, A. & Rubin, D. B. (1992). Inference from iterative simulation using
  multiple sequences. *Statistical Science* 7(4), 457-472.
* Brooks, S. P. & Gelman, A. (1998). General methods for monitoring convergence
  of iterative simulations. *J. Comput. Graph. Stat.* 7(4), 434-455.
* Plummer, M., Best, N., Cowles, K. & Vines, K. (2006). CODA: convergence
  diagnosis and output analysis for MCMC. *R News* 6(1), 7-11.
* Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Bürkner, P.-C. (2021).
  Rank-normalization, folding, and localization: an improved R-hat for
  assessing convergence of MCMC. *Bayesian Analysis* 16(2), 667-718.
* Stan Development Team. *Stan Reference Manual*, section "Effective sample
  size".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import fft as sp_fft

__all__ = [
    "MIN_DRAWS",
    "autocovariance",
    "autocorrelation",
    "integrated_autocorr_time",
    "ess",
    "spectrum0_ar",
    "ess_coda",
    "rhat",
    "split_rhat",
    "gelman_diag",
    "psrf_evolution",
    "summarise",
    "SUMMARY_METRICS",
    "importance_corrected_summary",
    "smoothed_log_weights",
]

#: Minimum number of draws per chain accepted by every diagnostic.
MIN_DRAWS = 4

#: Metrics reported by :func:`summarise`, in order.
SUMMARY_METRICS = ("mean", "sd", "ess", "ess_bulk", "ess_coda", "rhat", "split_rhat")

_ESS_METHODS = ("identity", "mean", "bulk")


# ---------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------
def _as_chains(x: Any, name: str = "x", min_draws: int = MIN_DRAWS) -> np.ndarray:
    """Validate ``x`` and return it as a float array of shape (chain, draw)."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real numeric array: {exc}") from exc
    if a.ndim == 1:
        a = a[np.newaxis, :]
    if a.ndim != 2:
        raise ValueError(
            f"{name} must be 1-D (one chain) or 2-D (chain, draw); got shape {a.shape}"
        )
    if a.shape[0] < 1:
        raise ValueError(f"{name} has no chains (shape {a.shape})")
    n_nan = int(np.isnan(a).sum())
    if n_nan:
        raise ValueError(
            f"{name} contains NaN ({n_nan} of {a.size} values); "
            "MCMC diagnostics are undefined for NaN draws"
        )
    n_inf = int(np.isinf(a).sum())
    if n_inf:
        raise ValueError(
            f"{name} contains infinite values ({n_inf} of {a.size}); "
            "MCMC diagnostics are undefined for non-finite draws"
        )
    if a.shape[1] < min_draws:
        raise ValueError(
            f"{name} has {a.shape[1]} draws per chain; at least {min_draws} are required"
        )
    return a


def _split_chains(a: np.ndarray) -> np.ndarray:
    """Split every chain into its first and second half.

    For an odd number of draws the middle draw is dropped (as in Stan, ArviZ and
    *posterior*).  Returns shape ``(2 * chain, draw // 2)``.
    """
    half = a.shape[1] // 2
    return np.concatenate([a[:, :half], a[:, a.shape[1] - half :]], axis=0)


def _z_scale(a: np.ndarray) -> np.ndarray:
    """Rank-normalise: pooled average ranks -> normal scores (Blom, c = 3/8)."""
    from scipy import stats  # imported where used: scipy.stats costs ~0.3 s at every job's start-up

    ranks = stats.rankdata(a, method="average").reshape(a.shape)
    return stats.norm.ppf((ranks - 0.375) / (a.size + 0.25))


def _is_constant(a: np.ndarray) -> bool:
    return bool(np.ptp(a) < np.finfo(float).resolution)


# ---------------------------------------------------------------------------
# autocorrelation
# ---------------------------------------------------------------------------
def _autocov(a: np.ndarray) -> np.ndarray:
    """Biased per-chain autocovariance of a validated (chain, draw) array."""
    n = a.shape[1]
    nfft = sp_fft.next_fast_len(2 * n, real=True)
    centred = a - a.mean(axis=1, keepdims=True)
    spec = sp_fft.rfft(centred, n=nfft, axis=1)
    power = spec.real**2 + spec.imag**2
    return sp_fft.irfft(power, n=nfft, axis=1)[:, :n] / n


def autocovariance(x: Any) -> np.ndarray:
    """Per-chain sample autocovariance at all lags, computed by FFT.

    ``gamma_t = (1/n) sum_{i=0}^{n-t-1} (x_i - xbar)(x_{i+t} - xbar)`` for
    ``t = 0, ..., n-1`` (the biased, positive-definite estimator with divisor
    ``n``, as in R's ``acf`` and Geyer 1992).  The series is zero-padded to at
    least ``2n`` so the circular FFT correlation equals the linear one.

    Returns an array of shape ``(chain, draw)``.
    """
    return _autocov(_as_chains(x))


def autocorrelation(x: Any, max_lag: int | None = None) -> np.ndarray:
    """Per-chain sample autocorrelation ``rho_t = gamma_t / gamma_0`` by FFT.

    See :func:`autocovariance` for the estimator.  Returns shape
    ``(chain, max_lag + 1)`` (all lags ``0 .. n-1`` by default).  A constant
    chain has undefined autocorrelation and gives NaN.
    """
    a = _as_chains(x)
    acov = _autocov(a)
    if max_lag is not None:
        if max_lag < 0:
            raise ValueError(f"max_lag must be >= 0; got {max_lag}")
        acov = acov[:, : max_lag + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return acov / acov[:, :1]


def _geyer_tau(a: np.ndarray) -> float:
    """Multi-chain integrated autocorrelation time (Geyer IMS, Stan form).

    Exactly the algorithm of the Stan reference manual / ArviZ ``_ess``:

    * ``W`` = mean within-chain variance (divisor n-1), ``var+ = (n-1)/n W + B/n``
      with ``B/n`` the variance (ddof 1) of chain means (0 for one chain);
    * ``rho_t = 1 - (W - mean_chains(gamma_t)) / var+``;
    * Geyer's initial positive sequence: sum pairs ``P_k = rho_{2k} + rho_{2k+1}``
      while positive; initial monotone sequence: make ``P_k`` non-increasing;
    * ``tau = -1 + 2 sum_{t<=T} rho_t + rho_{T+1}`` (the last term only if the
      first even autocorrelation of the rejected pair is positive);
    * ``tau`` is floored at ``1 / log10(N)`` (caps ESS at ``N log10 N`` for
      antithetic chains).
    """
    m, n = a.shape
    acov = _autocov(a)
    mean_var = acov[:, 0].mean() * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus += a.mean(axis=1).var(ddof=1)
    rho_all = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus

    rho = np.zeros(n)
    rho[0] = rho_even = 1.0
    rho[1] = rho_odd = rho_all[1]
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:
        rho_even = rho_all[t + 1]
        rho_odd = rho_all[t + 2]
        if rho_even + rho_odd >= 0.0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0.0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    tau = -1.0 + 2.0 * rho[: max_t + 1].sum() + rho[max_t + 1 : max_t + 2].sum()
    return float(max(tau, 1.0 / math.log10(a.size)))


def _prepare(a: np.ndarray, method: str) -> np.ndarray:
    if method == "identity":
        return a
    if method == "mean":
        return _split_chains(a)
    if method == "bulk":
        return _z_scale(_split_chains(a))
    raise ValueError(f"unknown ESS method {method!r}; expected one of {_ESS_METHODS}")


def integrated_autocorr_time(
    x: Any, method: str = "identity", per_chain: bool = False
) -> float | np.ndarray:
    """Integrated autocorrelation time ``tau = 1 + 2 sum_{t>=1} rho_t``.

    Estimated with Geyer's (1992) initial monotone sequence in the multi-chain
    form of Stan / Vehtari et al. (2021) (see :func:`ess`), so that
    ``ess(x, method) == N / integrated_autocorr_time(x, method)`` with ``N`` the
    number of draws actually used (splitting drops the middle draw of odd-length
    chains).  For a stationary AR(1) process with coefficient ``phi``,
    ``tau = (1 + phi) / (1 - phi)``.

    ``method`` is as in :func:`ess` (default ``"identity"``: chains not split).
    With ``per_chain=True`` each chain is treated on its own and an array of
    shape ``(chain,)`` is returned.  A constant input has ``tau = 1``.
    """
    a = _as_chains(x)
    if per_chain:
        return np.array(
            [integrated_autocorr_time(a[i], method=method) for i in range(a.shape[0])]
        )
    b = _prepare(a, method)
    if _is_constant(b):
        return 1.0
    return _geyer_tau(b)


def ess(x: Any, method: str = "mean") -> float:
    """Multi-chain effective sample size ``N / tau`` (Geyer IMS, Stan form).

    ``tau`` is the integrated autocorrelation time computed by Geyer's initial
    monotone sequence estimator with the multi-chain autocorrelation
    ``rho_t = 1 - (W - mean_chains(gamma_t)) / var+`` of the Stan reference
    manual and Vehtari et al. (2021), eq. (10)-(11): between-chain differences
    in mean lower the estimated ESS.  Methods (same names and results as
    ``arviz.ess``):

    ``"identity"``
        chains used as given;
    ``"mean"`` (default)
        chains split in halves first (Vehtari et al. 2021 "ESS for the mean",
        ``posterior::ess_mean``) - no rank normalisation;
    ``"bulk"``
        split chains, then pooled rank normalisation to normal scores
        (Vehtari et al. 2021 "bulk-ESS", ``arviz.ess`` default).

    ``N`` is the total number of draws used (after splitting, odd-length chains
    lose their middle draw).  A constant input returns ``N``.
    """
    b = _prepare(_as_chains(x), method)
    if _is_constant(b):
        return float(b.size)
    return b.size / _geyer_tau(b)


# ---------------------------------------------------------------------------
# CODA effectiveSize
# ---------------------------------------------------------------------------
def _ar_yule_walker_aic(
    y: np.ndarray, order_max: int | None = None
) -> tuple[int, np.ndarray, float]:
    """R's ``ar.yw(y, aic=TRUE)`` for a univariate series.

    Returns ``(order, coefficients, var_pred)`` where ``var_pred`` includes
    R's finite-sample factor ``n / (n - (order + 1))``.
    """
    n = y.size
    if order_max is None:
        order_max = min(n - 1, int(math.floor(10.0 * math.log10(n))))
    if order_max < 1 or order_max >= n:
        raise ValueError(f"order_max must be in [1, n-1]; got {order_max} for n={n}")
    yc = y - y.mean()
    r = np.array([yc[: n - k] @ yc[k:] for k in range(order_max + 1)]) / n
    if r[0] <= 0.0:
        raise ValueError("zero-variance series")
    # Durbin-Levinson recursion (R's Fortran routine 'eureka')
    var_pred = np.empty(order_max + 1)
    var_pred[0] = r[0]
    coefs = [np.empty(0)]
    phi = np.empty(0)
    for k in range(1, order_max + 1):
        kappa = (r[k] - phi @ r[k - 1 : 0 : -1]) / var_pred[k - 1]
        phi = np.concatenate([phi - kappa * phi[::-1], [kappa]])
        coefs.append(phi)
        var_pred[k] = var_pred[k - 1] * (1.0 - kappa * kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        aic = n * np.log(var_pred) + 2.0 * np.arange(order_max + 1)
    aic = np.where(np.isnan(aic), np.inf, aic)
    order = int(np.argmin(aic))
    return order, coefs[order], float(var_pred[order] * n / (n - (order + 1)))


def spectrum0_ar(x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-chain spectral density at frequency zero from a fitted AR model.

    Port of R-CODA's ``spectrum0.ar``: for each chain, fit an AR(p) model with
    R's ``ar()`` defaults - Yule-Walker equations on the biased
    autocovariance, solved by Durbin-Levinson, order ``p`` in
    ``0 .. min(n-1, floor(10 log10 n))`` chosen by minimum
    ``AIC_p = n log(sigma2_p) + 2p``, innovation variance rescaled by
    ``n / (n - p - 1)`` - and return ``S(0) = sigma2 / (1 - sum_j a_j)^2``.
    As in CODA, a chain whose residual sd after removing a linear trend is
    below 1.5e-8 (R ``all.equal`` tolerance) gets ``S(0) = 0`` and order 0.

    Returns ``(spec, order)``, both of shape ``(chain,)``.
    """
    a = _as_chains(x)
    spec = np.zeros(a.shape[0])
    order = np.zeros(a.shape[0], dtype=int)
    n = a.shape[1]
    trend = np.vstack([np.ones(n), np.arange(1.0, n + 1.0)]).T
    for i, y in enumerate(a):
        resid = y - trend @ np.linalg.lstsq(trend, y, rcond=None)[0]
        if resid.std(ddof=1) < 1.5e-8:
            continue
        p, coef, var_pred = _ar_yule_walker_aic(y)
        spec[i] = var_pred / (1.0 - coef.sum()) ** 2
        order[i] = p
    return spec, order


def ess_coda(x: Any) -> float:
    """Effective sample size as computed by R-CODA's ``effectiveSize``.

    For each chain ``ESS_c = n var(x_c) / S_c(0)`` with ``var`` the sample
    variance (divisor ``n - 1``) and ``S_c(0)`` the AR spectral density at zero
    from :func:`spectrum0_ar`; chains with ``S_c(0) = 0`` (constant) contribute
    0.  The result is the sum over chains (CODA's method for ``mcmc.list``);
    unlike :func:`ess` it ignores between-chain disagreement.
    """
    a = _as_chains(x)
    spec, _ = spectrum0_ar(a)
    n = a.shape[1]
    var = a.var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_chain = np.where(spec == 0.0, 0.0, n * var / spec)
    return float(per_chain.sum())


# ---------------------------------------------------------------------------
# potential scale reduction factor
# ---------------------------------------------------------------------------
def _rhat_core(a: np.ndarray) -> float:
    m, n = a.shape
    w = a.var(axis=1, ddof=1).mean()
    b = n * a.mean(axis=1).var(ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sqrt(((n - 1.0) / n * w + b / n) / w))


def _need_chains(a: np.ndarray, m: int, fn: str) -> None:
    if a.shape[0] < m:
        raise ValueError(f"{fn} needs at least {m} chains; got {a.shape[0]}")


def rhat(x: Any) -> float:
    """Classic Gelman-Rubin potential scale reduction factor.

    ``R = sqrt(var+ / W)`` with ``var+ = (n-1)/n W + B/n``, ``W`` the mean of
    the within-chain variances (divisor n-1) and ``B/n`` the variance (divisor
    m-1) of the chain means (Gelman & Rubin 1992, eq. 3 without the
    ``(m+1)/m`` and degrees-of-freedom corrections; Brooks & Gelman 1998;
    identical to ``arviz.rhat(method="identity")``).  Needs at least 2 chains.
    Returns NaN if all chains are constant and equal.  For CODA's corrected
    version with an upper confidence limit see :func:`gelman_diag`.
    """
    a = _as_chains(x)
    _need_chains(a, 2, "rhat")
    return _rhat_core(a)


def split_rhat(x: Any, rank_normalize: bool = False) -> float:
    """Split-chain potential scale reduction factor.

    Each chain is split in two halves (odd-length chains lose the middle draw)
    and :func:`rhat` is applied to the ``2m`` half-chains, so that trends
    within a chain are detected as well (Gelman et al. BDA3, Vehtari et al.
    2021 eq. 4; ``arviz.rhat(method="split")``).  Works with a single chain.

    With ``rank_normalize=True`` returns the rank-normalised split-R-hat of
    Vehtari et al. (2021): ``max(R(z(split)), R(z(|split - median|)))`` with
    ``z`` the pooled rank normal scores (``arviz.rhat(method="rank")``).
    """
    s = _split_chains(_as_chains(x))
    if not rank_normalize:
        return _rhat_core(s)
    bulk = _rhat_core(_z_scale(s))
    tail = _rhat_core(_z_scale(np.abs(s - np.median(s))))
    return float(max(bulk, tail))


def gelman_diag(x: Any, confidence: float = 0.95) -> tuple[float, float]:
    """R-CODA ``gelman.diag`` shrink factor: point estimate and upper limit.

    Univariate version of CODA's implementation of Gelman & Rubin (1992) with
    the Brooks & Gelman (1998) degrees-of-freedom correction.  With ``m``
    chains of length ``n``, ``w`` = mean within-chain variance, ``b`` = ``n``
    times the variance of the chain means and ``s2_c`` the chain variances::

        V      = (n-1)/n w + (1 + 1/m) b/n
        var(V) = [(n-1)^2 var(s2)/m + (1+1/m)^2 2 b^2/(m-1)
                  + 2 (n-1)(1+1/m) (n/m)(cov(s2, xbar^2) - 2 mu cov(s2, xbar))] / n^2
        d      = 2 V^2 / var(V);   df_adj = (d + 3) / (d + 1)
        R2     = (n-1)/n + (1+1/m) b / (n w)
        point  = sqrt(df_adj R2)
        upper  = sqrt(df_adj [(n-1)/n + F_{(1+confidence)/2}(m-1, 2 w^2 / (var(s2)/m))
                              (1+1/m) b/(n w)])

    (variances/covariances across chains with divisor m-1).  CODA's
    ``gelman.plot`` labels ``point`` "median" and ``upper`` (confidence 0.95)
    "97.5%", which are the two curves shown by Filippone & Girolami (2014).
    Needs at least 2 chains.  Returns ``(point, upper)``.
    """
    a = _as_chains(x)
    _need_chains(a, 2, "gelman_diag")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")
    m, n = a.shape
    xbar = a.mean(axis=1)
    s2 = a.var(axis=1, ddof=1)
    w = s2.mean()
    b = n * xbar.var(ddof=1)
    muhat = xbar.mean()
    var_w = s2.var(ddof=1) / m
    var_b = 2.0 * b * b / (m - 1)

    def _cov(u: np.ndarray, v: np.ndarray) -> float:
        return float(((u - u.mean()) * (v - v.mean())).sum() / (m - 1))

    cov_wb = (n / m) * (_cov(s2, xbar**2) - 2.0 * muhat * _cov(s2, xbar))
    k = 1.0 + 1.0 / m
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (n - 1.0) * w / n + k * b / n
        var_v = (
            (n - 1.0) ** 2 * var_w + k * k * var_b + 2.0 * (n - 1.0) * k * cov_wb
        ) / n**2
        df_v = 2.0 * v * v / var_v
        df_adj = (df_v + 3.0) / (df_v + 1.0) if np.isfinite(df_v) else 1.0
        w_df = 2.0 * w * w / var_w
        r2_fixed = (n - 1.0) / n
        r2_random = k * b / (n * w)
    from scipy import stats

    q = (1.0 + confidence) / 2.0
    if np.isfinite(w_df):
        fq = stats.f.ppf(q, m - 1, w_df)
    else:  # F(m-1, inf) = chi2(m-1)/(m-1)
        fq = stats.chi2.ppf(q, m - 1) / (m - 1)
    point = math.sqrt(df_adj * (r2_fixed + r2_random))
    upper = math.sqrt(df_adj * (r2_fixed + fq * r2_random))
    return point, upper


_PSRF_METHODS = ("classic", "split", "rank", "coda")


def psrf_evolution(
    x: Any,
    checkpoints: Sequence[int],
    method: str = "classic",
    discard_first_half: bool = False,
    confidence: float = 0.95,
) -> np.ndarray:
    """PSRF computed on the first ``k`` draws of every chain, for each ``k``.

    ``method``: ``"classic"`` (:func:`rhat`), ``"split"`` (:func:`split_rhat`),
    ``"rank"`` (rank-normalised split-R-hat) - each giving an array of shape
    ``(len(checkpoints),)`` - or ``"coda"`` (:func:`gelman_diag`), giving shape
    ``(len(checkpoints), 2)`` with columns (point estimate, upper limit).

    With ``discard_first_half=True`` only draws ``k//2 .. k-1`` are used at
    checkpoint ``k`` (Gelman & Rubin 1992; CODA ``autoburnin=TRUE``).
    Filippone & Girolami (2014) report R-hat after 1e3, 2e3, 5e3, 1e4 draws.
    """
    a = _as_chains(x)
    if method not in _PSRF_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {_PSRF_METHODS}")
    cps = [int(k) for k in checkpoints]
    if not cps:
        raise ValueError("checkpoints is empty")
    n = a.shape[1]
    out = []
    for k in cps:
        if k > n:
            raise ValueError(
                f"checkpoint {k} exceeds the number of draws per chain ({n})"
            )
        start = k // 2 if discard_first_half else 0
        if k - start < MIN_DRAWS:
            raise ValueError(
                f"checkpoint {k} leaves {k - start} draws per chain; at least {MIN_DRAWS} are required"
            )
        sub = a[:, start:k]
        if method == "classic":
            out.append(rhat(sub))
        elif method == "split":
            out.append(split_rhat(sub))
        elif method == "rank":
            out.append(split_rhat(sub, rank_normalize=True))
        else:
            out.append(gelman_diag(sub, confidence=confidence))
    return np.asarray(out, dtype=float)


# ---------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------
def _summarise_array(
    arr: np.ndarray, name: str, ess_method: str
) -> dict[str, np.ndarray]:
    """Metrics for an array of shape (chain, draw, *extra)."""
    if arr.ndim < 2:
        raise ValueError(
            f"variable {name!r} must have dims (chain, draw, ...); got shape {arr.shape}"
        )
    extra = arr.shape[2:]
    flat = arr.reshape(arr.shape[0], arr.shape[1], -1)
    _as_chains(flat.reshape(arr.shape[0], -1), name=f"variable {name!r}", min_draws=0)
    if arr.shape[1] < MIN_DRAWS:
        raise ValueError(
            f"variable {name!r} has {arr.shape[1]} draws per chain; at least {MIN_DRAWS} are required"
        )
    out = {key: np.empty(flat.shape[2]) for key in SUMMARY_METRICS}
    for j in range(flat.shape[2]):
        a = flat[:, :, j]
        out["mean"][j] = a.mean()
        out["sd"][j] = a.std(ddof=1)
        out["ess"][j] = ess(a, method=ess_method)
        out["ess_bulk"][j] = ess(a, method="bulk")
        out["ess_coda"][j] = ess_coda(a)
        out["rhat"][j] = rhat(a) if a.shape[0] >= 2 else np.nan
        out["split_rhat"][j] = split_rhat(a)
    return {key: val.reshape(extra) for key, val in out.items()}


def summarise(
    posterior: Any, var_names: Sequence[str] | None = None, ess_method: str = "mean"
):
    """Per-variable convergence summary.

    ``posterior`` is an ``xarray.Dataset`` whose variables have dims
    ``("chain", "draw", *extra)`` (any order; they are transposed), or a
    mapping ``name -> array`` with axes ``(chain, draw, *extra)``.  Extra dims
    are handled by looping over their elements.  Metrics
    (:data:`SUMMARY_METRICS`): ``mean`` and ``sd`` (ddof 1) over all draws,
    ``ess`` (:func:`ess` with ``ess_method``), ``ess_bulk``, ``ess_coda``
    (:func:`ess_coda`), ``rhat`` (:func:`rhat`; NaN for a single chain) and
    ``split_rhat`` (:func:`split_rhat`).

    Returns, for a Dataset, an ``xarray.Dataset`` with the same variable names,
    each with dims ``("metric", *extra)`` (extra coordinates kept), so e.g.
    ``summarise(ds)["theta"].sel(metric="ess")``; for a mapping, a plain
    ``dict`` ``{name: {metric: ndarray of shape extra}}``.
    """
    if ess_method not in _ESS_METHODS:
        raise ValueError(
            f"unknown ESS method {ess_method!r}; expected one of {_ESS_METHODS}"
        )
    try:
        import xarray as xr
    except ImportError:  # pragma: no cover - xarray is a dependency
        xr = None
    if xr is not None and isinstance(posterior, xr.Dataset):
        names = list(posterior.data_vars) if var_names is None else list(var_names)
        result = {}
        for name in names:
            da = posterior[name]
            if "chain" not in da.dims or "draw" not in da.dims:
                raise ValueError(
                    f"variable {name!r} must have dims 'chain' and 'draw'; got {da.dims}"
                )
            extra_dims = [d for d in da.dims if d not in ("chain", "draw")]
            da = da.transpose("chain", "draw", *extra_dims)
            metrics = _summarise_array(
                np.asarray(da.values, dtype=float), name, ess_method
            )
            data = np.stack([metrics[key] for key in SUMMARY_METRICS])
            coords = {"metric": list(SUMMARY_METRICS)}
            coords.update(
                {d: da.coords[d].values for d in extra_dims if d in da.coords}
            )
            result[name] = xr.DataArray(
                data, dims=("metric", *extra_dims), coords=coords
            )
        return xr.Dataset(result)
    if isinstance(posterior, Mapping):
        names = list(posterior) if var_names is None else list(var_names)
        return {
            name: _summarise_array(
                np.asarray(posterior[name], dtype=float), name, ess_method
            )
            for name in names
        }
    raise TypeError(
        f"posterior must be an xarray.Dataset or a mapping of arrays; got {type(posterior).__name__}"
    )


# ---------------------------------------------------------------------------
# importance-corrected MCMC (Vihola, Helske & Franks 2020)
# ---------------------------------------------------------------------------
def _weighted_mean_and_ess(h: np.ndarray, wn: np.ndarray) -> tuple[float, float, float, float]:
    """(mean, sd, MCSE of the mean, ESS) of the self-normalised estimator sum w h / sum w.

    ``wn`` are the weights divided by their mean.  Delta method: mu_hat - mu ~ mean(z) with
    z_i = wn_i (h_i - mu) (Vihola et al. 2020, Sec. 5), whose variance over autocorrelated chains
    is var(z) / ESS(z) (:func:`ess` "mean": split chains, Geyer's initial monotone sequence);
    the ESS is sd^2 / MCSE^2, the number of independent exact-posterior draws with that error.
    """
    mu = float(np.mean(wn * h))
    sd = float(np.sqrt(np.mean(wn * (h - mu) ** 2)))
    z = wn * (h - mu)
    var_z = float(np.mean(z * z))
    if var_z == 0.0 or sd == 0.0:
        return mu, sd, 0.0, float(h.size)
    mcse = math.sqrt(var_z / ess(z, method="mean"))
    return mu, sd, mcse, sd * sd / (mcse * mcse)


def smoothed_log_weights(log_weights: Any) -> tuple[np.ndarray, float]:
    """Pareto-smoothed log importance weights and the Pareto shape k^ of their tail (PSIS; Vehtari,
    Simpson, Gelman, Yao & Gabry 2024, JMLR 25(72), Alg. 1, by the installed ArviZ's PSIS with r_eff = 1:
    ``arviz.psislw`` on 0.x, arviz-stats' on 1.x).

    The largest M = min(S / 5, 3 sqrt(S)) of the S weights are replaced by the expected order
    statistics of a generalized Pareto distribution fitted to them, and the weights truncated at
    the largest raw weight: one lucky over-estimate of p(y | theta) no longer carries the whole sum.
    The estimates stay consistent as S grows when k^ < 1 and are reliable for k^ < 0.7 (their
    Sec. 3-4); k^ is the diagnostic to report with them.  Returns the smoothed log weights
    (unnormalised, same shape, -inf kept) and k^.
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    flat = lw.ravel()
    finite = np.isfinite(flat)
    out = np.full(flat.shape, -np.inf)
    with np.errstate(all="ignore"):
        smoothed, k = _psislw(flat[finite] - np.max(flat[finite]))
    out[finite] = np.asarray(smoothed)
    return out.reshape(lw.shape), float(np.asarray(k))


def _psislw(lw: np.ndarray) -> tuple[np.ndarray, float]:
    """The installed ArviZ's PSIS of the log weights ``lw`` (r_eff = 1): ``arviz.psislw`` on 0.x; on
    1.x, which dropped it, arviz-stats' ``psislw`` (its input the negated log weights, as for LOO),
    shifted to the same maximum as the input.  The two fit the Pareto tail slightly differently: k^
    agrees to a few hundredths, not bit for bit."""
    import arviz as az  # on 1.x it registers arviz-stats' .azstats accessor
    import xarray as xr

    from .io import arviz_uses_datatree

    if not arviz_uses_datatree():
        return az.psislw(lw, reff=1.0, normalize=False)
    # the tail as arviz.psislw takes it: the weights above the (M+1)-th largest; of 4 or fewer (a short run,
    # equal weights) it returns them unsmoothed with k^ = inf, where arviz-stats raises
    m = math.ceil(min(0.2 * lw.size, 3.0 * math.sqrt(lw.size)))
    cutoff = max(np.sort(lw)[-m - 1] if lw.size > m else -np.inf, np.log(np.finfo(float).tiny) + np.max(lw))
    if np.sum(lw > cutoff) <= 4:
        return lw.copy(), math.inf
    try:
        smoothed, k = xr.DataArray(-lw, dims=["draw"]).azstats.psislw(dim="draw", r_eff=1.0)
    except ValueError:  # arviz-stats' other refusals (e.g. all tail values equal): not estimable, as above
        return lw.copy(), math.inf
    smoothed = np.asarray(smoothed.values)
    return smoothed - np.max(smoothed) + np.max(lw), float(k)


def importance_corrected_summary(draws: Any, log_weights: Any, smoothing: str | None = None) -> dict:
    """Posterior summaries of weighted MCMC draws (an approximate chain corrected by importance weights).

    ``draws`` (chain, draw, p) from a chain on an approximate posterior and ``log_weights``
    (chain, draw) of unbiased weights (``gpbayes.mcmc.is_corrected``).  Returns (p,) arrays:

    * ``mean``, ``sd``: the self-normalised weighted estimates sum w h / sum w (Vihola, Helske &
      Franks 2020, eq. 4), consistent for the exact posterior;
    * ``mcse_mean`` and ``ess_mean``: their Monte Carlo error by the delta method over the
      chains' autocorrelation (z_i = w_i (h_i - mean) / mean(w); Var = var(z) / ESS(z)) and the
      implied effective sample size sd^2 / MCSE^2 -- the corrected estimator's, which is smaller
      than the chain's own when the weights vary;
    * ``ess_bulk``: the same for the rank-normalised draws (pooled ranks to normal scores, as
      Vehtari et al.'s 2021 bulk ESS); with equal weights it is the usual bulk ESS;
    * ``rhat``: split rank-normalised R-hat of the (unweighted) approximate chain;

    and the scalar ``importance_efficiency``: Kish's (sum w)^2 / (N sum w^2), the fraction of the
    draws' information the weights keep; ``pareto_k``: the Pareto shape k^ of the weights' tail
    (:func:`smoothed_log_weights`; above 0.7 the weighted estimates are unreliable).  With
    ``smoothing="psis"`` the weights are Pareto-smoothed first (:func:`smoothed_log_weights`).
    """
    x = np.asarray(draws, dtype=np.float64)
    lw = np.asarray(log_weights, dtype=np.float64)
    if x.ndim != 3 or lw.shape != x.shape[:2]:
        raise ValueError(f"draws must be (chain, draw, p) and log_weights (chain, draw); got {x.shape} and {lw.shape}")
    if np.any(np.isnan(lw)) or not np.any(np.isfinite(lw)) or np.any(lw == np.inf):
        raise ValueError("log_weights must be finite or -inf, with at least one finite")
    if smoothing not in (None, "psis"):
        raise ValueError(f"smoothing must be None or 'psis', got {smoothing!r}")
    k = np.nan
    if np.sum(np.isfinite(lw)) >= 10:  # PSIS once: its k^ always, its weights when asked
        smoothed, k = smoothed_log_weights(lw)
        if smoothing == "psis":
            lw = smoothed
    w = np.exp(lw - np.max(lw))
    wn = w / np.mean(w)
    p = x.shape[2]
    out = {k: np.empty(p) for k in ("mean", "sd", "mcse_mean", "ess_mean", "ess_bulk", "rhat")}
    for j in range(p):
        h = x[:, :, j]
        out["mean"][j], out["sd"][j], out["mcse_mean"][j], out["ess_mean"][j] = _weighted_mean_and_ess(h, wn)
        out["ess_bulk"][j] = _weighted_mean_and_ess(_z_scale(h), wn)[3]
        out["rhat"][j] = split_rhat(h, rank_normalize=True) if h.shape[1] >= MIN_DRAWS else np.nan
    out["importance_efficiency"] = float(np.sum(w) ** 2 / (w.size * np.sum(w * w)))
    out["pareto_k"] = k
    return out
