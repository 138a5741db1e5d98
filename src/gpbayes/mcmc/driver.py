"""Run a random-walk MH chain: tuned burn-in, then frozen-proposal draws."""

from __future__ import annotations

import time

import numpy as np

from .. import linalg
from . import random_walk

__all__ = ["run_rwmh_chain", "record_draws"]


def record_draws(rng, state, step_fn, n_draws: int, info_fields=("accepted", "acceptance_prob", "n_cubic")):
    """Run ``n_draws`` steps of a frozen kernel and record them.

    ``step_fn(rng, state) -> (state, info)``; the state must have
    ``position`` and ``log_density``.  Returns ``(state, out)`` with arrays
    ``position`` (n_draws, p), ``log_density``, ``wall_time`` (seconds per
    step) and one array per name in ``info_fields`` (taken from ``info``).
    """
    p = np.asarray(state.position).shape[0]
    out = {"position": np.empty((n_draws, p)), "log_density": np.empty(n_draws), "wall_time": np.empty(n_draws)}
    fields = {name: [] for name in info_fields}
    for i in range(n_draws):
        t = time.perf_counter()
        state, info = step_fn(rng, state)
        out["wall_time"][i] = time.perf_counter() - t
        out["position"][i] = state.position
        out["log_density"][i] = state.log_density
        for name, values in fields.items():
            values.append(getattr(info, name))
    for name, values in fields.items():
        out[name] = np.asarray(values) if values else np.empty(0)
    return state, out


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
) -> dict:
    """Burn-in with proposal adaptation, then ``n_draws`` kept draws.

    The proposal is ``s^2 * Sigma``; ``s`` starts at ``initial_scale``
    (default 2.38 / sqrt(p), Roberts & Rosenthal 2001) and is adapted during
    burn-in towards ``target_accept`` (Robbins-Monro on log s).  ``Sigma``
    starts as ``proposal_cov``; with ``adapt_covariance`` it is replaced, at
    1/2 and 3/4 of the burn-in, by the empirical covariance of the burn-in
    draws since the first quarter (plus 1e-8 * mean variance on the
    diagonal), as in Haario et al. (2001) but confined to burn-in.  After
    burn-in everything is frozen, so the kept draws come from one fixed,
    valid MH kernel.

    Returns a dict of numpy arrays for the kept draws: ``position``
    (n_draws, p), ``log_density``, ``accepted``, ``acceptance_prob``,
    ``n_cubic`` (O(n^3) ops per step), ``wall_time`` (seconds per step),
    plus scalars ``proposal_scale``, ``burn_acceptance``, ``burn_n_cubic``,
    ``burn_wall_time``.
    """
    position0 = np.asarray(position0, dtype=float)
    p = position0.size
    chol = linalg.cholesky(proposal_cov, name="proposal covariance", count=False)
    log_s = np.log(initial_scale if initial_scale is not None else 2.38 / np.sqrt(p))
    state = random_walk.init(position0, log_density_fn, rng)

    burn_acc = 0
    burn_ops = 0
    checkpoints = {n_burn // 2: n_burn // 4, (3 * n_burn) // 4: n_burn // 4} if adapt_covariance else {}
    burn_positions = np.empty((n_burn, p))
    rm_iter = 0  # Robbins-Monro counter, restarted when the covariance changes
    t0 = time.perf_counter()
    for it in range(n_burn):
        if it in checkpoints and it - checkpoints[it] > 2 * p:
            window = burn_positions[checkpoints[it]:it]
            emp = np.atleast_2d(np.cov(window, rowvar=False))
            emp[np.diag_indices(p)] += 1e-8 * float(np.mean(np.diag(emp))) + 1e-12
            try:
                chol = linalg.cholesky(emp, name="adapted proposal covariance", max_tries=1, count=False)
                log_s = np.log(2.38 / np.sqrt(p))
                rm_iter = 0
            except np.linalg.LinAlgError:  # degenerate window (e.g. no moves): keep Sigma
                pass
        state, info = random_walk.step(rng, state, log_density_fn, np.exp(log_s) * chol)
        log_s = random_walk.adapt_log_scale(log_s, info.acceptance_prob, rm_iter, target_accept)
        rm_iter += 1
        burn_positions[it] = state.position
        burn_acc += info.accepted
        burn_ops += info.n_cubic
    burn_time = time.perf_counter() - t0

    factor = np.exp(log_s) * chol
    state, out = record_draws(
        rng, state, lambda r, st: random_walk.step(r, st, log_density_fn, factor), n_draws
    )
    out.update(
        proposal_scale=float(np.exp(log_s)),
        burn_acceptance=burn_acc / max(n_burn, 1),
        burn_n_cubic=int(burn_ops),
        burn_wall_time=float(burn_time),
        proposal_factor=factor,
    )
    return out
