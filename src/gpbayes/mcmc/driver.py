"""Adaptive random-walk Metropolis as a use of the common chain runner."""

from __future__ import annotations

import numpy as np

from . import random_walk
from .adaptation import RandomWalkAdaptation
from .runner import Chain, run_chain

__all__ = ["run_rwmh_chain"]


def run_rwmh_chain(
    rng: np.random.Generator,
    position0,
    log_density_fn,
    proposal_cov: np.ndarray,
    *,
    n_burn: int,
    n_draws: int,
    target_accept: float = 0.25,
    initial_scale: float | None = None,
    adapt_covariance: bool = True,
    callback=None,
) -> Chain:
    """Burn-in with proposal adaptation (``adaptation.RandomWalkAdaptation``), then ``n_draws`` kept draws.

    The proposal is ``s^2 * Sigma`` with ``Sigma = proposal_cov`` at the
    start; see :class:`gpbayes.mcmc.adaptation.RandomWalkAdaptation` for the
    Robbins–Monro scale and Haario covariance updates, confined to burn-in.
    After burn-in everything is frozen, so the kept draws come from one fixed,
    valid MH kernel.  ``log_density_fn(position, rng)`` may be noisy (a
    pseudo-marginal estimate): the state stores its value at the current point.

    Returns a :class:`~gpbayes.mcmc.runner.Chain`: ``draws``, ``stats``
    (``lp``, ``accepted``, ``acceptance_rate``, ``proposal_lp``, ``n_cubic``,
    ``wall_time``), ``warmup`` (burn-in cost and acceptance) and ``params``
    (``proposal_scale``, ``proposal_factor``).
    """
    position0 = np.asarray(position0, dtype=float)

    def make_step(factor):
        return lambda r, st: random_walk.step(r, st, log_density_fn, factor)

    adapt = RandomWalkAdaptation(make_step, proposal_cov, int(n_burn), target_accept=target_accept,
                                 initial_scale=initial_scale, adapt_covariance=adapt_covariance)
    return run_chain(rng, None, lambda: random_walk.init(position0, log_density_fn, rng),
                     n_draws=n_draws, n_warmup=n_burn, adapt=adapt, callback=callback)
