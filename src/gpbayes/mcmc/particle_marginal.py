"""Pseudo-marginal MH that carries a latent draw: particle-marginal Metropolis-Hastings.

Andrieu, Doucet & Holenstein (2010), Sec. 2.4.2 (PMMH), with the "SMC" a
single importance-sampling step -- the estimate of Filippone & Girolami
(2014), eq. 25 -- so that the chain targets p(theta, f | y), not only
p(theta | y).  One step:

1. propose psi' = psi + L z, z ~ N(0, I), with L L^T the proposal covariance;
2. estimate p~(y | theta') from N_imp draws f_i ~ q(f | y, theta') and pick one
   of them, f', with probability w_i / sum_j w_j
   (``log_density_and_latent_fn(psi', rng)``, e.g.
   ``gpbayes.estimators.PseudoMarginalTarget.log_density_and_latent``);
3. accept with probability min(1, p~(psi'|y) / p~(psi|y)) against the
   *stored* estimate; on acceptance the state takes (psi', p~(psi'|y), f'),
   otherwise it keeps all three.

The state therefore holds the position, the stored noisy log-density
estimate and the latent f that came with that estimate.  By ADH's Thm. 4 the
pairs (theta, f) of the chain are draws from p(theta, f | y) -- what F&G's
predictive eq. 20 averages over -- at no O(n^3) cost beyond the estimate.
Without the latent this is ``gpbayes.mcmc.random_walk.step`` (F&G Alg. 1),
and both consume the generator in the same order: the proposal's normals,
the estimate's draws, the selection uniform (here only), the acceptance
uniform.

``log_density_and_latent_fn(position, rng) -> (value, latent)``; a value of
-inf (outside the prior's support, failed factorisation) is rejected and its
latent (None) never stored; NaN raises.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .. import linalg
from . import runner
from .random_walk import _checked  # NaN raises, as in F&G Alg. 1's step
from .runner import Chain

__all__ = ["PMMHState", "PMMHInfo", "init", "step", "run_chain"]

LogDensityAndLatentFn = Callable[[np.ndarray, np.random.Generator], tuple[float, "np.ndarray | None"]]


class PMMHState(NamedTuple):
    """What carries to the next PMMH step (ADH 2010 Sec. 2.4.2: theta(i), p^(y|theta(i)), X(i))."""

    position: np.ndarray  # psi
    log_density: float  # the stored estimate log p~(y | theta) + log p(psi), never recomputed
    latent: np.ndarray  # f selected from the importance draws of that estimate


class PMMHInfo(NamedTuple):
    """What one PMMH step did."""

    accepted: bool
    acceptance_prob: float
    proposal_log_density: float
    n_cubic: int  # O(n^3) operations spent by this step


def init(position, log_density_and_latent_fn: LogDensityAndLatentFn, rng: np.random.Generator) -> PMMHState:
    """PMMH state at ``position`` with a fresh estimate and its selected latent (ADH 2010 Sec. 2.4.2, step 1)."""
    position = np.array(position, dtype=np.float64)
    value, latent = log_density_and_latent_fn(position, rng)
    value = _checked(value, position)
    if value == -np.inf:
        raise ValueError(f"initial position {position} has zero density")
    return PMMHState(position, value, np.asarray(latent, dtype=np.float64))


def step(
    rng: np.random.Generator,
    state: PMMHState,
    log_density_and_latent_fn: LogDensityAndLatentFn,
    proposal_factor: np.ndarray,
) -> tuple[PMMHState, PMMHInfo]:
    """One PMMH step (ADH 2010 Sec. 2.4.2, step 2; F&G Alg. 1 with the latent); L = ``proposal_factor``."""
    with linalg.count_ops() as ops:
        # step 1: propose psi' = psi + L z
        z = rng.standard_normal(state.position.shape[0])
        proposal = state.position + proposal_factor @ z
        # step 2: estimate p~(y | theta') and select f' from its importance draws
        value, latent = log_density_and_latent_fn(proposal, rng)
        value = _checked(value, proposal)
        # step 3: accept/reject against the *stored* estimate; (psi, estimate, f) move together
        log_ratio = value - state.log_density
        acc_prob = 1.0 if log_ratio >= 0 else float(np.exp(log_ratio))
        accepted = bool(np.log(rng.uniform()) < log_ratio)
    new_state = PMMHState(proposal, value, latent) if accepted else state
    return new_state, PMMHInfo(accepted, acc_prob, value, ops.cubic)


def run_chain(rng: np.random.Generator, log_density_and_latent_fn: LogDensityAndLatentFn, position0,
              proposal_factor, *, n_burn: int, n_draws: int, callback=None) -> Chain:
    """PMMH with a frozen proposal, carrying the selected latent draw (a use of ``runner.run_chain``).

    Starts at ``position0`` with a fresh estimate and its selected latent
    (``init``), then ``n_burn`` discarded and ``n_draws`` kept iterations of
    ``step`` (propose, estimate at the proposal and select f' ∝ w_k, accept
    against the *stored* estimate; psi, estimate and f move together).
    Returns a :class:`~gpbayes.mcmc.runner.Chain`: ``draws`` (n_draws, p),
    stats ``lp`` (the stored estimates), ``accepted``, ``acceptance_rate``,
    ``n_cubic``, ...; ``extra["latent"]`` (n_draws, n) the f carried at every
    kept draw; ``warmup`` the burn-in (``n_accepted``; its ``n_cubic``
    includes the first estimate).
    """
    factor = np.asarray(proposal_factor, dtype=np.float64)
    n_burn, n_draws = int(n_burn), int(n_draws)
    if n_draws < 1 or n_burn < 0:
        raise ValueError(f"need n_draws >= 1, n_burn >= 0; got {n_draws}, {n_burn}")
    fn = log_density_and_latent_fn
    return runner.run_chain(rng, lambda r, st: step(r, st, fn, factor), lambda: init(position0, fn, rng),
                            n_draws=n_draws, n_warmup=n_burn, callback=callback,
                            record=lambda st, info: {"latent": st.latent})
