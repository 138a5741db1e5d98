"""Warm-up adaptation: the one home of Robbins–Monro scaling, covariance adaptation and dual averaging.

Each adaptation object follows the protocol of ``gpbayes.mcmc.runner``:
``init(rng, state) -> astate``, ``kernel(astate) -> step``,
``update(astate, iteration, state, info) -> astate`` and
``finalize(astate) -> (step, params)``.  Adaptation runs during warm-up only;
``finalize`` freezes the kernel, so the kept draws come from one fixed, valid
MCMC kernel.

* :class:`RandomWalkAdaptation` -- random-walk Metropolis proposal
  ``s^2 Sigma``: log s by Robbins–Monro towards a target acceptance rate
  (:func:`robbins_monro_log_scale`), ``Sigma`` replaced at 1/2 and 3/4 of the
  warm-up by the empirical covariance of the warm-up draws since its first
  quarter (Haario, Saksman & Tamminen 2001, confined to warm-up).
* :class:`StepSizeAdaptation` -- the HMC/NUTS step size by dual averaging
  (Hoffman & Gelman 2014, Sec. 3.2.1, eq. 6, Algs. 5–6), started from their
  Alg. 4 heuristic when no step size is given.
* :class:`WindowedAdaptation` -- Stan-style warm-up (Hoffman & Gelman 2014
  Sec. 3.2; Stan reference manual "HMC algorithm parameters"): dual averaging
  of the step size throughout, and a mass matrix estimated from the draws of
  slow windows between a fast initial and a fast terminal buffer, the step
  size restarted after each window.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .. import linalg

__all__ = [
    "MassMatrix",
    "mass_matrix",
    "robbins_monro_log_scale",
    "DualAveragingState",
    "dual_averaging_init",
    "dual_averaging_update",
    "dual_averaging_final_step_size",
    "RandomWalkAdaptation",
    "StepSizeAdaptation",
    "WindowedAdaptation",
    "warmup_windows",
    "regularised_covariance",
    "stan_windows",
    "windowed_adaptation",
    "resolve_adaptation",
    "ADAPTATIONS",
    "STAN_TARGET_ACCEPT",
    "STAN_T0",
    "TARGET_ACCEPT",
    "DA_GAMMA",
    "DA_T0",
    "DA_KAPPA",
]

#: Xiong et al. Sec. 4.3.1: acceptance "around 65%", dual averaging "gamma = 0.05, t0 = 30, kappa = 0.75".
TARGET_ACCEPT = 0.65
DA_GAMMA = 0.05
DA_T0 = 30.0
DA_KAPPA = 0.75
#: Stan's and NumPyro's defaults for NUTS: delta = 0.8, t0 = 10 (gamma and kappa as above).
STAN_TARGET_ACCEPT = 0.8
STAN_T0 = 10.0
#: the warm-ups of ``hmc.chain_spec`` and ``nuts.chain_spec``: ``"windowed"`` (Stan/NumPyro,
#: the library default) or ``"step_size"`` (dual averaging of the step size only, Xiong et al.)
ADAPTATIONS = ("windowed", "step_size")


# ---------------------------------------------------------------------------
# the mass matrix M of HMC/NUTS (what the windowed warm-up estimates; gpbayes.mcmc.hmc uses it)
# ---------------------------------------------------------------------------
class MassMatrix(NamedTuple):
    """M for the kinetic energy 1/2 p^T M^-1 p.

    ``inv_diag``: diagonal of M^-1 (identity/diagonal kinds);
    ``inv_chol``: lower Cholesky factor C of M^-1 = C C^T (dense kind).
    """

    kind: str
    inv_diag: np.ndarray | None
    inv_chol: np.ndarray | None

    @property
    def dim(self) -> int:
        """The dimension p of the positions the mass matrix applies to."""
        return (self.inv_diag if self.inv_diag is not None else self.inv_chol).shape[0]


def mass_matrix(kind: str, covariance: np.ndarray | None = None, dim: int | None = None) -> MassMatrix:
    """``identity`` (needs ``dim`` or ``covariance``), ``diagonal`` = diag(cov)^-1, ``dense`` = cov^-1.

    For ``diagonal`` the covariance may also be given as its diagonal (a vector of variances).
    """
    if kind == "identity":
        p = dim if dim is not None else np.asarray(covariance).shape[0]
        return MassMatrix("identity", np.ones(p), None)
    cov = np.asarray(covariance, dtype=np.float64)
    if kind == "diagonal":
        d = cov.copy() if cov.ndim == 1 else np.diag(cov).copy()
        if not np.all(d > 0):
            raise ValueError(f"diagonal mass matrix needs positive variances, got {d}")
        return MassMatrix("diagonal", d, None)
    if kind == "dense":
        C = linalg.cholesky(cov, name="approximate posterior covariance (inverse mass)", count=False)
        return MassMatrix("dense", None, np.ascontiguousarray(C))
    raise ValueError(f"mass matrix kind must be 'identity', 'diagonal' or 'dense', got {kind!r}")


# ---------------------------------------------------------------------------
# Robbins-Monro scaling
# ---------------------------------------------------------------------------
def robbins_monro_log_scale(log_scale: float, acceptance_prob: float, iteration: int,
                            target: float = 0.25, rate: float = 0.6) -> float:
    """Robbins–Monro update of the log proposal scale towards ``target`` acceptance.

    log s <- log s + (a - target) / (iteration + 1)^rate.
    """
    return log_scale + (acceptance_prob - target) / (iteration + 1.0) ** rate


# ---------------------------------------------------------------------------
# dual averaging (Hoffman & Gelman 2014, Sec. 3.2.1, eq. 6; Algs. 5-6)
# ---------------------------------------------------------------------------
class DualAveragingState(NamedTuple):
    """The state of dual averaging (Hoffman & Gelman 2014, Alg. 5; eq. 6): iteration m, log eps_m, the
    averaged log eps-bar_m used after warm-up, H-bar_m and mu = log(10 eps_1).
    """

    iteration: int  # m, adaptation iterations done
    log_step_size: float  # log eps_m, used at the next iteration
    log_step_size_bar: float  # log eps-bar_m, the averaged iterate used after adaptation
    h_bar: float  # H-bar_m
    mu: float  # log(10 eps_1)


def dual_averaging_init(step_size0: float) -> DualAveragingState:
    """H&G Alg. 5/6 initialisation: mu = log(10 eps_1), eps-bar_0 = 1, H-bar_0 = 0."""
    return DualAveragingState(0, math.log(step_size0), 0.0, 0.0, math.log(10.0 * step_size0))


def dual_averaging_update(
    da: DualAveragingState,
    accept_stat: float,
    *,
    target: float = TARGET_ACCEPT,
    gamma: float = DA_GAMMA,
    t0: float = DA_T0,
    kappa: float = DA_KAPPA,
) -> DualAveragingState:
    """One adaptation iteration m (H&G Alg. 5/6, "if m <= M_adapt" branch).

    H-bar_m = (1 - 1/(m + t0)) H-bar_{m-1} + (delta - alpha) / (m + t0)
    log eps_m = mu - sqrt(m) / gamma H-bar_m
    log eps-bar_m = m^-kappa log eps_m + (1 - m^-kappa) log eps-bar_{m-1}
    """
    m = da.iteration + 1
    eta = 1.0 / (m + t0)
    h_bar = (1.0 - eta) * da.h_bar + eta * (target - accept_stat)
    log_eps = da.mu - math.sqrt(m) / gamma * h_bar
    w = m ** (-kappa)
    log_eps_bar = w * log_eps + (1.0 - w) * da.log_step_size_bar
    return DualAveragingState(m, log_eps, log_eps_bar, h_bar, da.mu)


def dual_averaging_final_step_size(da: DualAveragingState) -> float:
    """eps = eps-bar_{M_adapt}, used after adaptation."""
    return math.exp(da.log_step_size_bar) if da.iteration > 0 else math.exp(da.log_step_size)


# ---------------------------------------------------------------------------
# random-walk Metropolis: Robbins-Monro scale + covariance checkpoints
# ---------------------------------------------------------------------------
class _RWState(NamedTuple):
    chol: np.ndarray
    log_scale: float
    rm_iter: int  # Robbins-Monro counter, restarted when the covariance changes
    positions: np.ndarray  # warm-up draws (n_warmup, p)


@dataclasses.dataclass(frozen=True)
class RandomWalkAdaptation:
    """Adaptive random-walk Metropolis warm-up (proposal ``s * L``, ``L L^T = Sigma``).

    ``make_step(factor) -> step(rng, state)`` builds the MH kernel with
    proposal factor ``factor``.  ``s`` starts at ``initial_scale`` (default
    2.38 / sqrt(p), Roberts & Rosenthal 2001) and follows
    :func:`robbins_monro_log_scale`; with ``adapt_covariance`` and p > 1,
    ``Sigma`` is replaced at iterations n/2 and 3n/4 by the empirical
    covariance of the draws since n/4 (plus 1e-8 * mean variance + 1e-12 on
    the diagonal) and s restarts at 2.38 / sqrt(p).  ``finalize`` gives the
    frozen kernel and ``{"proposal_scale", "proposal_factor"}``.
    """

    make_step: Callable[[np.ndarray], Callable]
    proposal_cov: np.ndarray
    n_warmup: int
    target_accept: float = 0.25
    initial_scale: float | None = None
    adapt_covariance: bool = True
    position: Callable = staticmethod(lambda s: s.position)

    def init(self, rng, state) -> _RWState:
        """Adaptation state at the start of warm-up: the Cholesky factor of ``proposal_cov`` and log s
        (``initial_scale``, default 2.38 / sqrt(p)).
        """
        p = np.asarray(self.proposal_cov).shape[0]
        chol = linalg.cholesky(self.proposal_cov, name="proposal covariance", count=False)
        log_s = np.log(self.initial_scale if self.initial_scale is not None else 2.38 / np.sqrt(p))
        return _RWState(chol, log_s, 0, np.empty((self.n_warmup, p)))

    def _checkpoints(self) -> dict[int, int]:
        n = self.n_warmup
        return {n // 2: n // 4, (3 * n) // 4: n // 4} if self.adapt_covariance else {}

    def kernel(self, a: _RWState):
        """The MH kernel of the current proposal factor s L."""
        return self.make_step(np.exp(a.log_scale) * a.chol)

    def update(self, a: _RWState, iteration: int, state, info) -> _RWState:
        """One Robbins–Monro step of log s towards ``target_accept``; at n/2 and 3n/4 of warm-up, the
        proposal covariance replaced by the draws' empirical covariance (s restarts).
        """
        chol, p = a.chol, a.chol.shape[0]
        log_s = robbins_monro_log_scale(a.log_scale, info.acceptance_prob, a.rm_iter, self.target_accept)
        rm_iter = a.rm_iter + 1
        if self.adapt_covariance:
            a.positions[iteration] = self.position(state)
        nxt = iteration + 1  # covariance checkpoint before the next iteration
        start = self._checkpoints().get(nxt)
        if start is not None and nxt < self.n_warmup and nxt - start > 2 * p:
            window = a.positions[start:nxt]
            emp = np.atleast_2d(np.cov(window, rowvar=False))
            emp[np.diag_indices(p)] += 1e-8 * float(np.mean(np.diag(emp))) + 1e-12
            try:
                chol = linalg.cholesky(emp, name="adapted proposal covariance", max_tries=1, count=False)
                log_s = np.log(2.38 / np.sqrt(p))
                rm_iter = 0
            except np.linalg.LinAlgError:  # degenerate window (e.g. no moves): keep Sigma
                pass
        return _RWState(chol, log_s, rm_iter, a.positions)

    def finalize(self, a: _RWState):
        """The frozen kernel and ``{"proposal_scale", "proposal_factor"}``."""
        factor = np.exp(a.log_scale) * a.chol
        return self.make_step(factor), {"proposal_scale": float(np.exp(a.log_scale)), "proposal_factor": factor}


# ---------------------------------------------------------------------------
# HMC / NUTS: step size by dual averaging
# ---------------------------------------------------------------------------
class _DAState(NamedTuple):
    da: DualAveragingState
    step_size0: float
    n_init_grads: int


@dataclasses.dataclass(frozen=True)
class StepSizeAdaptation:
    """Dual averaging of the step size (H&G Alg. 5/6) during warm-up.

    ``make_step(eps) -> step(rng, state)``; ``find_step_size(rng, state) ->
    (eps, n_gradient_evaluations)`` is H&G's Alg. 4, used when ``step_size``
    is None.  With zero warm-up iterations the given ``step_size`` is used
    as it is.  ``finalize`` gives the kernel with eps-bar and
    ``{"step_size": eps}``; the gradient evaluations of Alg. 4 are reported
    as warm-up cost (``adapt_n_steps``).
    """

    make_step: Callable[[float], Callable]
    step_size: float | None = None
    find_step_size: Callable | None = None
    target_accept: float = TARGET_ACCEPT
    gamma: float = DA_GAMMA
    t0: float = DA_T0
    kappa: float = DA_KAPPA

    def init(self, rng, state) -> _DAState:
        """Adaptation state: dual averaging started at ``step_size`` or at H&G's Alg. 4 heuristic."""
        eps, n_fr = self.step_size, 0
        if eps is None:
            if self.find_step_size is None:
                raise ValueError("give a step size or a way to find one (H&G Alg. 4)")
            eps, n_fr = self.find_step_size(rng, state)
        return _DAState(dual_averaging_init(eps), float(eps), int(n_fr))

    def kernel(self, a: _DAState):
        """The HMC/NUTS kernel at the current step size exp(log eps_m)."""
        return self.make_step(math.exp(a.da.log_step_size))

    def update(self, a: _DAState, iteration: int, state, info) -> _DAState:
        """One dual-averaging update from this iteration's acceptance statistic (H&G eq. 6)."""
        da = dual_averaging_update(a.da, info.acceptance_prob, target=self.target_accept,
                                   gamma=self.gamma, t0=self.t0, kappa=self.kappa)
        return a._replace(da=da)

    def finalize(self, a: _DAState):
        """The kernel at the averaged step size eps-bar, and ``{"step_size"}``."""
        eps = dual_averaging_final_step_size(a.da) if a.da.iteration > 0 else a.step_size0
        return self.make_step(eps), {"step_size": float(eps), "_cost": {"n_steps": a.n_init_grads}}


