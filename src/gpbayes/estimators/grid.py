"""Repeated importance-sampling estimates of log p(y | theta) over a grid of theta.

Filippone & Girolami (2014), Fig. 2 and Sec. 4.1: how noisy the estimate of
eq. 25 is, for the Laplace and the EP importance density and several N_imp,
is seen by repeating it at fixed theta.  The Gaussian approximation q depends
on theta only (it is deterministic), so it is built once per grid point; only
the importance draws are repeated.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from ..approx import ep_approximation, laplace_approximation
from .importance import covariance_and_factor, importance_log_weights

__all__ = ["log_marginal_estimates_on_grid"]


def log_marginal_estimates_on_grid(X, y, kernel, likelihood, psi_grid, *, approximations, n_imps, n_reps: int,
                                   rng: np.random.Generator, ep_mode: str = "parallel",
                                   approx_options: dict | None = None) -> xr.Dataset:
    """``n_reps`` independent estimates log p~(y | theta) (F&G eq. 25) at every grid point.

    Parameters
    ----------
    X, y : inputs (n, d) and targets (checked by ``likelihood.check_targets``).
    kernel : ``kernel(psi, X) -> K``; ``likelihood`` p(y | f).
    psi_grid : (n_points, p) log-hyperparameters, one grid point per row.
    approximations : names of the importance densities q, ``"laplace"``
        (R&W Alg. 3.1) and/or ``"ep"`` (R&W Alg. 3.5, schedule ``ep_mode``),
        with ``approx_options`` passed to both.
    n_imps : the numbers of importance samples N_imp to compare.
    n_reps : repetitions per (grid point, approximation, N_imp).
    rng : the generator of all importance draws.  Per grid point, per
        approximation, per N_imp (in the order given) one block of
        n_reps x N_imp draws (``importance_log_weights``), whose rows of N_imp
        weights make the n_reps estimates.

    K is factorised once per grid point (``covariance_and_factor``: with
    jitter, if needed, added to K as well).

    Returns
    -------
    Dataset with ``log_marginal_estimate`` (approximation, n_imp, point, rep)
    and ``approx_log_marginal`` (approximation, point), the deterministic
    approximate log marginal of each q (R&W eq. 3.32 for LA, log Z_EP for
    EP); coordinates ``approximation``, ``n_imp`` and ``psi`` (point, param).
    """
    X = np.asarray(X, dtype=np.float64)
    y = likelihood.check_targets(y)
    psi_grid = np.asarray(psi_grid, dtype=np.float64)
    if psi_grid.ndim != 2 or psi_grid.shape[1] != kernel.n_params:
        raise ValueError(f"psi_grid must be (n_points, {kernel.n_params}), got shape {psi_grid.shape}")
    for method in approximations:
        if method not in ("laplace", "ep"):
            raise ValueError(f"unknown approximation {method!r}; use 'laplace' or 'ep'")
    n_reps = int(n_reps)
    options = dict(approx_options or {})
    out = np.empty((len(approximations), len(n_imps), psi_grid.shape[0], n_reps))
    approx_lm = np.empty((len(approximations), psi_grid.shape[0]))
    for t, psi in enumerate(psi_grid):
        K, K_chol = covariance_and_factor(kernel, psi, X, name=f"K at grid point {t}")
        for a, method in enumerate(approximations):
            if method == "laplace":
                q = laplace_approximation(K, y, likelihood, K_chol=K_chol, **options)
            else:
                q = ep_approximation(K, y, likelihood, mode=ep_mode, K_chol=K_chol, **options)
            approx_lm[a, t] = q.log_marginal
            for j, n_imp in enumerate(n_imps):
                # all repetitions in one block of draws: n_reps x n_imp weights
                log_w = importance_log_weights(rng, K_chol, y, likelihood, q, n_imp * n_reps)
                out[a, j, t] = logsumexp(log_w.reshape(n_reps, n_imp), axis=1) - np.log(n_imp)
    return xr.Dataset(
        {
            "log_marginal_estimate": (("approximation", "n_imp", "point", "rep"), out),
            "approx_log_marginal": (("approximation", "point"), approx_lm),
        },
        coords={"approximation": list(approximations), "n_imp": list(n_imps),
                "psi": (("point", "param"), psi_grid)},
    )
