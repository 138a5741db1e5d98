"""Hamiltonian (hybrid) Monte Carlo with a mass matrix, and step-size dual averaging.

Xiong, Smidl & Filippone, Sec. 4.3.1: "three kinds of mass matrix for HMC,
namely the identity matrix, the inverse of the approximate covariance, and
the inverse of the diagonal of the approximate covariance.  We set the
maximum leapfrog steps to be 10.  We then tune the stepsize epsilon until a
suggested acceptance rate (around 65%) is reached".

Hamiltonian H(x, p) = -log pi(x) + 1/2 p^T M^-1 p, p ~ N(0, M).  One step
(Neal 2011, Sec. 5.3.2; Duane et al. 1987):

1. draw the momentum p ~ N(0, M) and the number of leapfrog steps
   L ~ U{1, ..., max_steps} (the paper: "maximum leapfrog steps ... 10");
2. run L leapfrog steps of size epsilon (``leapfrog``):
   p <- p + eps/2 grad log pi(x);  x <- x + eps M^-1 p;  p <- p + eps/2 grad log pi(x);
3. accept the end point with probability min(1, exp(H(x, p) - H(x', p'))).

Mass matrices (``MassMatrix``), with Sigma the approximate posterior
covariance (-H)^-1 at the mode:

=========  ===================  =====================================
kind       M                    names in Xiong et al. Table 4
=========  ===================  =====================================
identity   I                    HMC-I / NUTS-I / NUTSDA-I
diagonal   diag(Sigma)^-1       HMC-D / NUTS-D / NUTSDA-D
dense      Sigma^-1             HMC-H / NUTS-H / NUTSDA-H
=========  ===================  =====================================

For ``dense`` we store the lower Cholesky factor C of M^-1 = Sigma
(hyperparameter-sized, not an O(n^3) operation) and draw p = C^-T z.

Step-size tuning (``adaptation="step_size"``, which the reproduction passes;
the library default since issue 24 is Stan's windowed warm-up, see
``chain_spec``): the paper tunes epsilon "in pilot runs"; we make the
tuning phase the dual-averaging scheme of Hoffman & Gelman (2014), Alg. 5
(HMC with dual averaging; their eq. 6), with the number of leapfrog steps
still drawn from U{1..10}, target acceptance delta = 0.65 and Xiong et al.'s
(gamma, t0, kappa) = (0.05, 30, 0.75); epsilon is then frozen at
exp(log eps-bar) for the kept draws, and the tuning cost is reported
separately (the paper's "end of tuning", Table 6).

Cost.  ``value_and_grad_fn(x) -> (log pi(x), grad)``; each call is one
gradient evaluation.  ``n_cubic`` counts what ``gpbayes.linalg`` actually
factorised (``GPRegression.log_marginal_and_grad``: one Cholesky and one
inverse from it, 2 per call); Xiong et al. Sec. 4.4 charge 1 + 2 = 3 per
gradient evaluation ("two extra O(n^3) operations ... for the computation
of the inverse of the covariance matrix C").  Every Info therefore also
carries ``n_grad_evals`` so either accounting can be applied
(``PAPER_CUBIC_PER_GRAD_EVAL``).

A non-finite log density (outside the support, failed factorisation, NaN)
inside a trajectory ends it: the step is rejected and flagged ``diverging``,
as is an energy error above ``DIVERGENCE_THRESHOLD`` (H&G's Delta_max).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from .. import linalg
from .adaptation import (  # the mass matrix lives with its adaptation; hmc.mass_matrix is the same function
    DA_GAMMA,
    MassMatrix,
    mass_matrix,
    DA_KAPPA,
    DA_T0,
    TARGET_ACCEPT,
    StepSizeAdaptation,
    resolve_adaptation,
    windowed_adaptation,
)
from . import runner
from .runner import Chain

__all__ = [
    "MassMatrix",
    "mass_matrix",
    "HMCState",
    "HMCInfo",
    "init",
    "step",
    "leapfrog",
    "integrate",
    "kinetic_energy",
    "draw_momentum",
    "find_reasonable_step_size",
    "chain_spec",
    "run_chain",
    "warmup_gradients",
    "TARGET_ACCEPT",
    "DA_GAMMA",
    "DA_T0",
    "DA_KAPPA",
    "MAX_LEAPFROG_STEPS",
    "PAPER_CUBIC_PER_GRAD_EVAL",
]

ValueAndGradFn = Callable[[np.ndarray], tuple[float, np.ndarray]]

#: Xiong et al. Sec. 4.3.1: "maximum leapfrog steps ... 10" (target acceptance and dual-averaging
#: constants are in ``gpbayes.mcmc.adaptation``).
MAX_LEAPFROG_STEPS = 10
#: Xiong et al. Sec. 4.4: value (1 Cholesky) + gradient (2 more).
PAPER_CUBIC_PER_GRAD_EVAL = 3
#: H&G's Delta_max: an energy error beyond this is a divergence.
DIVERGENCE_THRESHOLD = 1000.0


# ---------------------------------------------------------------------------
# the momentum under the mass matrix (MassMatrix, mass_matrix: gpbayes.mcmc.adaptation)
# ---------------------------------------------------------------------------
def velocity(mass: MassMatrix, p: np.ndarray) -> np.ndarray:
    """dx/dt = M^-1 p."""
    if mass.inv_chol is None:
        return mass.inv_diag * p
    C = mass.inv_chol
    return C @ (C.T @ p)


def kinetic_energy(mass: MassMatrix, p: np.ndarray) -> float:
    """1/2 p^T M^-1 p."""
    if mass.inv_chol is None:
        return 0.5 * float(np.sum(mass.inv_diag * p * p))
    q = mass.inv_chol.T @ p
    return 0.5 * float(q @ q)


def draw_momentum(rng: np.random.Generator, mass: MassMatrix) -> np.ndarray:
    """p ~ N(0, M)."""
    z = rng.standard_normal(mass.dim)
    if mass.inv_chol is None:
        return z / np.sqrt(mass.inv_diag)
    # Cov(C^-T z) = C^-T C^-1 = (C C^T)^-1 = M
    return linalg.solve_triangular(mass.inv_chol, z, lower=True, trans=True)


# ---------------------------------------------------------------------------
# integrator
# ---------------------------------------------------------------------------
def _checked(value, grad, x):
    value = float(value)
    if value == math.inf:
        raise FloatingPointError(f"log density is +inf at {np.array2string(x, precision=4)}")
    if math.isnan(value):
        value = -math.inf
    grad = np.asarray(grad, dtype=np.float64)
    if math.isfinite(value) and not np.all(np.isfinite(grad)):
        value = -math.inf  # a finite value with a broken gradient cannot be integrated
    return value, grad


def leapfrog(
    value_and_grad_fn: ValueAndGradFn,
    mass: MassMatrix,
    position: np.ndarray,
    momentum: np.ndarray,
    grad: np.ndarray,
    step_size: float,
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """One leapfrog step; returns (x', p', log pi(x'), grad log pi(x')).  One gradient evaluation."""
    p = momentum + 0.5 * step_size * grad
    x = position + step_size * velocity(mass, p)
    value, g = _checked(*value_and_grad_fn(x), x)
    if not math.isfinite(value):
        return x, p, -math.inf, g
    p = p + 0.5 * step_size * g
    return x, p, value, g


def integrate(value_and_grad_fn, mass, position, momentum, grad, step_size, n_steps):
    """``n_steps`` leapfrog steps; stops early at a non-finite log density.

    Returns (x, p, value, grad, n_grad_evals).
    """
    x, p, value, g = position, momentum, None, grad
    for i in range(n_steps):
        x, p, value, g = leapfrog(value_and_grad_fn, mass, x, p, g, step_size)
        if not math.isfinite(value):
            return x, p, value, g, i + 1
    return x, p, value, g, n_steps


# ---------------------------------------------------------------------------
# HMC step
# ---------------------------------------------------------------------------
class HMCState(NamedTuple):
    """State of HMC (Neal 2011): the position, its log density and the gradient there."""

    position: np.ndarray
    log_density: float
    grad: np.ndarray


class HMCInfo(NamedTuple):
    """What one HMC transition did: acceptance min(1, exp(-Delta H)) (Neal 2011; step 3 of the
    module's algorithm), the leapfrog steps L drawn and taken, the energy error, divergence, counted
    O(n^3) operations.
    """

    accepted: bool
    acceptance_prob: float
    n_cubic: int  # O(n^3) operations counted by gpbayes.linalg in this step
    n_grad_evals: int  # = n_leapfrog (the trajectory may end early at a divergence)
    n_leapfrog: int  # L drawn for this step
    energy_error: float  # H(end) - H(start); +inf at a divergence
    diverging: bool


def init(position, value_and_grad_fn: ValueAndGradFn) -> HMCState:
    """The HMC state at ``position``: its log density and gradient (refused if not finite)."""
    x = np.array(position, dtype=np.float64)
    value, g = _checked(*value_and_grad_fn(x), x)
    if not math.isfinite(value):
        raise ValueError(f"initial position {x} has log density {value}")
    return HMCState(x, value, g)


def step(
    rng: np.random.Generator,
    state: HMCState,
    value_and_grad_fn: ValueAndGradFn,
    step_size: float,
    mass: MassMatrix,
    max_steps: int = MAX_LEAPFROG_STEPS,
    *,
    n_steps: int | None = None,
    step_size_jitter: float = 0.0,
) -> tuple[HMCState, HMCInfo]:
    """One HMC transition with L ~ U{1, ..., max_steps} leapfrog steps of size ``step_size``.

    Options (Neal 2011, Sec. 5.4.2): ``n_steps`` fixes L instead of
    drawing it (``max_steps`` is then unused); ``step_size_jitter`` j > 0
    draws the step size of this transition, eps_t ~ U[eps (1 - j), eps (1 + j)],
    after L, which keeps a fixed L from tracing a periodic trajectory.
    With the defaults the random numbers drawn are those of the plain step.
    """
    with linalg.count_ops() as ops:
        # step 1: momentum, trajectory length (and step size)
        p0 = draw_momentum(rng, mass)
        n_steps = int(rng.integers(1, max_steps + 1)) if n_steps is None else int(n_steps)
        if step_size_jitter > 0:
            step_size = step_size * (1.0 + step_size_jitter * (2.0 * rng.uniform() - 1.0))
        h0 = -state.log_density + kinetic_energy(mass, p0)
        # step 2: leapfrog trajectory
        x, p, value, g, n_grad = integrate(
            value_and_grad_fn, mass, state.position, p0, state.grad, step_size, n_steps
        )
        # step 3: Metropolis accept/reject on the total energy
        if math.isfinite(value):
            energy_error = (-value + kinetic_energy(mass, p)) - h0
        else:
            energy_error = math.inf
        diverging = not energy_error < DIVERGENCE_THRESHOLD
        acc_prob = 1.0 if energy_error <= 0 else math.exp(-energy_error)
        accepted = bool(math.isfinite(energy_error) and math.log(rng.uniform()) < -energy_error)
    new = HMCState(x, value, g) if accepted else state
    return new, HMCInfo(accepted, acc_prob, ops.cubic, n_grad, n_steps, energy_error, diverging)


def find_reasonable_step_size(
    rng: np.random.Generator,
    state: HMCState,
    value_and_grad_fn: ValueAndGradFn,
    mass: MassMatrix,
    initial: float = 1.0,
    max_iter: int = 100,
) -> tuple[float, int]:
    """H&G Alg. 4 (heuristic initial eps); returns (eps, number of gradient evaluations).

    eps = 1, r ~ N(0, M); a = 2 I[p(x', r')/p(x, r) > 1/2] - 1; double
    (a = 1) or halve (a = -1) eps while (p(x', r')/p(x, r))^a > 2^-a.
    """
    eps = initial
    r = draw_momentum(rng, mass)
    h0 = -state.log_density + kinetic_energy(mass, r)

    def log_ratio(e):
        x, p, v, _ = leapfrog(value_and_grad_fn, mass, state.position, r, state.grad, e)
        return h0 - (-v + kinetic_energy(mass, p)) if math.isfinite(v) else -math.inf

    lr = log_ratio(eps)
    n = 1
    a = 1.0 if lr > math.log(0.5) else -1.0
    while a * lr > -a * math.log(2.0) and n < max_iter:
        eps = eps * 2.0**a
        lr = log_ratio(eps)
        n += 1
    return eps, n


# ---------------------------------------------------------------------------
# chain: dual-averaging warm-up, then frozen step size (a use of the runner)
# ---------------------------------------------------------------------------
def chain_spec(
    position0,
    value_and_grad_fn: ValueAndGradFn,
    mass: MassMatrix | None = None,
    *,
    n_tune: int,
    step_size: float | None = None,
    max_steps: int = MAX_LEAPFROG_STEPS,
    adaptation: str = "windowed",
    mass_adaptation: str = "diagonal",
    target_accept: float | None = None,
    gamma: float = DA_GAMMA,
    t0: float | None = None,
    kappa: float = DA_KAPPA,
) -> runner.ChainSpec:
    """HMC: ``n_tune`` warm-up iterations, then ``n_draws`` kept ones with L ~ U{1..max_steps}.

    Warm-up (issue 24): by default Stan's and NumPyro's (``adaptation="windowed"``,
    ``adaptation.windowed_adaptation``): dual averaging of eps towards ``target_accept`` = 0.8
    (t0 = 10), M^-1 from the regularised variances of the draws of Stan's slow windows
    (``mass_adaptation``: ``"diagonal"``, ``"dense"`` or ``"none"``), starting from ``mass``
    (identity if None).  Xiong et al.'s HMC, which the reproduction passes explicitly:
    ``adaptation="step_size"`` -- dual averaging of eps only (H&G Alg. 5) with delta = 0.65,
    t0 = 30 unless given, in the fixed ``mass``.  The warm-up starts from ``step_size`` or, if
    None, from H&G's Alg. 4 heuristic; with ``n_tune = 0`` ``step_size`` is used as given.
    Returns a :class:`~gpbayes.mcmc.runner.Chain` (stats ``lp``, ``accepted``,
    ``acceptance_rate``, ``n_cubic``, ``n_steps`` gradient evaluations, ``n_leapfrog``,
    ``energy_error``, ``diverging``, ``wall_time``; ``params["step_size"]`` (and ``"mass"``);
    warm-up cost in ``warmup``, whose gradient evaluations are ``warmup_gradients(chain)``).
    """
    if step_size is None and n_tune == 0:
        raise ValueError("give step_size or a tuning phase (n_tune > 0)")
    mass = mass if mass is not None else mass_matrix("identity", dim=int(np.size(position0)))
    target_accept, t0 = resolve_adaptation(adaptation, target_accept, t0)

    def find(r, st, m, initial=1.0):
        return find_reasonable_step_size(r, st, value_and_grad_fn, m, initial)

    if adaptation == "step_size" or n_tune == 0:
        adapt = StepSizeAdaptation(
            lambda eps: _kernel(value_and_grad_fn, eps, mass, max_steps), step_size,
            find_step_size=lambda r, st: find(r, st, mass),
            target_accept=target_accept, gamma=gamma, t0=t0, kappa=kappa,
        )
    else:
        adapt = windowed_adaptation(
            lambda eps, m: _kernel(value_and_grad_fn, eps, m, max_steps), mass, int(n_tune), find,
            mass_adaptation=mass_adaptation, step_size=step_size, target_accept=target_accept, gamma=gamma,
            t0=t0, kappa=kappa)
    return runner.ChainSpec(lambda: init(position0, value_and_grad_fn), None, int(n_tune), adapt)


def _kernel(value_and_grad_fn, eps, mass, max_steps):
    return lambda r, st: step(r, st, value_and_grad_fn, eps, mass, max_steps)


def run_chain(rng: np.random.Generator, position0, value_and_grad_fn: ValueAndGradFn, mass: MassMatrix | None = None, *,
              n_tune: int, n_draws: int, callback=None, **options) -> Chain:
    """``runner.run_spec`` of :func:`chain_spec` (its options, plus ``n_draws`` and ``callback``)."""
    return runner.run_spec(rng, chain_spec(position0, value_and_grad_fn, mass, n_tune=n_tune, **options),
                           n_draws=n_draws, callback=callback)


def warmup_gradients(chain: Chain) -> int:
    """Gradient evaluations of an HMC/NUTS warm-up: the initial one, H&G Alg. 4's, and the warm-up steps'."""
    w = chain.warmup
    return int(1 + w.get("adapt_n_steps", 0) + w.get("n_steps", 0))