# ---------------------------------------------------------------------------
# windowed (Stan-style) adaptation of the mass matrix and the step size
# ---------------------------------------------------------------------------
def warmup_windows(n_warmup: int, init_buffer: float = 0.15, term_buffer: float = 0.2,
                   n_windows: int = 2, min_length: int = 0) -> list[tuple[int, int]]:
    """Slow windows [start, end) between a fast initial and a fast terminal buffer.

    The middle part of the warm-up is split into ``n_windows`` windows, each
    twice as long as the one before (Stan's doubling), the last one ending
    where the terminal buffer starts.  With ``min_length``, fewer windows are
    used while the first would be shorter than that, and none if even one
    window would be (a short warm-up then adapts the step size only).
    """
    start = int(round(init_buffer * n_warmup))
    end = n_warmup - int(round(term_buffer * n_warmup))
    while n_windows > 0 and end - start < min_length * (2**n_windows - 1):
        n_windows -= 1
    if n_windows == 0 or end - start < 2 * n_windows:
        return []
    total = end - start
    unit = total / (2**n_windows - 1)
    bounds, pos = [], start
    for k in range(n_windows):
        stop = end if k == n_windows - 1 else start + int(round(unit * (2 ** (k + 1) - 1)))
        bounds.append((pos, stop))
        pos = stop
    return bounds


