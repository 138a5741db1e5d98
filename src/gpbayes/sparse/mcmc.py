"""MCMC for variationally sparse GPs (Hensman, Matthews, Filippone & Ghahramani 2015): the samplers.

The target log q*(v, theta) (T1) and the predictions from draws are in
``gpbayes.sparse.target``.

Samplers (``init``/``step`` over immutable NamedTuple states, run by
``gpbayes.mcmc.runner.run_chain``; warm-up by ``gpbayes.mcmc.adaptation``):

* ``hmc_kernel``: the one HMC of the library (``gpbayes.mcmc.hmc.step``, Neal
  2011) with a diagonal or dense mass matrix on the flat position
  x = (vec v, psi) -- the paper's "jointly sample v, theta".  One step:
  (1) draw momentum p ~ N(0, M); (2) draw the step size
  eps_t ~ U[eps (1 - j), eps (1 + j)]; (3) ``n_steps`` leapfrog steps (fixed,
  not drawn); (4) accept with probability min(1, exp(-Delta H)).  A
  trajectory that meets a non-finite log density is rejected (the reverse
  trajectory meets it too, so this keeps detailed balance).
* ``hmc_adaptation``: the automatic tuner.  The poster tunes (eps, L) by
  Bayesian optimisation (Wang, Mohamed & de Freitas 2013).  Here, instead, a
  simpler and well-tested scheme (Stan's warm-up, Hoffman & Gelman 2014
  Sec. 3.2; ``adaptation.WindowedAdaptation``): dual averaging of log eps
  towards a target acceptance probability (0.8), a mass matrix from the
  draws of two middle warm-up windows (diagonal, or dense when a window holds
  enough draws per dimension), and a fixed trajectory length lambda in the
  units of the adapted metric: n_steps = min(ceil(lambda / eps), max_steps).
  Everything is frozen after warm-up, so the kept draws come from one fixed,
  valid kernel.  ``sample_joint`` runs it.
* ``gibbs_init``/``gibbs_step``: the paper's baseline -- alternately HMC on
  v | theta and random-walk MH on psi | v (``gpbayes.mcmc.random_walk``);
  ``gibbs_adaptation`` tunes both, ``sample_gibbs`` runs it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, NamedTuple

import numpy as np

from .. import linalg
from ..mcmc import adaptation, hmc, random_walk, runner
from .target import LogDensityAndGrad, SparseTarget, log_q_star

__all__ = [
    "HMCParameters",
    "hmc_kernel",
    "n_leapfrog_steps",
    "window_mass",
    "hmc_adaptation",
    "joint_chain_spec",
    "sample_joint",
    "GibbsState",
    "GibbsParameters",
    "GibbsInfo",
    "gibbs_init",
    "gibbs_step",
    "GibbsAdaptation",
    "gibbs_adaptation",
    "gibbs_chain_spec",
    "sample_gibbs",
]


# ---------------------------------------------------------------------------
# joint HMC: the one HMC (gpbayes.mcmc.hmc) with a fixed trajectory length and a jittered step size
# ---------------------------------------------------------------------------
#: dual-averaging offset t0 (Stan's default; ``mcmc.adaptation``'s default 30 is Xiong et al.'s)
DA_T0 = 10.0
#: a warm-up window estimates a dense M^-1 (metric="auto") when it holds at least this many draws per dimension
DENSE_DRAWS_PER_DIM = 3
#: mass-matrix windows shorter than this are not used (``adaptation.warmup_windows``' ``min_length``)
MIN_WINDOW = 20


class HMCParameters(NamedTuple):
    """The frozen HMC kernel: ``hmc.step`` with L = ``n_steps`` and jittered ``step_size``."""

    step_size: float
    n_steps: int
    mass: hmc.MassMatrix
    step_size_jitter: float = 0.2  # eps_t ~ U[eps (1 - j), eps (1 + j)]


def hmc_kernel(logdensity_and_grad: LogDensityAndGrad, params: HMCParameters):
    """``step(rng, state) -> (state, hmc.HMCInfo)`` of the kernel ``params`` (module docstring, steps 1-4)."""

    def step(rng, state):
        return hmc.step(rng, state, logdensity_and_grad, params.step_size, params.mass,
                        n_steps=params.n_steps, step_size_jitter=params.step_size_jitter)

    return step


def n_leapfrog_steps(step_size: float, trajectory_length: float, max_steps: int) -> int:
    """L = min(ceil(lambda / eps), max_steps): a fixed trajectory length lambda in the adapted metric."""
    return int(min(max(1, math.ceil(trajectory_length / step_size)), max_steps))


def window_mass(draws: np.ndarray, metric: str = "auto") -> hmc.MassMatrix:
    """M^-1 from the draws (m, D) of a warm-up window: Stan's regularised covariance
    (``adaptation.regularised_covariance``) with ``"dense"``, or with ``"auto"`` and at least
    ``DENSE_DRAWS_PER_DIM`` draws per dimension; its diagonal otherwise."""
    m, d = draws.shape
    if metric == "dense" or (metric == "auto" and m >= DENSE_DRAWS_PER_DIM * d):
        return hmc.mass_matrix("dense", adaptation.regularised_covariance(draws))
    return hmc.mass_matrix("diagonal", adaptation.regularised_covariance(draws, dense=False))


def _find_step_size(logdensity_and_grad, initial: float = 0.1):
    """H&G Alg. 4 (``hmc.find_reasonable_step_size``), from ``initial`` unless a start is given."""

    def find(rng, state, mass, start=initial):
        return hmc.find_reasonable_step_size(rng, state, logdensity_and_grad, mass, start)

    return find


def hmc_adaptation(
    logdensity_and_grad: LogDensityAndGrad,
    dim: int,
    n_warmup: int,
    *,
    target_accept: float = 0.8,
    trajectory_length: float = 1.5,
    max_steps: int = 64,
    mass: hmc.MassMatrix | None = None,
    adapt_mass: bool = True,
    metric: str = "auto",
    initial_step_size: float | None = None,
    step_size_jitter: float = 0.2,
):
    """The warm-up of joint HMC, for ``runner.run_chain(adapt=...)``.

    Stan's schedule (Hoffman & Gelman 2014 Sec. 3.2; ``adaptation.WindowedAdaptation``
    with ``restart="find"``): the first 15% of the iterations adapt eps only;
    then two windows (lengths 1:2, each at least ``MIN_WINDOW`` iterations,
    else one or none) each end by setting M^-1 to the regularised
    (co)variances of the window's draws (``window_mass``) and restarting dual
    averaging from H&G's Alg. 4 at the current eps; the last 20% adapt eps
    only, and the final eps is that phase's dual-averaging iterate average.
    Dual averaging targets ``target_accept`` with t0 = ``DA_T0``; the first
    eps is Alg. 4 from 0.1 unless ``initial_step_size`` is given.
    Throughout, L = ``n_leapfrog_steps(eps, trajectory_length, max_steps)``,
    lambda in the units of the adapted metric (about 1.5 posterior standard
    deviations along each axis).  The tuned parameters are
    ``{"step_size", "mass"}`` (``mass`` only with ``adapt_mass``).

    ``dim``: the dimension of the position; ``mass``: the metric to start
    from (identity if None).  ``metric``:
    ``"diag"``, ``"dense"`` or ``"auto"`` (``window_mass``).  A dense metric
    removes linear correlations the whitening leaves, e.g. between the C
    latent functions of the robust-max likelihood, which only sees their
    differences.
    """
    if metric not in ("auto", "diag", "dense"):
        raise ValueError(f"metric must be 'auto', 'diag' or 'dense', got {metric!r}")
    find = _find_step_size(logdensity_and_grad)

    def make_step(eps, m):
        n_steps = n_leapfrog_steps(eps, trajectory_length, max_steps)
        return hmc_kernel(logdensity_and_grad, HMCParameters(eps, n_steps, m, step_size_jitter))

    mass = hmc.mass_matrix("identity", dim=int(dim)) if mass is None else mass
    if not adapt_mass:
        return adaptation.StepSizeAdaptation(
            lambda eps: make_step(eps, mass), initial_step_size, lambda r, st: find(r, st, mass),
            target_accept=target_accept, t0=DA_T0)
    return adaptation.WindowedAdaptation(
        make_step, lambda draws: window_mass(draws, metric), mass, int(n_warmup), find,
        step_size=initial_step_size, target_accept=target_accept, t0=DA_T0, restart="find",
        min_window=MIN_WINDOW)


def joint_chain_spec(target: SparseTarget, position0, *, n_warmup: int, **options) -> runner.ChainSpec:
    """Joint HMC over (v, psi), one chain's configuration of the runner (``runner.ChainSpec``).

    ``hmc_adaptation`` warm-up of ``n_warmup`` iterations (its ``options``),
    then the frozen kernel; the kept position is psi and ``record`` keeps the
    whitened inducing values ``v`` (M, C) per draw.
    """
    fn = target.logdensity_and_grad
    adapt = hmc_adaptation(fn, target.dim, n_warmup, **options)
    return runner.ChainSpec(lambda: hmc.init(position0, fn), None, int(n_warmup), adapt,
                            position=lambda s: target.split(s.position)[1],
                            record=lambda s, info: {"v": target.split(s.position)[0]})


def sample_joint(
    rng: np.random.Generator,
    target: SparseTarget,
    position0,
    *,
    n_warmup: int,
    n_draws: int,
    callback=None,
    **options,
) -> runner.Chain:
    """Joint HMC over (v, psi): ``hmc_adaptation`` warm-up, then ``n_draws`` kept draws
    (``runner.run_spec`` of :func:`joint_chain_spec`).

    A ``runner.Chain``: ``draws`` are psi (n_draws, P), ``extra["v"]`` the
    whitened inducing values (n_draws, M, C); ``stats`` ``lp``, ``accepted``,
    ``acceptance_rate``, ``n_steps`` (gradient evaluations), ``n_leapfrog``
    (L), ``energy_error``, ``diverging``, ``n_cubic``, ``wall_time``;
    ``params`` ``step_size`` and ``mass``; ``warmup`` the warm-up cost.
    ``options`` go to ``hmc_adaptation``.
    """
    spec = joint_chain_spec(target, position0, n_warmup=n_warmup, **options)
    return runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)


# ---------------------------------------------------------------------------
# Gibbs baseline: HMC on v | theta, MH on psi | v
# ---------------------------------------------------------------------------
class GibbsState(NamedTuple):
    """State of the sparse GP's Gibbs baseline: the HMC state of v at the current psi, and psi."""

    v: hmc.HMCState  # position = vec v, log_density = (T1), grad = d(T1)/dv at the current psi
    psi: np.ndarray


