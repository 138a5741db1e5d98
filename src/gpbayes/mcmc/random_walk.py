"""Random-walk Metropolis-Hastings, exact or pseudo-marginal.

One step (Filippone & Girolami 2014, Alg. 1, which reduces to plain MH when
the log-density is exact):

1. propose psi' = psi + L z, z ~ N(0, I), with L L^T the proposal covariance;
2. evaluate (or estimate) log p~(psi' | y) with the step's own generator;
3. accept with probability min(1, p~(psi'|y) / p~(psi|y)).

The state stores the current log-density value.  For a pseudo-marginal
target that value is the *noisy estimate* made when the point was accepted,
and it is never recomputed: this is what makes the chain target the exact
posterior (Andrieu & Roberts 2009).

``log_density_fn(position, rng) -> float`` may ignore ``rng`` (exact target).
A value of -inf (outside the prior's support) is rejected; NaN raises.

A log density that needs something from its previous evaluation (a warm
start: ``PseudoMarginalTarget.deterministic_log_density``) provides
``evaluate_with_carry(position, rng, carry) -> (value, carry')``; the chain
keeps ``carry'`` of the last evaluation -- accepted or not -- in
``RWMHState.carry`` and passes it to the next, so the same state and
generator give the same step.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .. import linalg
from . import runner
from .adaptation import RandomWalkAdaptation
from .runner import Chain

__all__ = ["RWMHState", "RWMHInfo", "init", "step", "chain_spec", "run_chain"]

LogDensityFn = Callable[[np.ndarray, np.random.Generator], float]


class RWMHState(NamedTuple):
    """State of random-walk Metropolis: the position and its log density."""

    position: np.ndarray
    log_density: float
    carry: object = None  # what the last evaluation passes to the next (``evaluate_with_carry``)


class RWMHInfo(NamedTuple):
    """What one random-walk MH step did: accepted, min(1, ratio), the proposal's log density and the
    O(n^3) operations spent.
    """

    accepted: bool
    acceptance_prob: float
    proposal_log_density: float
    n_cubic: int  # O(n^3) operations spent by this step


def _checked(value: float, where: np.ndarray) -> float:
    value = float(value)
    if np.isnan(value):
        raise FloatingPointError(f"log-density is NaN at position {np.array2string(where, precision=4)}")
    return value


def _evaluate(log_density_fn, position, rng, carry):
    evaluate = getattr(log_density_fn, "evaluate_with_carry", None)
    if evaluate is None:
        return _checked(log_density_fn(position, rng), position), carry
    value, carry = evaluate(position, rng, carry)
    return _checked(value, position), carry


def init(position, log_density_fn: LogDensityFn, rng: np.random.Generator, carry=None) -> RWMHState:
    """The state at ``position``: its log density (refused if -inf); ``carry`` is passed to a log density
    with ``evaluate_with_carry`` (e.g. a pseudo-marginal target's warm start)."""
    position = np.array(position, dtype=np.float64)
    value, carry = _evaluate(log_density_fn, position, rng, carry)
    if value == -np.inf:
        raise ValueError(f"initial position {position} has zero density")
    return RWMHState(position, value, carry)


def step(
    rng: np.random.Generator,
    state: RWMHState,
    log_density_fn: LogDensityFn,
    proposal_factor: np.ndarray,
) -> tuple[RWMHState, RWMHInfo]:
    """One MH step; ``proposal_factor`` is L with proposal covariance L L^T."""
    with linalg.count_ops() as ops:
        # step 1: propose
        z = rng.standard_normal(state.position.shape[0])
        proposal = state.position + proposal_factor @ z
        # step 2: (noisy) log-density at the proposal
        value, carry = _evaluate(log_density_fn, proposal, rng, state.carry)
        # step 3: accept/reject against the *stored* current value
        log_ratio = value - state.log_density
        acc_prob = 1.0 if log_ratio >= 0 else float(np.exp(log_ratio))
        accepted = bool(np.log(rng.uniform()) < log_ratio)
    if accepted:
        new_state = RWMHState(proposal, value, carry)
    elif carry is state.carry:
        new_state = state
    else:
        new_state = RWMHState(state.position, state.log_density, carry)
    return new_state, RWMHInfo(accepted, acc_prob, value, ops.cubic)


def chain_spec(
    rng: np.random.Generator,
    position0,
    log_density_fn,
    proposal_cov: np.ndarray,
    *,
    n_burn: int,
    target_accept: float = 0.25,
    initial_scale: float | None = None,
    adapt_covariance: bool = True,
) -> runner.ChainSpec:
    """Adaptive random-walk Metropolis, the runner configuration of one chain (``runner.ChainSpec``).

    Burn-in with proposal adaptation (``adaptation.RandomWalkAdaptation``),
    then the kept draws of the frozen kernel.

    The proposal is ``s^2 * Sigma`` with ``Sigma = proposal_cov`` at the
    start; see :class:`gpbayes.mcmc.adaptation.RandomWalkAdaptation` for the
    Robbins–Monro scale and Haario covariance updates, confined to burn-in.
    After burn-in everything is frozen, so the kept draws come from one fixed,
    valid MH kernel.  ``log_density_fn(position, rng)`` may be noisy (a
    pseudo-marginal estimate): the state stores its value at the current point.

    """
    position0 = np.asarray(position0, dtype=float)

    def make_step(factor):
        return lambda r, st: step(r, st, log_density_fn, factor)

    adapt = RandomWalkAdaptation(make_step, proposal_cov, int(n_burn), target_accept=target_accept,
                                 initial_scale=initial_scale, adapt_covariance=adapt_covariance)
    return runner.ChainSpec(lambda: init(position0, log_density_fn, rng), None, int(n_burn), adapt)


def run_chain(rng: np.random.Generator, position0, log_density_fn, proposal_cov: np.ndarray, *, n_burn: int,
              n_draws: int, target_accept: float = 0.25, initial_scale: float | None = None,
              adapt_covariance: bool = True, callback=None) -> Chain:
    """Burn-in with proposal adaptation, then ``n_draws`` kept draws (``runner.run_spec`` of :func:`chain_spec`).

    Returns a :class:`~gpbayes.mcmc.runner.Chain`: ``draws``, ``stats``
    (``lp``, ``accepted``, ``acceptance_rate``, ``proposal_lp``, ``n_cubic``,
    ``wall_time``), ``warmup`` (burn-in cost and acceptance) and ``params``
    (``proposal_scale``, ``proposal_factor``).
    """
    spec = chain_spec(rng, position0, log_density_fn, proposal_cov, n_burn=n_burn, target_accept=target_accept,
                      initial_scale=initial_scale, adapt_covariance=adapt_covariance)
    return runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)