def regularised_covariance(draws: np.ndarray, dense: bool = True) -> np.ndarray:
    """Stan's shrinkage of a window's (co)variance towards 1e-3 I: n/(n+5) S + 1e-3 * 5/(n+5) I.

    ``draws`` (n, p); the (p, p) covariance, or with ``dense=False`` the (p,) variances.
    """
    n, p = draws.shape
    w, shrink = n / (n + 5.0), 1e-3 * (5.0 / (n + 5.0))
    if not dense:
        return w * draws.var(axis=0, ddof=1) + shrink
    return w * np.cov(draws, rowvar=False).reshape(p, p) + shrink * np.eye(p)


class _WindowedState(NamedTuple):
    da: DualAveragingState
    mass: Any
    step_size0: float
    n_init_grads: int
    buffer: list
    rng: Any = None  # the chain's generator (from init), for restart="find"
    n_restart_cubic: int = 0  # O(n^3) operations of the restarts' Alg. 4


@dataclasses.dataclass(frozen=True)
class WindowedAdaptation:
    """Stan-style warm-up: dual averaging throughout, mass matrix from the slow windows.

    ``make_step(eps, mass) -> step``; ``make_mass(draws) -> mass`` turns the
    draws of a window (an (m, p) array) into a mass matrix (e.g. a
    regularised diagonal or dense covariance); ``find_step_size(rng, state,
    mass) -> (eps, n_grad)`` gives the first step size (H&G Alg. 4).
    ``position(state)`` gives the flat position recorded in a window.
    ``finalize`` gives ``{"step_size", "mass"}``.

    After each window dual averaging restarts, with ``restart``:
    ``"average"`` from the averaged iterate eps-bar; ``"find"`` from
    ``find_step_size(rng, state, mass, eps)``, H&G's Alg. 4 in the new
    metric started at the current iterate eps (Stan's ``init_stepsize``),
    drawing from the chain's generator given to ``init``; its gradient
    evaluations and O(n^3) operations are warm-up cost.  ``min_window``:
    see ``warmup_windows``' ``min_length``.
    """

    make_step: Callable
    make_mass: Callable
    mass0: Any
    n_warmup: int
    find_step_size: Callable
    step_size: float | None = None
    windows: tuple = ()
    target_accept: float = 0.8
    gamma: float = DA_GAMMA
    t0: float = DA_T0
    kappa: float = DA_KAPPA
    position: Callable = staticmethod(lambda s: s.position)
    restart: str = "average"
    min_window: int = 0

    def __post_init__(self):
        if self.restart not in ("average", "find"):
            raise ValueError(f"restart must be 'average' or 'find', got {self.restart!r}")

    def _windows(self):
        return self.windows or tuple(warmup_windows(self.n_warmup, min_length=self.min_window))

    def init(self, rng, state) -> _WindowedState:
        """Adaptation state: dual averaging from ``step_size`` or Alg. 4 in the initial metric ``mass0``."""
        eps, n_fr = self.step_size, 0
        if eps is None:
            eps, n_fr = self.find_step_size(rng, state, self.mass0)
        return _WindowedState(dual_averaging_init(eps), self.mass0, float(eps), int(n_fr), [], rng)

    def kernel(self, a: _WindowedState):
        """The kernel at the current step size and mass matrix."""
        return self.make_step(math.exp(a.da.log_step_size), a.mass)

    def update(self, a: _WindowedState, iteration: int, state, info) -> _WindowedState:
        """Dual averaging of the step size; inside a slow window the position is recorded, and at its
        end the mass matrix is re-estimated and dual averaging restarted (``restart``).
        """
        da = dual_averaging_update(a.da, info.acceptance_prob, target=self.target_accept,
                                   gamma=self.gamma, t0=self.t0, kappa=self.kappa)
        a = a._replace(da=da)
        for start, end in self._windows():
            if start <= iteration < end:
                a.buffer.append(np.array(self.position(state), dtype=np.float64, copy=True))
            if iteration + 1 == end and a.buffer and self.restart == "find":
                mass = self.make_mass(np.asarray(a.buffer))
                with linalg.count_ops() as ops:
                    eps, n_fr = self.find_step_size(a.rng, state, mass, math.exp(a.da.log_step_size))
                a = a._replace(mass=mass, buffer=[], da=dual_averaging_init(eps),
                               n_init_grads=a.n_init_grads + int(n_fr),
                               n_restart_cubic=a.n_restart_cubic + int(ops.cubic))
            elif iteration + 1 == end and a.buffer:
                mass = self.make_mass(np.asarray(a.buffer))
                # restart the step size in the new metric (Stan does the same after each window)
                a = a._replace(mass=mass, buffer=[], da=dual_averaging_init(math.exp(a.da.log_step_size_bar)
                                                                             if a.da.iteration else a.step_size0))
        return a

    def finalize(self, a: _WindowedState):
        """The frozen kernel (eps-bar and the last mass matrix) and ``{"step_size", "mass"}``."""
        eps = dual_averaging_final_step_size(a.da) if a.da.iteration > 0 else a.step_size0
        cost = {"n_steps": a.n_init_grads}
        if self.restart == "find":
            cost["n_cubic"] = a.n_restart_cubic
        return self.make_step(eps, a.mass), {"step_size": float(eps), "mass": a.mass, "_cost": cost}


