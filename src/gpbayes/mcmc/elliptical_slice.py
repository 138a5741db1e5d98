"""Elliptical slice sampling (Murray, Adams & MacKay 2010, Fig. 2).

Target: p(f) proportional to L(f) N(f; m, Sigma), with the Gaussian factor
given by a square root F of its covariance (F F^T = Sigma; the lower Cholesky
factor, or any other root) and an optional mean m.  One step, in the paper's
numbering:

1. choose an ellipse: nu = F z, z ~ N(0, I);
2. log-likelihood threshold: log y = log L(f) + log u, u ~ U[0, 1];
3. draw an initial angle theta ~ U[0, 2 pi], bracket [theta - 2 pi, theta];
4. f' = m + (f - m) cos theta + nu sin theta;
5. if log L(f') > log y accept f'; otherwise shrink the bracket towards 0
   (theta < 0: theta_min = theta, else theta_max = theta), draw
   theta ~ U[theta_min, theta_max] and go to 4.

The step has no tuning parameter and always moves (``accepted`` is always
True); what it costs is the number of likelihood evaluations, which is one
more than the number of shrinkages.  It never factorises a matrix: given the
factor, a step is O(n^2) (one matrix-vector product), so ``n_cubic`` is 0.

The mean-shifted form (``prior_mean``) is what a sampler needs for a
"pseudo-prior" N(m, Sigma) that is not centred at zero, e.g. f | g, theta ~
N(m_theta,g, R_theta) in the surrogate-data model of Murray & Adams (2010,
eq. 9).  There the root L_R = L M^{-T} is only available as an operator (see
``gpbayes.representations.surrogate_sqrt_apply``), so ``prior_factor`` may be
a callable ``z -> F z`` instead of a matrix.

``log_lik_fn(f) -> float`` is the total log-likelihood; NaN raises.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Union

import numpy as np

__all__ = ["EllipticalSliceState", "EllipticalSliceInfo", "init", "step", "MAX_SHRINKAGES"]

LogLikFn = Callable[[np.ndarray], float]
PriorFactor = Union[np.ndarray, Callable[[np.ndarray], np.ndarray]]

#: Safety stop: with a finite log L(f) the bracket contains the current point,
#: so the loop ends with probability one; needing this many shrinkages means
#: the likelihood is broken (e.g. discontinuous at f or -inf at f).
MAX_SHRINKAGES = 500


class EllipticalSliceState(NamedTuple):
    """State of elliptical slice sampling (Murray, Adams & MacKay 2010): the latent f and log L(f)."""

    position: np.ndarray  # f
    log_likelihood: float  # log L(f) at ``position``


class EllipticalSliceInfo(NamedTuple):
    """What one elliptical slice update did: the accepted angle, the shrinkages and likelihood
    evaluations (Murray, Adams & MacKay 2010, Fig. 2); it always moves and costs no O(n^3) operation.
    """

    accepted: bool  # always True: slice samplers always move
    acceptance_prob: float  # always 1.0
    n_cubic: int  # O(n^3) operations: always 0
    n_likelihood_evals: int  # = n_shrinkages + 1
    n_shrinkages: int
    angle: float  # the accepted angle theta


def _checked(value, f: np.ndarray) -> float:
    value = float(value)
    if math.isnan(value):
        raise FloatingPointError(
            f"log-likelihood is NaN at f = {np.array2string(f, precision=4, threshold=8)}"
        )
    return value


def init(position, log_lik_fn: LogLikFn) -> EllipticalSliceState:
    """State at ``position``; its log-likelihood must be finite."""
    f = np.array(position, dtype=np.float64)
    value = _checked(log_lik_fn(f), f)
    if not math.isfinite(value):
        raise ValueError(f"initial position has log-likelihood {value}; ELL-SS needs L(f) > 0")
    return EllipticalSliceState(f, value)


def _draw_ellipse(rng: np.random.Generator, prior_factor: PriorFactor, n: int) -> np.ndarray:
    z = rng.standard_normal(n)
    if callable(prior_factor):
        return np.asarray(prior_factor(z), dtype=np.float64)
    return prior_factor @ z


def step(
    rng: np.random.Generator,
    state: EllipticalSliceState,
    prior_factor: PriorFactor,
    log_lik_fn: LogLikFn,
    prior_mean: np.ndarray | None = None,
) -> tuple[EllipticalSliceState, EllipticalSliceInfo]:
    """One elliptical slice sampling update of f under L(f) N(f; m, F F^T).

    ``prior_factor`` is F (a matrix, e.g. the lower Cholesky factor from
    ``linalg.cholesky``) or a callable applying it; ``prior_mean`` is m
    (zero if None).
    """
    f = state.position
    n = f.shape[0]
    centred = f if prior_mean is None else f - prior_mean
    # step 1: choose an ellipse through f, nu ~ N(0, Sigma)
    nu = _draw_ellipse(rng, prior_factor, n)
    # step 2: log-likelihood threshold
    log_y = state.log_likelihood + math.log(rng.uniform())
    # step 3: initial proposal and bracket
    theta = rng.uniform(0.0, 2.0 * math.pi)
    theta_min, theta_max = theta - 2.0 * math.pi, theta
    n_shrink = 0
    while True:
        # step 4: point on the ellipse
        proposal = centred * math.cos(theta) + nu * math.sin(theta)
        if prior_mean is not None:
            proposal = proposal + prior_mean
        value = _checked(log_lik_fn(proposal), proposal)
        # step 5: accept, or shrink the bracket towards theta = 0 (the current f)
        if value > log_y:
            break
        if theta < 0.0:
            theta_min = theta
        else:
            theta_max = theta
        n_shrink += 1
        if n_shrink >= MAX_SHRINKAGES:
            raise RuntimeError(
                f"elliptical slice sampling shrank the bracket {n_shrink} times without "
                f"finding a point above the slice (current log L = {state.log_likelihood}); "
                "the log-likelihood is probably discontinuous or wrong at the current f"
            )
        theta = rng.uniform(theta_min, theta_max)
    info = EllipticalSliceInfo(True, 1.0, 0, n_shrink + 1, n_shrink, float(theta))
    return EllipticalSliceState(proposal, value), info
