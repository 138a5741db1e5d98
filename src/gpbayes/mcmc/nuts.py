"""The No-U-Turn Sampler: fixed step (H&G Alg. 3) and with dual averaging (Alg. 6).

Hoffman & Gelman (2014), "The No-U-Turn Sampler", Alg. 3 (efficient NUTS)
and Alg. 6 (NUTS with dual averaging), with a mass matrix M (see
``gpbayes.mcmc.hmc``).  Xiong et al. Sec. 4.3.1: NUTS with "the stepsize of
NUTS [set] to 0.1"; NUTSDA with "gamma = 0.05, t0 = 30, kappa = 0.75" (H&G
suggest t0 = 10; we follow Xiong et al.) and delta = 0.65.

One transition (Alg. 3, step numbers ours, in the order of the pseudo-code):

1. r0 ~ N(0, M);  slice variable log u = log pi(x) - K(r0) - e, e ~ Exp(1)
   (i.e. u ~ U[0, exp(L(x) - K(r0))] in log space);
2. x- = x+ = x, r- = r+ = r0, j = 0, n = 1, s = 1;
3. while s = 1: draw a direction v_j in {-1, +1}; extend the left or right
   end by BuildTree(.., v_j, j, eps) (2^j leapfrog steps);
4. if the new subtree's s' = 1, move to its proposal x' with probability
   min(1, n'/n) (Alg. 3's biased progressive sampling); n = n + n';
5. s = s' I[(x+ - x-) . r- >= 0] I[(x+ - x-) . r+ >= 0]; j = j + 1.

BuildTree (Alg. 3): at depth 0 one leapfrog step, n' = I[log u <= L(x') -
K(r')], s' = I[L(x') - K(r') > log u - Delta_max]; at depth j two subtrees
of depth j - 1, the second only if the first has s' = 1, the proposal
replaced by the second's with probability n''/(n' + n''), and the U-turn
test applied to the combined subtree.  Alg. 6 additionally accumulates
alpha' = sum min(1, exp(L(x') - K(r') - L(x0) + K(r0))) and n_alpha' =
number of leapfrog steps, whose ratio is the adaptation statistic; as in
H&G Alg. 6 and Sec. 3.2.3 ("B_t^final", the states explored during the
final doubling iteration) it is taken over the *last* subtree only (Stan
instead averages over the whole trajectory).

Choices not fixed by the papers (documented deviations):

* Mass matrix and the U-turn criterion.  H&G use M = I.  With a mass
  matrix we run their algorithm unchanged in the whitened coordinates
  x~ = A^T x (M = A A^T), where the mass is the identity; there the
  criterion (x~+ - x~-) . r~ equals (x+ - x-) . r in the original
  coordinates (r~ = A^-1 r), which is what we test.
* Maximum tree depth ``max_tree_depth = 10`` (at most 1023 leapfrog steps
  per transition), as in Stan; H&G's pseudo-code has none.
* Delta_max = 1000 (H&G's value); a subtree that stops on it, or on a
  non-finite log density, makes the transition ``diverging``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from .. import linalg
from .adaptation import DA_GAMMA, DA_KAPPA, DA_T0, TARGET_ACCEPT, StepSizeAdaptation
from .hmc import (
    DIVERGENCE_THRESHOLD,
    HMCState,
    MassMatrix,
    ValueAndGradFn,
    draw_momentum,
    find_reasonable_step_size,
    init as hmc_init,
    kinetic_energy,
    leapfrog,
)
from . import runner
from .runner import Chain

__all__ = ["NUTSState", "NUTSInfo", "init", "step", "chain_spec", "run_chain", "XIONG_STEP_SIZE", "MAX_TREE_DEPTH"]

NUTSState = HMCState  # position, log density, gradient
#: Xiong et al. Sec. 4.3.1: "we set the stepsize of NUTS to 0.1".
XIONG_STEP_SIZE = 0.1
MAX_TREE_DEPTH = 10


class NUTSInfo(NamedTuple):
    """What one NUTS transition did (Hoffman & Gelman 2014, Alg. 6): the dual-averaging statistic
    alpha / n_alpha, tree depth, leapfrog steps, divergence, the energy at the start, O(n^3) operations.
    """

    accepted: bool  # the position changed
    acceptance_prob: float  # alpha / n_alpha of Alg. 6 over the final doubling (the DA statistic)
    n_cubic: int  # O(n^3) operations counted by gpbayes.linalg
    n_grad_evals: int  # = n_leapfrog
    n_leapfrog: int
    tree_depth: int  # number of doublings j
    diverging: bool
    energy: float  # H at the start of the transition


class _Tree(NamedTuple):
    x_minus: np.ndarray
    r_minus: np.ndarray
    g_minus: np.ndarray
    x_plus: np.ndarray
    r_plus: np.ndarray
    g_plus: np.ndarray
    x_prop: np.ndarray
    value_prop: float
    g_prop: np.ndarray
    n: int  # n': points in the slice
    s: bool  # s': no U-turn, no divergence
    alpha: float
    n_alpha: int
    diverging: bool


def _no_u_turn(x_minus, x_plus, r_minus, r_plus) -> bool:
    dx = x_plus - x_minus
    return bool(dx @ r_minus >= 0.0 and dx @ r_plus >= 0.0)


def _build_tree(rng, fn, mass, x, r, g, log_u, v, j, eps, joint0) -> _Tree:
    if j == 0:
        # base case: one leapfrog step in direction v
        x1, r1, value, g1 = leapfrog(fn, mass, x, r, g, v * eps)
        joint = value - kinetic_energy(mass, r1) if math.isfinite(value) else -math.inf
        n1 = int(log_u <= joint)
        s1 = joint > log_u - DIVERGENCE_THRESHOLD
        alpha = 1.0 if joint >= joint0 else math.exp(joint - joint0)  # exp(-inf) = 0
        return _Tree(x1, r1, g1, x1, r1, g1, x1, value, g1, n1, s1, alpha, 1, not s1)
    # recursion: build the left and right subtrees
    t = _build_tree(rng, fn, mass, x, r, g, log_u, v, j - 1, eps, joint0)
    if not t.s:
        return t
    if v == -1:
        t2 = _build_tree(rng, fn, mass, t.x_minus, t.r_minus, t.g_minus, log_u, v, j - 1, eps, joint0)
        x_minus, r_minus, g_minus = t2.x_minus, t2.r_minus, t2.g_minus
        x_plus, r_plus, g_plus = t.x_plus, t.r_plus, t.g_plus
    else:
        t2 = _build_tree(rng, fn, mass, t.x_plus, t.r_plus, t.g_plus, log_u, v, j - 1, eps, joint0)
        x_minus, r_minus, g_minus = t.x_minus, t.r_minus, t.g_minus
        x_plus, r_plus, g_plus = t2.x_plus, t2.r_plus, t2.g_plus
    x_prop, value_prop, g_prop = t.x_prop, t.value_prop, t.g_prop
    n_tot = t.n + t2.n
    # with probability n'' / (n' + n''), take the second subtree's proposal
    if n_tot > 0 and rng.uniform() < t2.n / n_tot:
        x_prop, value_prop, g_prop = t2.x_prop, t2.value_prop, t2.g_prop
    s = t2.s and _no_u_turn(x_minus, x_plus, r_minus, r_plus)
    return _Tree(x_minus, r_minus, g_minus, x_plus, r_plus, g_plus, x_prop, value_prop, g_prop,
                 n_tot, s, t.alpha + t2.alpha, t.n_alpha + t2.n_alpha, t2.diverging)


def init(position, value_and_grad_fn: ValueAndGradFn) -> NUTSState:
    """The NUTS state at ``position`` (HMC's: log density and gradient)."""
    return hmc_init(position, value_and_grad_fn)


def step(
    rng: np.random.Generator,
    state: NUTSState,
    value_and_grad_fn: ValueAndGradFn,
    step_size: float,
    mass: MassMatrix,
    max_tree_depth: int = MAX_TREE_DEPTH,
) -> tuple[NUTSState, NUTSInfo]:
    """One NUTS transition (H&G Alg. 3; the Alg. 6 statistics are in the Info)."""
    with linalg.count_ops() as ops:
        x0 = state.position
        # step 1: momentum and slice variable
        r0 = draw_momentum(rng, mass)
        joint0 = state.log_density - kinetic_energy(mass, r0)
        log_u = joint0 - rng.standard_exponential()
        # step 2: initialise the tree
        x_minus = x_plus = x0
        r_minus = r_plus = r0
        g_minus = g_plus = state.grad
        new = state
        n, s, j = 1, True, 0
        alpha, n_alpha, n_leapfrog, diverging = 0.0, 0, 0, False
        # step 3: doublings
        while s and j < max_tree_depth:
            v = -1 if rng.uniform() < 0.5 else 1
            if v == -1:
                t = _build_tree(rng, value_and_grad_fn, mass, x_minus, r_minus, g_minus,
                                log_u, v, j, step_size, joint0)
                x_minus, r_minus, g_minus = t.x_minus, t.r_minus, t.g_minus
            else:
                t = _build_tree(rng, value_and_grad_fn, mass, x_plus, r_plus, g_plus,
                                log_u, v, j, step_size, joint0)
                x_plus, r_plus, g_plus = t.x_plus, t.r_plus, t.g_plus
            # Alg. 6 adapts on the states of the *final* doubling only (H&G Sec.
            # 3.2.3, "B_t^final"), so alpha, n_alpha are overwritten, not summed
            alpha, n_alpha = t.alpha, t.n_alpha
            n_leapfrog += t.n_alpha
            diverging = diverging or t.diverging
            # step 4: progressive sampling, min(1, n'/n)
            if t.s and rng.uniform() < t.n / n:
                new = NUTSState(t.x_prop, t.value_prop, t.g_prop)
            n += t.n
            # step 5: stop at a U-turn of the whole trajectory
            s = t.s and _no_u_turn(x_minus, x_plus, r_minus, r_plus)
            j += 1
    accepted = new is not state
    info = NUTSInfo(accepted, alpha / max(n_alpha, 1), ops.cubic, n_leapfrog, n_leapfrog, j, diverging, -joint0)
    return new, info


def chain_spec(
    position0,
    value_and_grad_fn: ValueAndGradFn,
    mass: MassMatrix,
    *,
    n_adapt: int = 0,
    step_size: float | None = XIONG_STEP_SIZE,
    max_tree_depth: int = MAX_TREE_DEPTH,
    target_accept: float = TARGET_ACCEPT,
    gamma: float = DA_GAMMA,
    t0: float = DA_T0,
    kappa: float = DA_KAPPA,
) -> runner.ChainSpec:
    """NUTS (``n_adapt = 0``, fixed ``step_size``) or NUTSDA (``n_adapt > 0``, H&G Alg. 6).

    For NUTSDA the first step size is ``step_size`` or, if None, H&G's Alg. 4
    heuristic; the ``n_adapt`` adaptation iterations are the warm-up (their
    cost is ``chain.warmup``, the paper's "end of tuning", Table 6) and the
    ``n_draws`` kept iterations use eps-bar_{M_adapt}.  Returns a
    :class:`~gpbayes.mcmc.runner.Chain` (stats ``lp``, ``accepted``,
    ``acceptance_rate``, ``n_cubic``, ``n_steps``, ``n_leapfrog``,
    ``tree_depth``, ``diverging``, ``energy``, ``wall_time``;
    ``params["step_size"]``).
    """

    def make_step(eps):
        return lambda r, st: step(r, st, value_and_grad_fn, eps, mass, max_tree_depth)

    start = lambda: init(position0, value_and_grad_fn)  # noqa: E731
    if n_adapt > 0:
        adapt = StepSizeAdaptation(
            make_step, step_size,
            find_step_size=lambda r, st: find_reasonable_step_size(r, st, value_and_grad_fn, mass),
            target_accept=target_accept, gamma=gamma, t0=t0, kappa=kappa,
        )
        return runner.ChainSpec(start, None, int(n_adapt), adapt)
    if step_size is None:
        raise ValueError("NUTS without adaptation needs a step_size")
    return runner.ChainSpec(start, make_step(float(step_size)), 0)


def run_chain(rng: np.random.Generator, position0, value_and_grad_fn: ValueAndGradFn, mass: MassMatrix, *,
              n_draws: int, n_adapt: int = 0, step_size: float | None = XIONG_STEP_SIZE, callback=None,
              **options) -> Chain:
    """``runner.run_spec`` of :func:`chain_spec` (its options, plus ``n_draws`` and ``callback``)."""
    spec = chain_spec(position0, value_and_grad_fn, mass, n_adapt=n_adapt, step_size=step_size, **options)
    chain = runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)
    if n_adapt > 0:
        return chain
    return dataclasses.replace(chain, params={"step_size": float(step_size)})