# ---------------------------------------------------------------------------
# the warm-ups of hmc.chain_spec and nuts.chain_spec
# ---------------------------------------------------------------------------
def stan_windows(n_warmup: int, init_buffer: int = 75, term_buffer: int = 50,
                 base_window: int = 25) -> list[tuple[int, int]]:
    """Stan's (and NumPyro's) slow windows [start, end) of a warm-up of ``n_warmup`` iterations.

    A fast initial buffer of 75 iterations, then slow windows of 25, 50, 100, ... iterations, the
    last one stretched to end where the fast terminal buffer of 50 begins (a window that would not
    fit whole is merged into the one before).  Below 20 iterations there is no window; below
    75 + 50 + 25 = 150 the buffers are 15% and 10% of the warm-up and the one window is the rest
    (Stan reference manual, "HMC algorithm parameters"; NumPyro ``build_adaptation_schedule``).
    """
    n = int(n_warmup)
    if n < 20:
        return []
    if init_buffer + term_buffer + base_window > n:
        init_buffer, term_buffer = int(0.15 * n), int(0.1 * n)
        base_window = n - init_buffer - term_buffer
    end_slow = n - term_buffer
    windows, start, size = [], init_buffer, base_window
    while start < end_slow:
        stop = start + size
        if stop + 2 * size > end_slow:  # the next (doubled) window would not fit: stretch this one
            stop = end_slow
        windows.append((start, stop))
        start, size = stop, 2 * size
    return windows


