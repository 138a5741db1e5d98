"""MCMC for variationally sparse GPs (Hensman, Matthews, Filippone & Ghahramani 2015).

Target (poster, "Tricks: whiten/center"): with u = L v, L L^T = K_uu(theta),

    log q*(v, theta) = sum_n E_{p(f_n | u = L v, theta)}[log p(y_n | f_n)]
                       + log N(v; 0, I) + log p(theta) + const,            (T1)

the optimal free-form variational distribution over (u, theta) written in
whitened coordinates (poster, "Optimal q*(u, theta)").  p(f_n | u = L v) =
N(W^T v, k_nn - |W_:n|^2), W = L^-1 K_uf (``svgp.whitened_conditional``),
and each 1-D expectation is Gauss-Hermite quadrature (poster, "Tricks:
quadrature").  ``log_q_star`` evaluates (T1) with its exact gradient in
O(N M^2) (plus one M x M Cholesky and the O(M^3) Cholesky backward, poster
"Cholesky backpropagation").  The constant -M C/2 log 2 pi of N(v; 0, I) is
included, so with Z = X and a Gaussian likelihood (T1) is the whitened
full-GP joint log p(y | f = L v) + log N(v; 0, I) + log p(theta) exactly.
theta is sampled as psi = log theta; ``prior`` is on psi (``gpbayes.priors``
adds the Jacobian).  Where K_uu cannot be factorised (or the kernel
overflows at extreme psi), or psi is outside the prior's support, (T1) is
-inf.

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

Posterior predictive from draws: ``predict_latent_draws``,
``predict_class_probabilities`` (binary or robust-max multiclass),
``predict_intensity`` (Poisson / log-Gaussian Cox process).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, NamedTuple

import numpy as np

from .. import linalg
from ..mcmc import adaptation, hmc, random_walk, runner
from . import svgp

__all__ = [
    "SparseTarget",
    "log_q_star",
    "HMCParameters",
    "hmc_kernel",
    "n_leapfrog_steps",
    "window_mass",
    "hmc_adaptation",
    "sample_joint",
    "GibbsState",
    "GibbsParameters",
    "GibbsInfo",
    "gibbs_init",
    "gibbs_step",
    "GibbsAdaptation",
    "gibbs_adaptation",
    "sample_gibbs",
    "initial_position",
    "predict_latent_draws",
    "predict_class_probabilities",
    "predict_intensity",
]

_LOG_2PI = float(np.log(2.0 * np.pi))

LogDensityAndGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


# ---------------------------------------------------------------------------
# the target (T1)
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SparseTarget:
    """Data, inducing inputs Z (fixed), kernel, likelihood and prior of (T1).

    The flat position used by the samplers is x = (v.ravel(), psi) with v of
    shape (M, C) in C order.
    """

    X: np.ndarray
    y: np.ndarray
    Z: np.ndarray
    kernel: object
    likelihood: object
    prior: object
    n_quad: int = 20
    jitter: float = 1e-6

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float64)
        X = X[:, None] if X.ndim == 1 else X
        Z = np.asarray(self.Z, dtype=np.float64)
        Z = Z[:, None] if Z.ndim == 1 else Z
        if Z.shape[1] != X.shape[1]:
            raise ValueError(f"Z has {Z.shape[1]} columns but X has {X.shape[1]}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "Z", Z)
        object.__setattr__(self, "y", self.likelihood.check_targets(self.y))
        if self.y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {self.y.shape[0]} targets")
        if len(self.prior) != self.kernel.n_params:
            raise ValueError(
                f"prior has {len(self.prior)} components, kernel has {self.kernel.n_params} "
                f"parameters {self.kernel.param_names}"
            )

    @property
    def n_latent(self) -> int:
        return int(getattr(self.likelihood, "n_latent", 1))

    @property
    def n_inducing(self) -> int:
        return int(self.Z.shape[0])

    @property
    def dim(self) -> int:
        return self.n_inducing * self.n_latent + self.kernel.n_params

    def split(self, position) -> tuple[np.ndarray, np.ndarray]:
        """(v (M, C), psi) from a flat position."""
        position = np.asarray(position, dtype=np.float64)
        k = self.n_inducing * self.n_latent
        return position[:k].reshape(self.n_inducing, self.n_latent), position[k:]

    def join(self, v, psi) -> np.ndarray:
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel(), np.asarray(psi, dtype=np.float64)])

    def log_density(self, position) -> float:
        v, psi = self.split(position)
        return log_q_star(self, v, psi, grad="none")[0]

    def logdensity_and_grad(self, position) -> tuple[float, np.ndarray]:
        """(T1) and its gradient w.r.t. the flat position (v, psi)."""
        v, psi = self.split(position)
        value, dv, dpsi = log_q_star(self, v, psi, grad="joint")
        return value, np.concatenate([dv.ravel(), dpsi])


def log_q_star(target: SparseTarget, v, psi, grad: str = "joint"):
    """(T1) at (v, psi) and its gradients ``(value, dv (M, C), dpsi)``.

    ``grad``: ``"joint"`` (both), ``"v"`` (dpsi is None: no Cholesky
    backward, what the Gibbs sampler's HMC on v needs) or ``"none"``.
    With g_mu = dE/dmu (N, C), g_s = sum_c dE/dvar_c (N,):

      dv      = W g_mu - v
      W_bar   = v g_mu^T - 2 W diag(g_s),  knn_bar = g_s
      dpsi    = ``whitened_conditional_backward`` + d log p(psi)
    """
    if grad not in ("joint", "v", "none"):
        raise ValueError(f"grad must be 'joint', 'v' or 'none', got {grad!r}")
    M, C = target.n_inducing, target.n_latent
    v = np.asarray(v, dtype=np.float64).reshape(M, C)
    psi = np.asarray(psi, dtype=np.float64)
    zero = (np.zeros((M, C)), np.zeros(psi.shape) if grad == "joint" else None)
    if not (np.all(np.isfinite(psi)) and np.all(np.isfinite(v))):
        return -np.inf, *zero
    with np.errstate(over="ignore"):
        log_prior_psi = float(target.prior.log_density(psi))
    if not np.isfinite(log_prior_psi):
        return -np.inf, *zero
    try:
        cond = svgp.whitened_conditional(target.kernel, psi, target.Z, target.X, target.jitter)
    except linalg.NotPositiveDefiniteError:
        return -np.inf, *zero
    # p(f_n | u = L v): mean W^T v, variance k_nn - |W_:n|^2 (the same for every c)
    mu = cond.W.T @ v
    var = np.repeat(cond.var[:, None], C, axis=1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # far out in the tails (trial points of the step-size search) the
        # likelihood's derivatives can overflow; such points get density 0
        E, g_mu, g_var = svgp.expected_log_lik(target.likelihood, target.y, mu, var, target.n_quad)
    value = float(np.sum(E)) - 0.5 * float(np.sum(v * v)) - 0.5 * M * C * _LOG_2PI + log_prior_psi
    if not (np.isfinite(value) and np.all(np.isfinite(g_mu)) and np.all(np.isfinite(g_var))):
        return -np.inf, *zero
    if grad == "none":
        return value, None, None
    dv = cond.W @ g_mu - v
    if grad == "v":
        return value, dv, None
    g_s = g_var.sum(axis=1)
    W_bar = v @ g_mu.T - 2.0 * cond.W * g_s[None, :]
    dpsi, _ = svgp.whitened_conditional_backward(
        target.kernel, psi, target.Z, target.X, cond, W_bar, g_s, inputs=False
    )
    return value, dv, dpsi + target.prior.grad_log_density(psi)


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
    """Joint HMC over (v, psi): ``hmc_adaptation`` warm-up, then ``n_draws`` kept draws.

    A ``runner.Chain``: ``draws`` are psi (n_draws, P), ``extra["v"]`` the
    whitened inducing values (n_draws, M, C); ``stats`` ``lp``, ``accepted``,
    ``acceptance_rate``, ``n_steps`` (gradient evaluations), ``n_leapfrog``
    (L), ``energy_error``, ``diverging``, ``n_cubic``, ``wall_time``;
    ``params`` ``step_size`` and ``mass``; ``warmup`` the warm-up cost.
    ``options`` go to ``hmc_adaptation``.
    """
    fn = target.logdensity_and_grad
    adapt = hmc_adaptation(fn, target.dim, n_warmup, **options)
    return runner.run_chain(rng, None, lambda: hmc.init(position0, fn), n_draws=n_draws, n_warmup=n_warmup,
                            adapt=adapt, callback=callback, position=lambda s: target.split(s.position)[1],
                            record=lambda s, info: {"v": target.split(s.position)[0]})


# ---------------------------------------------------------------------------
# Gibbs baseline: HMC on v | theta, MH on psi | v
# ---------------------------------------------------------------------------
class GibbsState(NamedTuple):
    v: hmc.HMCState  # position = vec v, log_density = (T1), grad = d(T1)/dv at the current psi
    psi: np.ndarray


class GibbsParameters(NamedTuple):
    v_hmc: HMCParameters
    psi_proposal_factor: np.ndarray  # L with MH proposal covariance L L^T


class GibbsInfo(NamedTuple):
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
        return self.step_size.init(rng, state), math.log(self.psi_scale)

    def kernel(self, a):
        return self.make_step(self.step_size.kernel(a[0]), math.exp(a[1]))

    def update(self, a, iteration: int, state, info):
        log_s = adaptation.robbins_monro_log_scale(a[1], info.psi_acceptance_prob, iteration, self.psi_target_accept)
        return self.step_size.update(a[0], iteration, state, info), log_s

    def finalize(self, a):
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
    d_psi = target.kernel.n_params

    def make_step(eps, s):
        v_hmc = HMCParameters(eps, n_leapfrog_steps(eps, trajectory_length, max_steps), mass, step_size_jitter)
        params = GibbsParameters(v_hmc, s * np.eye(d_psi))
        return lambda rng, state: gibbs_step(rng, state, target, params)

    def find(rng, state):
        return _find_step_size(_v_fn(target, state.psi))(rng, state.v, mass)

    step_size = adaptation.StepSizeAdaptation(lambda eps: eps, find_step_size=find, target_accept=target_accept,
                                              t0=DA_T0)
    return GibbsAdaptation(make_step, step_size, psi_scale, psi_target_accept)


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
    """The Gibbs baseline: ``gibbs_adaptation`` warm-up, then ``n_draws`` sweeps.

    A ``runner.Chain`` as ``sample_joint``'s (``acceptance_rate``, ``n_steps``,
    ... are the v-step's), plus ``psi_accepted`` and ``psi_acceptance_prob``;
    ``params`` ``step_size`` and ``psi_proposal_scale``.
    """
    v0, psi0 = target.split(position0)
    M, C = target.n_inducing, target.n_latent
    return runner.run_chain(rng, None, lambda: gibbs_init(target, v0, psi0), n_draws=n_draws, n_warmup=n_warmup,
                            adapt=gibbs_adaptation(target, **options), callback=callback,
                            position=lambda s: s.psi, lp=lambda s: s.v.log_density,
                            record=lambda s, info: {"v": s.v.position.reshape(M, C)})


# ---------------------------------------------------------------------------
# initialisation and posterior predictive
# ---------------------------------------------------------------------------
def initial_position(rng: np.random.Generator, target: SparseTarget, params: svgp.SVGPParams) -> np.ndarray:
    """A draw v ~ q(v) = N(m, R R^T) of a fitted SVGP, with its psi (poster,
    "Fit a Gaussian approximation to init the sampler")."""
    M, C = params.m.shape
    z = rng.standard_normal((C, M))
    v = params.m + np.einsum("cmk,ck->mc", np.tril(params.R), z)
    return target.join(v, params.psi)


def predict_latent_draws(target: SparseTarget, v_draws, psi_draws, Xstar):
    """p(f* | u = L v_s, theta_s) for each draw s: means (S, N*, C), variances (S, N*)."""
    v_draws = np.asarray(v_draws, dtype=np.float64)
    psi_draws = np.asarray(psi_draws, dtype=np.float64)
    means, variances = [], []
    for v, psi in zip(v_draws, psi_draws):
        mu, var = svgp.predict_latent(target.kernel, psi, target.Z, v, Xstar, target.jitter)
        means.append(mu)
        variances.append(var)
    return np.array(means), np.array(variances)


def predict_class_probabilities(target: SparseTarget, v_draws, psi_draws, Xstar, n_points: int = 20):
    """Per-draw predictive class probabilities; average over axis 0 for the
    posterior predictive.

    Binary likelihoods (labels +-1): p(y* = +1 | v_s, theta_s) =
    E_{p(f*|u)}[p(y* = +1 | f*)] by Gauss-Hermite, shape (S, N*).
    Robust-max: (S, N*, C) from ``RobustMax.predict_proba``.
    """
    means, variances = predict_latent_draws(target, v_draws, psi_draws, Xstar)
    lik = target.likelihood
    if hasattr(lik, "predict_proba"):
        return np.array([lik.predict_proba(m, np.repeat(s[:, None], m.shape[1], axis=1), n_points)
                         for m, s in zip(means, variances)])
    t, w = svgp.gauss_hermite(n_points)
    F = means[:, :, 0][:, None, :] + np.sqrt(variances)[:, None, :] * t[None, :, None]  # (S, Q, N*)
    return np.einsum("q,sqn->sn", w, np.exp(lik.log_lik(1.0, F)))


def predict_intensity(target: SparseTarget, v_draws, psi_draws, Xstar, exposure=1.0, offset=0.0):
    """Per-draw E[exposure exp(f* + offset) | v_s, theta_s] = exposure exp(offset + mu + s2/2),
    the intensity of a log-Gaussian Cox process / Poisson rate, shape (S, N*)."""
    means, variances = predict_latent_draws(target, v_draws, psi_draws, Xstar)
    return exposure * np.exp(offset + means[:, :, 0] + 0.5 * variances)