class GibbsParameters(NamedTuple):
    """The Gibbs sweep's tuned parameters: HMC's on v, and the factor L of the MH proposal on psi."""

    v_hmc: HMCParameters
    psi_proposal_factor: np.ndarray  # L with MH proposal covariance L L^T


class GibbsInfo(NamedTuple):
    """What one Gibbs sweep did: the HMC step on v (acceptance, leapfrog steps, energy error,
    divergence), the MH step on psi, and the sweep's O(n^3) operations.
    """

    accepted: bool  # the HMC step on v
    acceptance_prob: float
    n_grad_evals: int
    n_leapfrog: int
    energy_error: float
    diverging: bool
    psi_accepted: bool  # the MH step on psi
    psi_acceptance_prob: float
    n_cubic: int  # the whole sweep


def _v_fn(target: SparseTarget, psi) -> LogDensityAndGrad:
    def fn(x):
        value, dv, _ = log_q_star(target, x, psi, grad="v")
        return value, dv.ravel()

    return fn


def gibbs_init(target: SparseTarget, v, psi) -> GibbsState:
    """The Gibbs state at (v, psi): HMC's state of v | psi."""
    psi = np.array(psi, dtype=np.float64)
    return GibbsState(hmc.init(np.asarray(v, dtype=np.float64).ravel(), _v_fn(target, psi)), psi)


