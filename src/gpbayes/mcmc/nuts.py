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

``variant="multinomial"`` (the default of :func:`chain_spec` since issue 24;
:func:`step` keeps H&G's ``"slice"``) is the NUTS of Stan and NumPyro
(Betancourt 2017, "A Conceptual Introduction to Hamiltonian Monte Carlo",
Sec. A.3-A.4): every point of the trajectory is weighted by exp(H0 - H)
instead of the slice indicator; inside a subtree the proposal is drawn
progressively with probability w''/(w' + w''), at the top level biased
towards the new subtree with probability min(1, w_new / w_old); the U-turn
test is the generalised criterion on the sum of momenta rho,
p#_- . rho > 0 and p#_+ . rho > 0 with p# = M^-1 p, applied to every merged
subtree and, as Stan does since 2.26, to each merged pair extended by one
point of the other side; the acceptance statistic is the mean of
min(1, exp(H0 - H)) over all leapfrog steps of the transition (Stan's
``accept_stat__``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from .. import linalg
from .adaptation import (
    DA_GAMMA,
    DA_KAPPA,
    DA_T0,
    TARGET_ACCEPT,
    StepSizeAdaptation,
    resolve_adaptation,
    windowed_adaptation,
)
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
    velocity,
)
from . import runner
from .runner import Chain

__all__ = ["NUTSState", "NUTSInfo", "init", "step", "chain_spec", "run_chain", "XIONG_STEP_SIZE", "MAX_TREE_DEPTH",
           "VARIANTS"]

NUTSState = HMCState  # position, log density, gradient
#: ``"slice"``: Hoffman & Gelman 2014 Alg. 3/6; ``"multinomial"``: Stan/NumPyro (Betancourt 2017)
VARIANTS = ("slice", "multinomial")
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


class _MTree(NamedTuple):
    """A subtree of multinomial NUTS, its ends in trajectory (time) order."""

    x_minus: np.ndarray
    r_minus: np.ndarray
    g_minus: np.ndarray
    x_plus: np.ndarray
    r_plus: np.ndarray
    g_plus: np.ndarray
    x_prop: np.ndarray
    value_prop: float
    g_prop: np.ndarray
    log_w: float  # log sum of exp(H0 - H) over the subtree's points
    rho: np.ndarray  # sum of the momenta
    s: bool  # valid: no divergence, no U-turn inside
    sum_accept: float  # sum of min(1, exp(H0 - H))
    n_leapfrog: int
    diverging: bool


def _criterion(mass, r_minus, r_plus, rho) -> bool:
    """Generalised no-U-turn criterion: p#_- . rho > 0 and p#_+ . rho > 0 (p# = M^-1 p)."""
    return bool(velocity(mass, r_minus) @ rho > 0.0 and velocity(mass, r_plus) @ rho > 0.0)


def _merged_criterion(mass, left: _MTree, right: _MTree, rho) -> bool:
    """The criterion on the merged trajectory and on each side extended by the neighbouring point."""
    return (_criterion(mass, left.r_minus, right.r_plus, rho)
            and _criterion(mass, left.r_minus, right.r_minus, left.rho + right.r_minus)
            and _criterion(mass, left.r_plus, right.r_plus, right.rho + left.r_plus))


def _build_tree_multinomial(rng, fn, mass, x, r, g, v, j, eps, h0) -> _MTree:
    if j == 0:
        x1, r1, value, g1 = leapfrog(fn, mass, x, r, g, v * eps)
        h = -value + kinetic_energy(mass, r1) if math.isfinite(value) else math.inf
        if math.isnan(h):
            h = math.inf
        diverging = not (h - h0 <= DIVERGENCE_THRESHOLD)
        log_w = h0 - h
        accept = 1.0 if log_w >= 0 else math.exp(log_w)
        return _MTree(x1, r1, g1, x1, r1, g1, x1, value, g1, log_w, r1, not diverging, accept, 1, diverging)
    t = _build_tree_multinomial(rng, fn, mass, x, r, g, v, j - 1, eps, h0)
    if not t.s:
        return t
    if v == -1:
        t2 = _build_tree_multinomial(rng, fn, mass, t.x_minus, t.r_minus, t.g_minus, v, j - 1, eps, h0)
        left, right = t2, t
    else:
        t2 = _build_tree_multinomial(rng, fn, mass, t.x_plus, t.r_plus, t.g_plus, v, j - 1, eps, h0)
        left, right = t, t2
    n_lf, acc = t.n_leapfrog + t2.n_leapfrog, t.sum_accept + t2.sum_accept
    if not t2.s:
        return t._replace(s=False, sum_accept=acc, n_leapfrog=n_lf, diverging=t2.diverging)
    log_w = float(np.logaddexp(t.log_w, t2.log_w))
    x_prop, value_prop, g_prop = t.x_prop, t.value_prop, t.g_prop
    # uniform progressive sampling inside a subtree: the second half's proposal w.p. w''/(w' + w'')
    if rng.uniform() < math.exp(t2.log_w - log_w):
        x_prop, value_prop, g_prop = t2.x_prop, t2.value_prop, t2.g_prop
    rho = left.rho + right.rho
    s = _merged_criterion(mass, left, right, rho)
    return _MTree(left.x_minus, left.r_minus, left.g_minus, right.x_plus, right.r_plus, right.g_plus,
                  x_prop, value_prop, g_prop, log_w, rho, s, acc, n_lf, False)


def _step_multinomial(rng, state, fn, step_size, mass, max_tree_depth):
    x0 = state.position
    r0 = draw_momentum(rng, mass)
    h0 = -state.log_density + kinetic_energy(mass, r0)
    tree = _MTree(x0, r0, state.grad, x0, r0, state.grad, x0, state.log_density, state.grad,
                  0.0, r0.copy(), True, 0.0, 0, False)
    new = state
    j, sum_accept, n_leapfrog, diverging = 0, 0.0, 0, False
    while j < max_tree_depth:
        v = -1 if rng.uniform() < 0.5 else 1
        if v == -1:
            t = _build_tree_multinomial(rng, fn, mass, tree.x_minus, tree.r_minus, tree.g_minus, v, j, step_size, h0)
        else:
            t = _build_tree_multinomial(rng, fn, mass, tree.x_plus, tree.r_plus, tree.g_plus, v, j, step_size, h0)
        sum_accept += t.sum_accept
        n_leapfrog += t.n_leapfrog
        diverging = diverging or t.diverging
        j += 1
        if not t.s:
            break
        # biased progressive sampling: the new subtree's proposal w.p. min(1, w_new / w_old)
        if t.log_w >= tree.log_w or rng.uniform() < math.exp(t.log_w - tree.log_w):
            new = NUTSState(t.x_prop, t.value_prop, t.g_prop)
        left, right = (t, tree) if v == -1 else (tree, t)
        rho = left.rho + right.rho
        s = _merged_criterion(mass, left, right, rho)
        tree = _MTree(left.x_minus, left.r_minus, left.g_minus, right.x_plus, right.r_plus, right.g_plus,
                      tree.x_prop, tree.value_prop, tree.g_prop, float(np.logaddexp(tree.log_w, t.log_w)), rho, s,
                      0.0, 0, False)
        if not s:
            break
    return new, sum_accept / max(n_leapfrog, 1), n_leapfrog, j, diverging, h0


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
    variant: str = "slice",
) -> tuple[NUTSState, NUTSInfo]:
    """One NUTS transition: H&G Alg. 3 (``variant="slice"``; the Alg. 6 statistics are in the
    Info) or Stan's multinomial NUTS (``variant="multinomial"``; module docstring)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if variant == "multinomial":
        with linalg.count_ops() as ops:
            new, acc, n_lf, j, diverging, h0 = _step_multinomial(rng, state, value_and_grad_fn, step_size, mass,
                                                                  max_tree_depth)
        return new, NUTSInfo(new is not state, acc, ops.cubic, n_lf, n_lf, j, diverging, h0)
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
    mass: MassMatrix | None = None,
    *,
    n_adapt: int = 1000,
    step_size: float | None = None,
    max_tree_depth: int = MAX_TREE_DEPTH,
    variant: str = "multinomial",
    adaptation: str = "windowed",
    mass_adaptation: str = "diagonal",
    target_accept: float | None = None,
    gamma: float = DA_GAMMA,
    t0: float | None = None,
    kappa: float = DA_KAPPA,
) -> runner.ChainSpec:
    """A NUTS chain: ``n_adapt`` warm-up iterations, then the kept draws with the tuned kernel.

    Defaults (issue 24): Stan's and NumPyro's NUTS -- the multinomial variant and their warm-up,
    ``adaptation="windowed"``: dual averaging of the step size towards ``target_accept`` = 0.8
    (t0 = 10, gamma = 0.05, kappa = 0.75) throughout, the mass matrix M^-1 set to the regularised
    variances (``mass_adaptation="diagonal"``; ``"dense"``: covariance; ``"none"``: kept) of the
    draws of Stan's doubling slow windows (``adaptation.stan_windows``), the step size restarted by
    H&G's Alg. 4 after each window.  ``mass`` is the starting metric (identity if None).

    The papers' settings, which the reproduction passes explicitly: ``variant="slice"`` (H&G
    Alg. 3) with ``n_adapt=0`` and ``step_size=XIONG_STEP_SIZE`` (Xiong et al.'s NUTS), or with
    ``adaptation="step_size"`` (NUTSDA, H&G Alg. 6: dual averaging of the step size only, with
    Xiong et al.'s delta = 0.65, t0 = 30 unless given; the first step size is ``step_size`` or
    H&G's Alg. 4).  With ``n_adapt = 0`` the given ``step_size`` is used as it is.

    Returns a :class:`~gpbayes.mcmc.runner.ChainSpec`; its chain has stats ``lp``, ``accepted``,
    ``acceptance_rate``, ``n_cubic``, ``n_steps``, ``n_leapfrog``, ``tree_depth``,
    ``diverging``, ``energy``, ``wall_time`` and ``params["step_size"]`` (and ``"mass"``).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    mass = mass if mass is not None else _identity(position0)
    start = lambda: init(position0, value_and_grad_fn)  # noqa: E731
    if n_adapt <= 0:
        if step_size is None:
            raise ValueError("NUTS without adaptation (n_adapt = 0) needs a step_size")
        return runner.ChainSpec(start, _kernel(value_and_grad_fn, float(step_size), mass, max_tree_depth, variant), 0)
    target_accept, t0 = resolve_adaptation(adaptation, target_accept, t0)

    def find(r, st, m, initial=1.0):
        return find_reasonable_step_size(r, st, value_and_grad_fn, m, initial)

    if adaptation == "step_size":
        adapt = StepSizeAdaptation(
            lambda eps: _kernel(value_and_grad_fn, eps, mass, max_tree_depth, variant), step_size,
            find_step_size=lambda r, st: find(r, st, mass),
            target_accept=target_accept, gamma=gamma, t0=t0, kappa=kappa,
        )
    else:
        adapt = windowed_adaptation(
            lambda eps, m: _kernel(value_and_grad_fn, eps, m, max_tree_depth, variant), mass, int(n_adapt), find,
            mass_adaptation=mass_adaptation, step_size=step_size, target_accept=target_accept, gamma=gamma,
            t0=t0, kappa=kappa)
    return runner.ChainSpec(start, None, int(n_adapt), adapt)


def _identity(position0) -> MassMatrix:
    from .hmc import mass_matrix

    return mass_matrix("identity", dim=int(np.size(position0)))


def _kernel(value_and_grad_fn, eps, mass, max_tree_depth, variant):
    return lambda r, st: step(r, st, value_and_grad_fn, eps, mass, max_tree_depth, variant)


def run_chain(rng: np.random.Generator, position0, value_and_grad_fn: ValueAndGradFn, mass: MassMatrix | None = None,
              *, n_draws: int, n_adapt: int = 1000, step_size: float | None = None, callback=None,
              **options) -> Chain:
    """``runner.run_spec`` of :func:`chain_spec` (its options and defaults, plus ``n_draws`` and ``callback``)."""
    spec = chain_spec(position0, value_and_grad_fn, mass, n_adapt=n_adapt, step_size=step_size, **options)
    chain = runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)
    if n_adapt > 0:
        return chain
    return dataclasses.replace(chain, params={"step_size": float(step_size)})
