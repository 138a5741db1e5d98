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

``run_chain`` is the whole run of F&G Sec. 4.4:

* phase 1, adaptive (``n_adapt`` iterations): plain MH on the deterministic
  approximate log posterior log p^(y | theta) + log p(psi) (the Laplace
  marginal, R&W eq. 3.32, by default; ``adapt_on="ep"`` for log Z_EP), with
  the proposal scale and covariance adapted by
  ``gpbayes.mcmc.random_walk.run_chain`` towards ``target_accept``.  F&G do
  this "to overcome the problems that may arise when chains get trapped due to
  a largely overestimated value of the marginal likelihood";
* phase 2, pseudo-marginal: the proposal is frozen; the chain restarts from
  the end point of phase 1 with a fresh importance estimate there and runs
  Alg. 1 for ``n_burn`` discarded and ``n_draws`` kept iterations.

Only phase-2 draws are kept, so they come from one fixed, valid PM-MH kernel
whatever phase 1 did.

Phase 2's transition is ``step`` over a :class:`PMState` that holds what
carries to the next iteration: the position, the stored estimate, the
standard normals behind it and (``warm_start`` targets) the approximation of
the last evaluated psi.  Nothing is kept in the target, so the same state and
generator give the same step.

Correlated pseudo-marginal moves (``rho > 0``; Deligiannidis, Doucet & Pitt
2018).  The estimate of F&G eq. 25 is a deterministic function of psi and the
standard normals u (2n per importance sample) that make its draws from q.
The chain then runs on (psi, u) with target
pi(psi, u) ∝ p~(y | theta; u) p(psi) N(u | 0, I), whose psi-marginal is
p(psi | y) because the estimate is unbiased over u.  ``step`` proposes u'
= rho u + sqrt(1 - rho^2) xi, xi ~ N(0, I) (Crank-Nicolson, reversible with
respect to N(0, I)) jointly with psi', so the acceptance probability keeps
the form min(1, p~(y|theta'; u') p(psi') / (p~(y|theta; u) p(psi))) of Alg. 1
line 5.  With rho near 1 the two estimates share most of their noise, so
their ratio is much less noisy and the chain sticks less.  ``rho = 0`` is
Alg. 1 itself: the normals are then drawn by the estimator from the step's
generator exactly as before, so such chains are unchanged bit for bit.

Cost is counted in O(n^3) operations (``gpbayes.linalg.count_ops``) per
iteration, the unit of F&G Table II.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple

import numpy as np

from .. import linalg
from . import random_walk
from . import runner
from .random_walk import RWMHInfo as PMInfo
from .runner import Chain

__all__ = ["PMState", "PMInfo", "init", "step", "crank_nicolson", "deterministic_log_posterior", "run_chain"]


class PMState(NamedTuple):
    """What carries from one PM-MH iteration to the next (F&G Alg. 1, optionally correlated).

    position : psi.
    log_density : the stored noisy estimate log p~(y | theta) + log p(psi) at
        ``position``; never recomputed.
    normals : (2, n, n_imp) standard normals behind that estimate (moved by
        the Crank-Nicolson proposal when rho > 0).
    warm : the approximation of the last evaluated psi, accepted or not (the
        next evaluation starts from it when the target's ``warm_start`` is on).
    """

    position: np.ndarray
    log_density: float
    normals: np.ndarray | None = None
    warm: object = None


def _check_rho(rho) -> float:
    rho = float(rho)
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must be in [0, 1), got {rho!r}")
    return rho


def crank_nicolson(rng: np.random.Generator, normals: np.ndarray, rho: float) -> np.ndarray:
    """u' = rho u + sqrt(1 - rho^2) xi, xi ~ N(0, I) (Deligiannidis, Doucet & Pitt 2018, Sec. 2).

    Reversible with respect to N(0, I); one standard normal per entry of
    ``normals``, drawn from ``rng`` in one block.
    """
    xi = rng.standard_normal(normals.shape)
    return rho * normals + math.sqrt(1.0 - rho * rho) * xi


def init(position, target, rng: np.random.Generator, *, warm=None) -> PMState:
    """State at ``position`` with a fresh estimate ``target.estimate(position, rng, warm=warm)``."""
    position = np.array(position, dtype=np.float64)
    est = target.estimate(position, rng, warm=warm)
    value = random_walk._checked(est.value, position)
    if value == -np.inf:
        raise ValueError(f"initial position {position} has zero density")
    return PMState(position, value, est.normals, est.approximation if est.approximation is not None else warm)


def step(rng: np.random.Generator, state: PMState, target, proposal_factor: np.ndarray,
         rho: float = 0.0) -> tuple[PMState, PMInfo]:
    """One PM-MH iteration (F&G Alg. 1), correlated when ``rho > 0``.

    ``target`` provides ``estimate(psi, rng, warm=, normals=)`` (a
    ``gpbayes.estimators.PseudoMarginalTarget``).  Draws, in order: the
    proposal's p standard normals, (rho > 0) the Crank-Nicolson innovations,
    (rho = 0) the estimator's own normals, and the acceptance uniform.
    """
    rho = _check_rho(rho)
    with linalg.count_ops() as ops:
        # step 1 (Alg. 1 line 1): propose psi' = psi + L z
        z = rng.standard_normal(state.position.shape[0])
        proposal = state.position + proposal_factor @ z
        # step 2 (lines 2-4): estimate at psi' -- with rho > 0 from u' = rho u + sqrt(1 - rho^2) xi
        normals = None
        if rho > 0.0:
            if state.normals is None:
                raise ValueError("rho > 0 needs the state's importance normals (state.normals is None)")
            normals = crank_nicolson(rng, state.normals, rho)
        est = target.estimate(proposal, rng, warm=state.warm, normals=normals)
        value = random_walk._checked(est.value, proposal)
        # step 3 (lines 5-6): accept/reject (psi', u') against the *stored* current estimate
        log_ratio = value - state.log_density
        acc_prob = 1.0 if log_ratio >= 0 else float(np.exp(log_ratio))
        accepted = bool(np.log(rng.uniform()) < log_ratio)
    warm = est.approximation if est.approximation is not None else state.warm
    if accepted:
        new_state = PMState(proposal, value, est.normals, warm)
    else:
        new_state = PMState(state.position, state.log_density, state.normals, warm)
    return new_state, PMInfo(accepted, acc_prob, value, ops.cubic)


def deterministic_log_posterior(target, adapt_on: str = "laplace"):
    """The deterministic approximate log posterior used in the adaptive phase.

    Returns ``(source, log_density_fn)``: ``source`` is ``target`` itself if
    it already uses the ``adapt_on`` approximation, else a copy of it
    (``dataclasses.replace``) with ``approx=adapt_on`` and the default
    options of that approximation (the options of one method do not apply to
    the other); ``log_density_fn(psi, rng)`` is
    ``source.approx_log_posterior(psi)`` and never uses ``rng``; for a
    ``PseudoMarginalTarget`` it is ``source.deterministic_log_density()``,
    which carries the warm start (``warm_start`` targets) in the random-walk
    chain's state.
    """
    if adapt_on not in ("laplace", "ep"):
        raise ValueError(f"adapt_on must be 'laplace' or 'ep', got {adapt_on!r}")
    source = target
    if getattr(target, "approx", adapt_on) != adapt_on:
        source = dataclasses.replace(target, approx=adapt_on, approx_options={})
    if hasattr(source, "deterministic_log_density"):
        return source, source.deterministic_log_density()

    def log_density_fn(psi, rng=None):
        return source.approx_log_posterior(psi)

    return source, log_density_fn


def run_chain(
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
    rho: float = 0.0,
    callback=None,
) -> Chain:
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
    initial_scale, adapt_covariance : passed to ``random_walk.run_chain``
        (default scale 2.38 / sqrt(p); covariance re-estimated at 1/2 and 3/4
        of phase 1 when p > 1; for p = 1 only the scale is adapted).
    rho : correlation of the importance normals between iterations of phase
        2 (correlated pseudo-marginal, module docstring); 0 (default) is
        F&G Alg. 1.  rho > 0 needs a target with ``estimate`` (a
        ``PseudoMarginalTarget``).

    Phase 1 is ``random_walk.run_chain`` with ``n_burn=n_adapt`` adapted
    iterations followed by one iteration with the now frozen proposal (the
    driver reports positions only for frozen draws), whose end point starts
    phase 2.  All ``n_adapt + 1`` iterations evaluate only the deterministic
    approximation, never the importance estimate.

    Returns
    -------
    :class:`~gpbayes.mcmc.runner.Chain` over the ``n_draws`` kept phase-2
    draws: ``draws`` (n_draws, p); stats ``lp`` (the stored noisy
    log-posterior estimate of the current point), ``proposal_lp``,
    ``accepted``, ``acceptance_rate``, ``n_cubic`` (O(n^3) operations per
    iteration), ``wall_time``; ``warmup`` the phase-2 burn-in (its
    ``n_cubic`` includes the first importance estimate, ``n_cubic_init``);
    ``params``: ``proposal_scale``, ``proposal_factor`` (the frozen L,
    proposal covariance L L^T), ``adapt_on``, ``adapt_acceptance``,
    ``adapt_n_cubic``, ``adapt_wall_time``, ``adapt_position`` (end point of
    phase 1), ``adapt_log_density`` (deterministic log posterior there),
    ``adapt_n_jitter``, ``adapt_max_jitter``, ``adapt_n_not_converged``,
    ``adapt_n_failed_estimates`` (phase 1's numerical trouble; phase 2's is
    in ``stats`` and ``warmup`` as for every runner chain),
    ``init_log_density`` (the first importance estimate, at
    ``adapt_position``), ``n_failures`` (target evaluations where K could not
    be factorised, if the target counts them).
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
    rho = _check_rho(rho)
    stateful = hasattr(target, "estimate")  # the PM protocol; else a plain log_density_fn(psi, rng)
    if rho > 0.0 and not stateful:
        raise ValueError("rho > 0 needs a target with estimate(psi, rng, warm=, normals=) (PseudoMarginalTarget)")
    warm = None  # the approximation phase 2 starts from (warm_start targets), carried from phase 1

    # ---- phase 1 (F&G Sec. 4.4): adapt the proposal on the deterministic approximation
    if n_adapt > 0:
        source, det_fn = deterministic_log_posterior(target, adapt_on)
        t0 = time.perf_counter()
        with linalg.count_ops() as ops:
            adapt = random_walk.run_chain(
                rng, psi0, det_fn, proposal_cov,
                n_burn=int(n_adapt), n_draws=1, target_accept=target_accept,
                initial_scale=initial_scale,
                # the empirical covariance breaks for p = 1 (np.cov returns a
                # 0-d array); in 1-D the scale adaptation alone is equivalent
                adapt_covariance=adapt_covariance and p > 1,
            )
        factor = np.array(adapt.params["proposal_factor"], dtype=np.float64)
        scale = float(adapt.params["proposal_scale"])
        position = adapt.draws[-1].copy()
        if source is target and adapt.state is not None:
            warm = getattr(adapt.state, "carry", None)  # the last phase-1 evaluation's approximation
        phase1 = dict(
            adapt_acceptance=(adapt.warmup["n_accepted"] + adapt.stats["accepted"][0]) / (n_adapt + 1),
            adapt_n_cubic=int(ops.cubic),
            adapt_wall_time=float(time.perf_counter() - t0),
            adapt_position=position.copy(),
            adapt_log_density=float(adapt.stats["lp"][-1]),
            **ops.trouble("adapt_"),  # phase 1's jitter, non-converged approximations, failed estimates
        )
    else:
        scale = initial_scale if initial_scale is not None else 2.38 / np.sqrt(p)
        factor = scale * linalg.cholesky(proposal_cov, name="proposal covariance", count=False)
        position = psi0.copy()
        phase1 = dict(adapt_acceptance=np.nan, adapt_n_cubic=0, adapt_wall_time=0.0,
                      adapt_position=position.copy(), adapt_log_density=np.nan,
                      **linalg.OpCounter().trouble("adapt_"))
    factor.setflags(write=False)  # frozen from here on

    # ---- phase 2 (F&G Alg. 1): switch to the importance estimate, proposal frozen;
    # the state stores the estimate at the current point, never recomputed
    if stateful:
        def kernel(r, st):
            return step(r, st, target, factor, rho)
    else:
        def kernel(r, st):
            return random_walk.step(r, st, target, factor)

    first = {}

    def start():
        st = init(position, target, rng, warm=warm) if stateful else random_walk.init(position, target, rng)
        first["lp"] = float(st.log_density)
        return st

    chain = runner.run_chain(rng, kernel, start, n_draws=n_draws, n_warmup=n_burn, callback=callback)
    params = dict(proposal_factor=factor, proposal_scale=float(scale), adapt_on=adapt_on, rho=rho,
                  init_log_density=first["lp"],
                  n_failures=int(getattr(target, "n_failures", 0) - failures0), **phase1)
    return dataclasses.replace(chain, params=params)
