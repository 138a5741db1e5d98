"""Joint-distribution tests of posterior simulators (Geweke 2004, "Getting it right").

Filippone & Girolami (2014, Sec. 4.2) checked their samplers this way.  For a
model p(params) p(data | params) and a transition kernel T that is meant to
leave p(params | data) invariant, two simulators target the same joint
distribution p(params, data):

* marginal-conditional (MC): independent draws params ~ p(params),
  data ~ p(data | params);
* successive-conditional (SC): start from one MC draw, then repeat
  params <- T(params; data) (``n_kernel_steps`` times), data ~ p(data | params).
  If T leaves p(params | data) invariant, p(params, data) is stationary
  for this chain; a wrong T usually moves the chain somewhere else.

The test compares the means of test functions h_k(params, data) under the two
simulators.

Decision rule
-------------
For each h_k, with M MC draws (independent) and N SC draws (autocorrelated):

    z_k = (mean_MC - mean_SC) / sqrt(se_MC^2 + se_SC^2),
    se_MC = sd_MC / sqrt(M),
    se_SC from non-overlapping batch means: the N draws are cut into b
          batches of length N / b and se_SC = sd(batch means) / sqrt(b).

Batch means give a consistent standard error for an autocorrelated chain as
long as each batch is much longer than the integrated autocorrelation time
(then the batch means are nearly independent); the lag-1 autocorrelation of
the batch means is returned so that this can be checked (``batches_ok``: all
below ``max_batch_lag1``, 0.5 by default, about 3 standard errors of a lag-1
autocorrelation of 40 independent values).  Under the null hypothesis (T is
correct), z_k is approximately Student-t with the Welch-Satterthwaite degrees
of freedom nu_k = (se_MC^2 + se_SC^2)^2 / (se_MC^4 / (M - 1) + se_SC^4 / (b - 1))
(close to b - 1, since the SC error dominates).

The simulator is declared wrong (``reject``) when any
|z_k| > t_{nu_k}^{-1}(1 - alpha / (2 K)): a two-sided test per function,
Bonferroni-corrected over the K functions, so the probability of a false
alarm for a correct sampler is at most ``alpha`` (up to the batch-means
approximation; the test functions are correlated, which makes Bonferroni
conservative).  ``test_geweke_false_alarm_rate`` in ``test_latent_gibbs.py``
checks the rate on an AR(1) chain with a known stationary distribution.
With a fixed seed the outcome is deterministic; alpha is the chance that a
seed picked blindly would have flagged a correct sampler.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from scipy import stats

__all__ = [
    "GewekeResult",
    "marginal_conditional",
    "successive_conditional",
    "batch_means",
    "compare",
]


class GewekeResult(NamedTuple):
    names: tuple
    mean_mc: np.ndarray
    mean_sc: np.ndarray
    se_mc: np.ndarray
    se_sc: np.ndarray
    z: np.ndarray
    df: np.ndarray
    threshold: np.ndarray  # per-function critical |z|
    reject: bool  # any |z_k| > threshold_k
    batch_lag1: np.ndarray  # lag-1 autocorrelation of the SC batch means
    batches_ok: bool
    alpha: float

    def summary(self) -> str:
        lines = [f"Geweke joint-distribution test, alpha={self.alpha} (Bonferroni over {len(self.names)})"]
        for k, name in enumerate(self.names):
            flag = " <-- REJECT" if abs(self.z[k]) > self.threshold[k] else ""
            lines.append(
                f"  {name:>14s}: MC {self.mean_mc[k]: .4f} +- {self.se_mc[k]:.4f}  "
                f"SC {self.mean_sc[k]: .4f} +- {self.se_sc[k]:.4f}  z={self.z[k]: .2f} "
                f"(crit {self.threshold[k]:.2f}, batch lag1 {self.batch_lag1[k]: .2f}){flag}"
            )
        return "\n".join(lines)


def marginal_conditional(
    rng: np.random.Generator,
    simulate_params: Callable[[np.random.Generator], Any],
    simulate_data: Callable[[np.random.Generator, Any], Any],
    test_fn: Callable[[Any, Any], np.ndarray],
    n: int,
) -> np.ndarray:
    """(n, K) test-function values at independent draws from p(params, data)."""
    rows = []
    for _ in range(n):
        params = simulate_params(rng)
        data = simulate_data(rng, params)
        rows.append(np.asarray(test_fn(params, data), dtype=float))
    return np.array(rows)


def successive_conditional(
    rng: np.random.Generator,
    simulate_params: Callable[[np.random.Generator], Any],
    simulate_data: Callable[[np.random.Generator, Any], Any],
    transition: Callable[[np.random.Generator, Any, Any], Any],
    test_fn: Callable[[Any, Any], np.ndarray],
    n: int,
    *,
    n_kernel_steps: int = 1,
) -> np.ndarray:
    """(n, K) test-function values along the successive-conditional chain.

    ``transition(rng, params, data) -> params`` is the posterior kernel under
    test (it may build and discard any sampler state it needs).  The chain
    starts at an exact draw from the joint, so it needs no burn-in.
    """
    params = simulate_params(rng)
    data = simulate_data(rng, params)
    rows = []
    for _ in range(n):
        for _ in range(n_kernel_steps):
            params = transition(rng, params, data)
        data = simulate_data(rng, params)
        rows.append(np.asarray(test_fn(params, data), dtype=float))
    return np.array(rows)


def batch_means(x: np.ndarray, n_batches: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, batch-means standard error and lag-1 autocorrelation of the batch means.

    ``x`` is (N, K); the first N mod b draws are dropped.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    size = x.shape[0] // n_batches
    if size < 2:
        raise ValueError(f"{x.shape[0]} draws are too few for {n_batches} batches")
    xb = x[x.shape[0] - size * n_batches :].reshape(n_batches, size, -1).mean(axis=1)
    se = xb.std(axis=0, ddof=1) / np.sqrt(n_batches)
    c = xb - xb.mean(axis=0)
    denom = np.sum(c * c, axis=0)
    lag1 = np.where(denom > 0, np.sum(c[1:] * c[:-1], axis=0) / np.where(denom > 0, denom, 1.0), 0.0)
    return xb.mean(axis=0), se, lag1


def compare(
    mc: np.ndarray,
    sc: np.ndarray,
    *,
    n_batches: int = 40,
    alpha: float = 0.01,
    names: Sequence[str] | None = None,
    max_batch_lag1: float = 0.5,
) -> GewekeResult:
    """Apply the decision rule of the module docstring to (M, K) and (N, K) arrays."""
    mc = np.asarray(mc, dtype=float)
    sc = np.asarray(sc, dtype=float)
    if mc.ndim == 1:
        mc = mc[:, None]
    if sc.ndim == 1:
        sc = sc[:, None]
    K = mc.shape[1]
    if sc.shape[1] != K:
        raise ValueError(f"MC has {K} test functions, SC has {sc.shape[1]}")
    M = mc.shape[0]
    mean_mc = mc.mean(axis=0)
    se_mc = mc.std(axis=0, ddof=1) / np.sqrt(M)
    mean_sc, se_sc, lag1 = batch_means(sc, n_batches)
    var = se_mc**2 + se_sc**2
    if np.any(var <= 0):
        raise ValueError("a test function is constant under both simulators")
    z = (mean_mc - mean_sc) / np.sqrt(var)
    df = var**2 / (se_mc**4 / (M - 1) + se_sc**4 / (n_batches - 1))
    threshold = stats.t.ppf(1.0 - alpha / (2.0 * K), df)
    reject = bool(np.any(np.abs(z) > threshold))
    names = tuple(names) if names is not None else tuple(f"h{k}" for k in range(K))
    return GewekeResult(
        names, mean_mc, mean_sc, se_mc, se_sc, z, df, threshold, reject, lag1,
        bool(np.all(lag1 < max_batch_lag1)), alpha,
    )