def gibbs_step(
    rng: np.random.Generator, state: GibbsState, target: SparseTarget, params: GibbsParameters
) -> tuple[GibbsState, GibbsInfo]:
    """One sweep: (1) HMC on v | psi; (2) random-walk MH on psi | v; (3) if psi
    moved, the v-gradient at the new psi."""
    with linalg.count_ops() as ops:
        # step 1: v | psi
        v_state, v_info = hmc_kernel(_v_fn(target, state.psi), params.v_hmc)(rng, state.v)
        # step 2: psi | v; the stored value log q*(v, psi) is the current density
        v = v_state.position

        def log_density_psi(p, _rng):
            return log_q_star(target, v, p, grad="none")[0]

        rw_state, rw_info = random_walk.step(
            rng, random_walk.RWMHState(state.psi, v_state.log_density), log_density_psi,
            params.psi_proposal_factor,
        )
        # step 3: refresh the gradient w.r.t. v at the new psi
        psi = rw_state.position
        if rw_info.accepted:
            v_state = hmc.init(v, _v_fn(target, psi))
    info = GibbsInfo(v_info.accepted, v_info.acceptance_prob, v_info.n_grad_evals, v_info.n_leapfrog,
                     v_info.energy_error, v_info.diverging, rw_info.accepted, rw_info.acceptance_prob, ops.cubic)
    return GibbsState(v_state, psi), info


