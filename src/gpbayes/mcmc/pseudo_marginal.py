"""Pseudo-marginal MH for GP hyperparameters, run as Filippone & Girolami do.

The transition is F&G (2014) Alg. 1, implemented once in
``gpbayes.mcmc.random_walk.step``:

1. propose psi' ~ N(psi, s^2 Sigma) (frozen proposal);
2. (Alg. 1, lines 2-4) build q(f | y, theta') (Laplace or EP), draw N_imp
   importance samples from it and form the estimate p~(y | theta') of eq. 25
   -- this is ``target(psi', rng)`` of ``gpbayes.estimators.PseudoMarginalTarget``;
3. (lines 5-6) accept with probability
   min(1, p~(y|theta') p(psi') / (p~(y|theta) p(psi))),
   where p~(y|theta) is the estimate *stored* when the current point was
   accepted.  It is never recomputed; this is what makes the chain target the
   exact posterior p(psi | y) (Andrieu & Roberts 2009; F&G Sec. 3.3.2).

``run_pm_chain`` is the whole run of F&G Sec. 4.4:

* phase 1, adaptive (``n_adapt`` iterations): plain MH on the deterministic
  approximate log posterior log p^(y | theta) + log p(psi) (the Laplace
  marginal, R&W eq. 3.32, by default; ``adapt_on="ep"`` for log Z_EP), with
  the proposal scale and covariance adapted by
  ``gpbayes.mcmc.driver.run_rwmh_chain`` towards ``target_accept``.  F&G do
  this "to overcome the problems that may arise when chains get trapped due to
  a largely overestimated value of the marginal likelihood";
* phase 2, pseudo-marginal: the proposal is frozen; the chain restarts from
  the end point of phase 1 with a fresh importance estimate there and runs
  Alg. 1 for ``n_burn`` discarded and ``n_draws`` kept iterations.

Only phase-2 draws are kept, so they come from one fixed, valid PM-MH kernel
whatever phase 1 did.

Cost is counted in O(n^3) operations (``gpbayes.linalg.count_ops``) per
iteration, the unit of F&G Table II.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import linalg
from . import driver, random_walk

__all__ = ["deterministic_log_posterior", "pseudo_marginal_mh", "run_pm_chain"]

def deterministic_log_posterior(target, adapt_on: str = "laplace"):
    """The deterministic approximate log posterior used in the adaptive phase.

    Returns ``(source, log_density_fn)``: ``source`` is ``target`` itself if
    it already uses the ``adapt_on`` approximation, else a copy of it
    (``dataclasses.replace``) with ``approx=adapt_on`` and the default
    options of that approximation (the options of one method do not apply to
    the other); ``log_density_fn(psi, rng)`` is
    ``source.approx_log_posterior(psi)`` and never uses ``rng``.
    """
    if adapt_on not in ("laplace", "ep"):
        raise ValueError(f"adapt_on must be 'laplace' or 'ep', got {adapt_on!r}")
    source = target
    if getattr(target, "approx", adapt_on) != adapt_on:
        source = dataclasses.replace(target, approx=adapt_on, approx_options={})

    def log_density_fn(psi, rng=None):
        return source.approx_log_posterior(psi)

    return source, log_density_fn


def pseudo_marginal_mh(
    rng: np.random.Generator,
    state: random_walk.RWMHState,
    target,
    proposal_factor: np.ndarray,
    n_steps: int,
    *,
    record: bool = True,
) -> tuple[random_walk.RWMHState, dict]:
    """``n_steps`` iterations of F&G Alg. 1 with a frozen proposal.

    ``state`` is ``(position, stored log estimate)`` as made by
    ``random_walk.init(position, target, rng)``; ``proposal_factor`` is L
    with proposal covariance L L^T.  Returns the final state and, with
    ``record``, a dict of per-step arrays: ``position`` (n_steps, p),
    ``log_density`` (the stored estimate after the step), ``proposal_log_density``
    (the estimate made at the proposal), ``accepted``, ``acceptance_prob``,
    ``n_cubic`` (O(n^3) operations of the step) and ``wall_time`` (seconds).
    Without ``record`` the dict holds only the totals ``n_accepted``,
    ``n_cubic`` and ``wall_time``.
    """
    n_steps = int(n_steps)
    if n_steps < 0:
        raise ValueError(f"n_steps must be >= 0, got {n_steps}")
    p = state.position.shape[0]
    factor = np.asarray(proposal_factor, dtype=np.float64)
    if factor.shape != (p, p):
        raise ValueError(f"proposal_factor must be ({p}, {p}), got {factor.shape}")
    if record:
        out = {
            "position": np.empty((n_steps, p)),
            "log_density": np.empty(n_steps),
            "proposal_log_density": np.empty(n_steps),
            "accepted": np.empty(n_steps, dtype=bool),
            "acceptance_prob": np.empty(n_steps),
            "n_cubic": np.empty(n_steps, dtype=np.int64),
            "wall_time": np.empty(n_steps),
        }
    n_acc = 0
    n_cubic = 0
    t_start = time.perf_counter()
    for i in range(n_steps):
        t = time.perf_counter()
        # Alg. 1: propose, estimate at the proposal, accept against the stored estimate
        state, info = random_walk.step(rng, state, target, factor)
        if record:
            out["wall_time"][i] = time.perf_counter() - t
            out["position"][i] = state.position
            out["log_density"][i] = state.log_density
            out["proposal_log_density"][i] = info.proposal_log_density
            out["accepted"][i] = info.accepted
            out["acceptance_prob"][i] = info.acceptance_prob
            out["n_cubic"][i] = info.n_cubic
        n_acc += info.accepted
        n_cubic += info.n_cubic
    if not record:
        out = {
            "n_accepted": int(n_acc),
            "n_cubic": int(n_cubic),
            "wall_time": float(time.perf_counter() - t_start),
        }
    return state, out


def run_pm_chain(
    rng: np.random.Generator,
    target,
    psi0,
    *,
    n_adapt: int,
    n_burn: int,
    n_draws: int,
    proposal_cov: np.ndarray,
    target_accept: float = 0.25,
    adapt_on: str = "laplace",
    initial_scale: float | None = None,
    adapt_covariance: bool = True,
) -> dict:
    """Adaptive phase on the deterministic approximation, then frozen PM-MH.

    Parameters
    ----------
    rng : the chain's generator; every random draw of both phases comes from it.
    target : ``target(psi, rng) -> float``, the noisy log posterior
        log p~(y | theta) + log p(psi) (``PseudoMarginalTarget``), which must
        also provide ``approx_log_posterior(psi)`` for phase 1.
    psi0 : starting point (log hyperparameters), shape (p,).
    n_adapt : phase-1 iterations (F&G Sec. 4.4 use 2000); 0 skips phase 1
        and uses ``initial_scale * chol(proposal_cov)`` as the frozen proposal.
    n_burn, n_draws : phase-2 iterations discarded, then kept.
    proposal_cov : initial proposal covariance Sigma (p, p).
    target_accept : acceptance rate phase 1 adapts towards (F&G: 20-30 %).
    adapt_on : ``"laplace"`` (F&G) or ``"ep"``: which deterministic
        approximate marginal phase 1 runs on (``deterministic_log_posterior``).
    initial_scale, adapt_covariance : passed to ``driver.run_rwmh_chain``
        (default scale 2.38 / sqrt(p); covariance re-estimated at 1/2 and 3/4
        of phase 1 when p > 1; for p = 1 only the scale is adapted).

    Phase 1 is ``driver.run_rwmh_chain`` with ``n_burn=n_adapt`` adapted
    iterations followed by one iteration with the now frozen proposal (the
    driver reports positions only for frozen draws), whose end point starts
    phase 2.  All ``n_adapt + 1`` iterations evaluate only the deterministic
    approximation, never the importance estimate.

    Returns
    -------
    dict of numpy arrays over the ``n_draws`` kept draws, as
    ``driver.run_rwmh_chain``: ``position`` (n_draws, p); ``log_density`` (the
    stored noisy log-posterior estimate of the current point);
    ``proposal_log_density``; ``accepted``; ``acceptance_prob``; ``n_cubic``
    (O(n^3) operations per iteration); ``wall_time`` (seconds per iteration).
    Scalars: ``proposal_scale``, ``proposal_factor`` (the frozen L, proposal
    covariance L L^T), ``burn_acceptance``, ``burn_n_cubic``,
    ``burn_wall_time`` (phase-2 burn-in); ``adapt_on``, ``adapt_acceptance``,
    ``adapt_n_cubic``, ``adapt_wall_time``, ``adapt_position`` (end point of
    phase 1), ``adapt_log_density`` (deterministic log posterior there);
    ``init_log_density`` (the first importance estimate, at
    ``adapt_position``), ``init_n_cubic``; ``n_failures`` (target evaluations
    where K could not be factorised, if the target counts them).
    """
    psi0 = np.asarray(psi0, dtype=np.float64)
    if psi0.ndim != 1:
        raise ValueError(f"psi0 must be a vector, got shape {psi0.shape}")
    p = psi0.size
    for name, value in (("n_adapt", n_adapt), ("n_burn", n_burn), ("n_draws", n_draws)):
        if int(value) < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    proposal_cov = np.asarray(proposal_cov, dtype=np.float64)
    if proposal_cov.shape != (p, p):
        raise ValueError(f"proposal_cov must be ({p}, {p}), got {proposal_cov.shape}")
    failures0 = getattr(target, "n_failures", 0)

    # ---- phase 1 (F&G Sec. 4.4): adapt the proposal on the deterministic approximation
    out = {"adapt_on": adapt_on}
    if n_adapt > 0:
        _, det_fn = deterministic_log_posterior(target, adapt_on)
        t0 = time.perf_counter()
        with linalg.count_ops() as ops:
            adapt = driver.run_rwmh_chain(
                rng, psi0, det_fn, proposal_cov,
                n_burn=int(n_adapt), n_draws=1, target_accept=target_accept,
                initial_scale=initial_scale,
                # driver's empirical covariance breaks for p = 1 (np.cov returns
                # a 0-d array); in 1-D the scale adaptation alone is equivalent
                adapt_covariance=adapt_covariance and p > 1,
            )
        factor = np.array(adapt["proposal_factor"], dtype=np.float64)
        scale = float(adapt["proposal_scale"])
        position = adapt["position"][-1].copy()
        out.update(
            adapt_acceptance=(adapt["burn_acceptance"] * n_adapt + adapt["accepted"][0]) / (n_adapt + 1),
            adapt_n_cubic=int(ops.cubic),
            adapt_wall_time=float(time.perf_counter() - t0),
            adapt_position=position.copy(),
            adapt_log_density=float(adapt["log_density"][-1]),
        )
    else:
        scale = initial_scale if initial_scale is not None else 2.38 / np.sqrt(p)
        factor = scale * linalg.cholesky(proposal_cov, name="proposal covariance", count=False)
        position = psi0.copy()
        out.update(adapt_acceptance=np.nan, adapt_n_cubic=0, adapt_wall_time=0.0,
                   adapt_position=position.copy(), adapt_log_density=np.nan)
    factor.setflags(write=False)  # frozen from here on

    # ---- phase 2 (F&G Alg. 1): switch to the importance estimate, proposal frozen
    with linalg.count_ops() as ops:
        state = random_walk.init(position, target, rng)
    out.update(init_log_density=float(state.log_density), init_n_cubic=int(ops.cubic))
    state, burn = pseudo_marginal_mh(rng, state, target, factor, n_burn, record=False)
    state, draws = pseudo_marginal_mh(rng, state, target, factor, n_draws)
    out.update(draws)
    out.update(
        proposal_factor=factor,
        proposal_scale=float(scale),
        burn_acceptance=burn["n_accepted"] / n_burn if n_burn > 0 else np.nan,
        burn_n_cubic=burn["n_cubic"],
        burn_wall_time=burn["wall_time"],
        n_failures=int(getattr(target, "n_failures", 0) - failures0),
    )
    return out