def resolve_adaptation(adaptation: str, target_accept: float | None, t0: float | None) -> tuple[float, float]:
    """(delta, t0) of a warm-up kind, where not given: ``"windowed"`` Stan's (0.8, 10),
    ``"step_size"`` Xiong et al.'s (0.65, 30).  An unknown kind is an error naming the allowed ones."""
    if adaptation not in ADAPTATIONS:
        raise ValueError(f"adaptation must be one of {ADAPTATIONS}, got {adaptation!r}")
    if adaptation == "windowed":
        defaults = (STAN_TARGET_ACCEPT, STAN_T0)
    else:
        defaults = (TARGET_ACCEPT, DA_T0)
    delta = defaults[0] if target_accept is None else float(target_accept)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {delta}")
    return delta, (defaults[1] if t0 is None else float(t0))


def windowed_adaptation(make_step: Callable, mass0, n_warmup: int, find_step_size: Callable, *,
                        mass_adaptation: str = "diagonal", step_size: float | None = None,
                        target_accept: float = STAN_TARGET_ACCEPT, gamma: float = DA_GAMMA,
                        t0: float = STAN_T0, kappa: float = DA_KAPPA) -> "WindowedAdaptation":
    """Stan's/NumPyro's warm-up of HMC and NUTS as a :class:`WindowedAdaptation`.

    Dual averaging of the step size towards ``target_accept`` throughout; at the end of each of
    :func:`stan_windows`' slow windows M^-1 becomes the window draws' regularised variances
    (``mass_adaptation="diagonal"``, Stan's and NumPyro's default), covariance (``"dense"``) or
    stays ``mass0`` (``"none"``), and the step size restarts from H&G's Alg. 4 at the current one
    (``restart="find"``).  ``make_step(eps, mass)``; ``find_step_size(rng, state, mass,
    initial=1.0) -> (eps, n_grad)``.
    """
    if mass_adaptation not in ("diagonal", "dense", "none"):
        raise ValueError(f"mass_adaptation must be 'diagonal', 'dense' or 'none', got {mass_adaptation!r}")
    if mass_adaptation == "dense":
        make_mass = lambda draws: mass_matrix("dense", regularised_covariance(draws))  # noqa: E731
    else:
        make_mass = lambda draws: mass_matrix("diagonal", regularised_covariance(draws, dense=False))  # noqa: E731
    windows = () if mass_adaptation == "none" else tuple(stan_windows(n_warmup))
    if not windows:  # no window: dual averaging of the step size in the given metric only
        return StepSizeAdaptation(lambda eps: make_step(eps, mass0), step_size,
                                  find_step_size=lambda r, st: find_step_size(r, st, mass0),
                                  target_accept=target_accept, gamma=gamma, t0=t0, kappa=kappa)
    return WindowedAdaptation(make_step, make_mass, mass0, int(n_warmup), find_step_size, step_size=step_size,
                              windows=windows, target_accept=target_accept, gamma=gamma, t0=t0, kappa=kappa,
                              restart="find")