@dataclasses.dataclass(frozen=True)
class GibbsAdaptation:
    """Warm-up of the Gibbs sweep (the ``runner`` adaptation protocol).

    Dual averaging of the v-step size (``adaptation.StepSizeAdaptation`` on
    the sweep's v-acceptance; unit mass: v is whitened) and Robbins-Monro on
    the log scale s of the isotropic psi proposal s I
    (``adaptation.robbins_monro_log_scale``).  ``make_step(eps, s) -> step``.
    The tuned parameters are ``{"step_size", "psi_proposal_scale"}``.
    """

    make_step: Callable
    step_size: adaptation.StepSizeAdaptation  # its make_step is the identity: kernel() gives eps
    psi_scale: float
    psi_target_accept: float

    def init(self, rng, state):
        """Warm-up state: dual averaging of the v step size, and log s of the psi proposal."""
        return self.step_size.init(rng, state), math.log(self.psi_scale)

    def kernel(self, a):
        """The Gibbs sweep at the current step size and proposal scale."""
        return self.make_step(self.step_size.kernel(a[0]), math.exp(a[1]))

    def update(self, a, iteration: int, state, info):
        """Dual averaging of the v step size and a Robbins–Monro step of the psi proposal scale."""
        log_s = adaptation.robbins_monro_log_scale(a[1], info.psi_acceptance_prob, iteration, self.psi_target_accept)
        return self.step_size.update(a[0], iteration, state, info), log_s

    def finalize(self, a):
        """The frozen sweep and its parameters (step size, ``psi_proposal_scale``)."""
        eps, params = self.step_size.finalize(a[0])
        s = math.exp(a[1])
        return self.make_step(eps, s), {**params, "psi_proposal_scale": s}


def gibbs_adaptation(
    target: SparseTarget,
    *,
    target_accept: float = 0.8,
    psi_target_accept: float = 0.3,
    trajectory_length: float = 1.5,
    max_steps: int = 64,
    psi_scale: float = 0.1,
    step_size_jitter: float = 0.2,
) -> GibbsAdaptation:
    """The warm-up of the Gibbs baseline, for ``runner.run_chain(adapt=...)``: the first v-step size
    is H&G's Alg. 4 from 0.1; dual averaging targets ``target_accept`` with t0 = ``DA_T0``;
    L = ``n_leapfrog_steps(eps, trajectory_length, max_steps)``; the psi proposal starts at
    ``psi_scale`` I and is tuned towards ``psi_target_accept``."""
    mass = hmc.mass_matrix("identity", dim=target.n_inducing * target.n_latent)
    d_psi = target.n_params

    def make_step(eps, s):
        v_hmc = HMCParameters(eps, n_leapfrog_steps(eps, trajectory_length, max_steps), mass, step_size_jitter)
        params = GibbsParameters(v_hmc, s * np.eye(d_psi))
        return lambda rng, state: gibbs_step(rng, state, target, params)

    def find(rng, state):
        return _find_step_size(_v_fn(target, state.psi))(rng, state.v, mass)

    step_size = adaptation.StepSizeAdaptation(lambda eps: eps, find_step_size=find, target_accept=target_accept,
                                              t0=DA_T0)
    return GibbsAdaptation(make_step, step_size, psi_scale, psi_target_accept)


def gibbs_chain_spec(target: SparseTarget, position0, *, n_warmup: int, **options) -> runner.ChainSpec:
    """The Gibbs baseline, one chain's configuration of the runner (``runner.ChainSpec``):
    ``gibbs_adaptation`` warm-up (its ``options``) of ``n_warmup`` sweeps, then the frozen sweep;
    the kept position is psi and ``record`` keeps ``v`` (M, C) per draw."""
    v0, psi0 = target.split(position0)
    M, C = target.n_inducing, target.n_latent
    return runner.ChainSpec(lambda: gibbs_init(target, v0, psi0), None, int(n_warmup),
                            gibbs_adaptation(target, **options), position=lambda s: s.psi,
                            lp=lambda s: s.v.log_density, record=lambda s, info: {"v": s.v.position.reshape(M, C)})


def sample_gibbs(
    rng: np.random.Generator,
    target: SparseTarget,
    position0,
    *,
    n_warmup: int,
    n_draws: int,
    callback=None,
    **options,
) -> runner.Chain:
    """The Gibbs baseline: ``gibbs_adaptation`` warm-up, then ``n_draws`` sweeps
    (``runner.run_spec`` of :func:`gibbs_chain_spec`).

    A ``runner.Chain`` as ``sample_joint``'s (``acceptance_rate``, ``n_steps``,
    ... are the v-step's), plus ``psi_accepted`` and ``psi_acceptance_prob``;
    ``params`` ``step_size`` and ``psi_proposal_scale``.
    """
    spec = gibbs_chain_spec(target, position0, n_warmup=n_warmup, **options)
    return runner.run_spec(rng, spec, n_draws=n_draws, callback=callback)
