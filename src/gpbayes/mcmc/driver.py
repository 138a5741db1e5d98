"""Run a random-walk MH chain: tuned burn-in, then frozen-proposal draws."""

from __future__ import annotations

import time

import numpy as np

from . import random_walk

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
) -> dict:
    """Burn-in with scale adaptation, then ``n_draws`` kept draws.

    The proposal is ``s^2 * proposal_cov``; ``s`` starts at
    ``initial_scale`` (default 2.38 / sqrt(p), Roberts & Rosenthal 2001) and
    is adapted during burn-in towards ``target_accept``, then frozen.

    Returns a dict of numpy arrays for the kept draws: ``position``
    (n_draws, p), ``log_density``, ``accepted``, ``acceptance_prob``,
    ``n_cubic`` (O(n^3) ops per step), ``wall_time`` (seconds per step),
    plus scalars ``proposal_scale``, ``burn_acceptance``, ``burn_n_cubic``,
    ``burn_wall_time``.
    """
    position0 = np.asarray(position0, dtype=float)
    p = position0.size
    chol = np.linalg.cholesky(np.asarray(proposal_cov, dtype=float))
    log_s = np.log(initial_scale if initial_scale is not None else 2.38 / np.sqrt(p))
    state = random_walk.init(position0, log_density_fn, rng)

    burn_acc = 0
    burn_ops = 0
    t0 = time.perf_counter()
    for it in range(n_burn):
        state, info = random_walk.step(rng, state, log_density_fn, np.exp(log_s) * chol)
        log_s = random_walk.adapt_log_scale(log_s, info.acceptance_prob, it, target_accept)
        burn_acc += info.accepted
        burn_ops += info.n_cubic
    burn_time = time.perf_counter() - t0

    out = {
        "position": np.empty((n_draws, p)),
        "log_density": np.empty(n_draws),
        "accepted": np.empty(n_draws, dtype=bool),
        "acceptance_prob": np.empty(n_draws),
        "n_cubic": np.empty(n_draws, dtype=np.int64),
        "wall_time": np.empty(n_draws),
    }
    factor = np.exp(log_s) * chol
    for i in range(n_draws):
        t = time.perf_counter()
        state, info = random_walk.step(rng, state, log_density_fn, factor)
        out["wall_time"][i] = time.perf_counter() - t
        out["position"][i] = state.position
        out["log_density"][i] = state.log_density
        out["accepted"][i] = info.accepted
        out["acceptance_prob"][i] = info.acceptance_prob
        out["n_cubic"][i] = info.n_cubic
    out.update(
        proposal_scale=float(np.exp(log_s)),
        burn_acceptance=burn_acc / max(n_burn, 1),
        burn_n_cubic=int(burn_ops),
        burn_wall_time=float(burn_time),
    )
    return out
