"""The supervised GPLVM's exact joint posterior of (psi, Z), with Z whitened by its prior, for NUTS.

Gadd et al.'s model (Sec. 2, eqs. 1-2) has the joint posterior

    p(psi, Z | X, Y)  propto  p(psi) prod_j N(z_:,j | 0, K_z(sigma)) p(Y | Z, theta, beta),

psi = (log sigma_1..k_x, log theta_1..k_z, log theta_S, log beta).  The paper integrates Z out by
importance sampling (eq. 6) inside a pseudo-marginal chain on psi; that estimate is heavy-tailed on the
simulation of Sec. 6.1 and the chains stick (``docs/reproduction/gadd_gplvm.md``).  Any exact sampler of
the joint has the same psi-marginal, so this module offers the other road: NUTS on (psi, V) with

    Z = L_z(sigma) V,   L_z = chol(K_z(sigma) + eps I),   V ~ N(0, I)   (N x k_z),

the non-centred ("whitened") parameterisation of ``gpbayes.mcmc.whitened_nuts`` (Murray & Adams 2010
eq. 5) applied to the latent layer.  The target, of dimension p + N k_z, is

    log pi(psi, V) = log p(psi) - |V|^2 / 2 + log p(Y | Z = L_z V, theta, beta)   (+ const),

with log p(Y | Z, theta, beta) = sum_i log N(y_:,i | 0, K_f(Z) + beta^-1 I) (eq. 1),
K_f(Z)_nm = theta_S exp(-1/2 sum_j theta_j (z_nj - z_mj)^2).

The gradient (reverse mode by hand)
-----------------------------------
With C = K_f + beta^-1 I = L_c L_c^T, A = C^-1 Y and G = (A A^T - k_y C^-1) / 2 = d log p(Y | Z) / dC,
and H = G o K_f:

* d/d log theta_S = sum(H);  d/d log beta = -beta^-1 tr(G);
* d/d log theta_j = -theta_j / 2 sum_nm H_nm (z_nj - z_mj)^2;
* d/dz_nj = -2 theta_j (z_nj (H 1)_n - (H z_:,j)_n)   (K_f depends on z_n through both its row and column);
* d/dV = L_z^T (d/dZ) - V;
* d/d log sigma_l = tr(K_z_bar dK_z / d log sigma_l), K_z_bar the Cholesky adjoint (Murray 2016) of
  L_bar = tril((d/dZ) V^T), and dK_z / d log sigma_l = -sigma_l / 2 (x_nl - x_ml)^2 K_z0.

O(N^3) operations per value and gradient (counted by ``gpbayes.linalg``): the two Cholesky factors, the
inverse of L_c and the two triangular solves of the adjoint -- five, at N = 30 in the paper's simulation.
The mirror symmetries of the model remain in the posterior: each latent column's sign (z_:,j -> -z_:,j)
and, with equal priors, the labels of the latent dimensions (theta_j, z_:,j) <-> (theta_k, z_:,k); a chain
may visit them, so quantities read from the chains should be invariant to them (``label_invariant``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.linalg.lapack import dpotrf as _dpotrf
from scipy.linalg.lapack import dtrtrs as _dtrtrs

from .. import linalg
from ..mcmc import elliptical_slice as ess
from ..mcmc import nuts, runner
from ..mcmc.adaptation import RandomWalkAdaptation
from ..mcmc.slice import univariate_update as slice_update
from ..sparse.svgp import cholesky_backward  # Murray 2016's symbolic reverse mode
from .vb import SupervisedGPLVM

__all__ = ["GPLVMJointPosterior", "joint_start", "chain_spec", "label_invariant",
           "JointGibbsState", "JointGibbsInfo", "gibbs_init", "gibbs_step", "gibbs_chain_spec",
           "TemperedState", "TemperedInfo", "tempered_step", "tempered_chain_spec", "respace_ladder"]

_LOG_2PI = math.log(2.0 * math.pi)


class GPLVMJointPosterior:
    """(psi, V) -> (log pi(psi, V), gradient): the whitened joint posterior of the module docstring.

    ``position`` is the concatenation [psi (p), vec(V) (N k_z, row-major: V[n, j] at n k_z + j)].  Where
    a matrix cannot be factorised or psi is outside the prior's support the value is -inf and the
    gradient NaN (NUTS then counts a divergence); ``n_failures`` counts the factorisation failures.
    """

    def __init__(self, model: SupervisedGPLVM, prior):
        if not isinstance(model, SupervisedGPLVM):
            raise TypeError(f"model must be a gpbayes.gplvm.SupervisedGPLVM, got {type(model).__name__}")
        if len(prior) != model.n_params:
            raise ValueError(f"prior has {len(prior)} components, the model {model.n_params}: {model.param_names}")
        self.model, self.prior = model, prior
        self.n, self.kz, self.kx, self.ky = model.n, model.latent_dim, model.input_dim, model.output_dim
        self.p = model.n_params
        self.dim = self.p + self.n * self.kz
        X = model.X
        # (k_x, N, N): the squared input differences of k_z, fixed for the chain
        self._dx2 = np.stack([(X[:, l, None] - X[None, :, l]) ** 2 for l in range(self.kx)])
        self.n_failures = 0

    def split(self, position) -> tuple[np.ndarray, np.ndarray]:
        """(psi, V) of a position [psi, vec(V)]."""
        position = np.asarray(position, dtype=np.float64)
        if position.shape != (self.dim,):
            raise ValueError(f"position: expected shape ({self.dim},) = p + N k_z = {self.p} + {self.n} x {self.kz}, "
                             f"got {position.shape}")
        return position[: self.p], position[self.p:].reshape(self.n, self.kz)

    def _latent_factor(self, psi) -> tuple[np.ndarray, np.ndarray]:
        """(K_z0 = k_z(X, X; sigma) without the jitter, L_z = chol(K_z0 + eps I))."""
        sigma = np.exp(psi[: self.kx])
        K0 = np.exp(-0.5 * np.tensordot(sigma, self._dx2, axes=1))
        K = K0.copy()
        K[np.diag_indices_from(K)] += self.model.latent_jitter
        return K0, linalg.cholesky(K, name="K_z", max_tries=1)

    def latent(self, position) -> np.ndarray:
        """Z = L_z(sigma) V (N, k_z) at ``position``."""
        psi, V = self.split(position)
        return self._latent_factor(psi)[1] @ V

    def log_density(self, position) -> float:
        """log pi(psi, V) alone (-inf where the value and gradient are refused)."""
        value, _ = self(position)
        return value

    def _refused(self):
        self.n_failures += 1
        return -math.inf, np.full(self.dim, np.nan)

    def __call__(self, position) -> tuple[float, np.ndarray]:
        """(log pi(psi, V), its gradient in (psi, vec V)); the formulas are the module docstring's."""
        psi, V = self.split(position)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            lp = float(self.prior.log_density(psi))
            if not math.isfinite(lp):  # outside the prior's support: not a failure
                return -math.inf, np.full(self.dim, np.nan)
            kx, kz = self.kx, self.kz
            theta, theta_s, beta = np.exp(psi[kx:kx + kz]), math.exp(psi[-2]), math.exp(psi[-1])
            try:
                Kz0, Lz = self._latent_factor(psi)
                Z = Lz @ V
                dz2 = (Z[:, None, :] - Z[None, :, :]) ** 2  # (N, N, k_z)
                Kf = theta_s * np.exp(-0.5 * dz2 @ theta)
                C = Kf.copy()
                C[np.diag_indices_from(C)] += 1.0 / beta
                Lc = linalg.cholesky(C, name="K_f + beta^-1 I", max_tries=1)
            except (np.linalg.LinAlgError, ValueError, FloatingPointError):
                return self._refused()
            # eq. 1: sum_i log N(y_:,i | 0, C)
            Wc = linalg.triangular_inverse(Lc)  # L_c^-1
            B = Wc @ self.model.Y  # L_c^-1 Y
            log_lik = (-0.5 * float(np.sum(B * B)) - self.ky * float(np.sum(np.log(np.diag(Lc))))
                       - 0.5 * self.n * self.ky * _LOG_2PI)
            value = lp + log_lik - 0.5 * float(np.sum(V * V)) - 0.5 * V.size * _LOG_2PI
            # G = dlog p(Y | Z) / dC = (A A^T - k_y C^-1) / 2, A = C^-1 Y
            A = Wc.T @ B
            G = 0.5 * (A @ A.T - self.ky * (Wc.T @ Wc))
            H = G * Kf
            g_theta = -0.5 * theta * np.einsum("nm,nmj->j", H, dz2)
            g_theta_s = float(np.sum(H))
            g_beta = -float(np.trace(G)) / beta
            # d/dZ, then through Z = L_z V
            Z_bar = -2.0 * theta[None, :] * (Z * H.sum(axis=1)[:, None] - H @ Z)
            V_grad = Lz.T @ Z_bar - V
            Kz_bar = cholesky_backward(Lz, Z_bar @ V.T)  # reads L_bar's lower triangle
            g_sigma = -0.5 * np.exp(psi[:kx]) * np.tensordot(self._dx2, Kz_bar * Kz0, axes=([1, 2], [0, 1]))
            grad = np.concatenate([g_sigma, g_theta, [g_theta_s, g_beta]])
            grad = np.concatenate([grad + self.prior.grad_log_density(psi), V_grad.ravel()])
        if not (math.isfinite(value) and np.all(np.isfinite(grad))):
            return self._refused()
        return value, grad


def joint_start(target: GPLVMJointPosterior, psi0, Z0) -> np.ndarray:
    """The position [psi0, vec(L_z(sigma0)^-1 Z0)]: a chain started at latent inputs Z0 (e.g. q(Z)'s mean)."""
    psi0 = np.asarray(psi0, dtype=np.float64)
    Z0 = np.asarray(Z0, dtype=np.float64).reshape(target.n, target.kz)
    _, Lz = target._latent_factor(psi0)
    V0 = linalg.solve_triangular(Lz, Z0, lower=True)
    return np.concatenate([psi0, V0.ravel()])


def rotate_latent(rng: np.random.Generator, state, target: GPLVMJointPosterior):
    """For each pair of latent columns, a rotation of V's columns by phi ~ U(0, 2 pi) (an independence
    proposal on the rotation group: symmetric, N(V; 0, I) unchanged; Z = L_z V rotates with V), accepted
    with the target's ratio.  ``state`` is a NUTS state (position, log density, gradient); returns the
    state after the moves (NUTS's, recomputed where a rotation was accepted) and the number accepted."""
    n_acc = 0
    for j in range(target.kz):
        for k in range(j + 1, target.kz):
            phi = rng.uniform(0.0, 2.0 * math.pi)
            c, s_ = math.cos(phi), math.sin(phi)
            psi, V = target.split(state.position)
            V_r = V.copy()
            V_r[:, j], V_r[:, k] = c * V[:, j] - s_ * V[:, k], s_ * V[:, j] + c * V[:, k]
            x = np.concatenate([psi, V_r.ravel()])
            value, grad = target(x)
            if _accept(rng, value - state.log_density):
                state = type(state)(x, value, grad)
                n_acc += 1
    return state, n_acc


def chain_spec(position0, target: GPLVMJointPosterior, *, n_adapt: int = 1000, step_size: float | None = None,
               rotations: bool = False, **nuts_options) -> runner.ChainSpec:
    """A NUTS chain on ``target`` (``gpbayes.mcmc.nuts.chain_spec``: Stan's warm-up and its options) whose
    kept position is psi, with Z = L_z V recorded per kept draw (``extra["Z"]``, (N, k_z)).

    ``rotations``: each NUTS transition is followed by :func:`rotate_latent` (k_z >= 2), the jump along the
    ring of nearly equivalent latent configurations that NUTS itself follows with many leapfrog steps;
    NUTS's warm-up (step size, mass matrix) is unchanged.  The composition leaves the target invariant."""
    if not rotations or target.kz < 2:
        spec = nuts.chain_spec(position0, target, n_adapt=n_adapt, step_size=step_size, **nuts_options)
        return runner.ChainSpec(spec.init, spec.step, spec.n_warmup, spec.adapt,
                                position=lambda st: np.array(st.position[: target.p]),
                                record=lambda st, info: {"Z": target.latent(st.position)})
    from ..mcmc.adaptation import resolve_adaptation, windowed_adaptation
    from ..mcmc.hmc import find_reasonable_step_size, mass_matrix

    max_tree_depth = int(nuts_options.pop("max_tree_depth", nuts.MAX_TREE_DEPTH))
    mass_adaptation = nuts_options.pop("mass_adaptation", "diagonal")
    target_accept, t0 = resolve_adaptation("windowed", nuts_options.pop("target_accept", None), None)
    if nuts_options:
        raise TypeError(f"chain_spec with rotations takes max_tree_depth, mass_adaptation, target_accept; "
                        f"not {sorted(nuts_options)}")

    def make_step(eps, mass):
        def step(rng, st):
            st, info = nuts.step(rng, st, target, eps, mass, max_tree_depth, "multinomial")
            st, _ = rotate_latent(rng, st, target)
            return st, info
        return step

    mass0 = mass_matrix("identity", dim=target.dim)
    if n_adapt <= 0:
        if step_size is None:
            raise ValueError("NUTS without adaptation (n_adapt = 0) needs a step_size")
        kernel, adapt = make_step(float(step_size), mass0), None
    else:
        kernel = None
        adapt = windowed_adaptation(make_step, mass0, int(n_adapt),
                                    lambda r, st, m, initial=1.0: find_reasonable_step_size(r, st, target, m, initial),
                                    mass_adaptation=mass_adaptation, step_size=step_size, target_accept=target_accept,
                                    t0=t0)
    return runner.ChainSpec(lambda: nuts.init(position0, target), kernel, int(n_adapt), adapt,
                            position=lambda st: np.array(st.position[: target.p]),
                            record=lambda st, info: {"Z": target.latent(st.position)})


def label_invariant(model: SupervisedGPLVM, psi_draws) -> dict[str, np.ndarray]:
    """Functions of psi draws (..., p) that the mirror symmetries leave unchanged: each ``sigma_l``,
    ``log_max_theta`` and ``log_min_theta`` (the largest and smallest of log theta_1..k_z: invariant to
    relabelling the latent dimensions), ``theta_S`` and ``beta``, all on the log scale."""
    psi = np.asarray(psi_draws, dtype=np.float64)
    kx, kz = model.input_dim, model.latent_dim
    out = {f"sigma_{l}": psi[..., l] for l in range(kx)}
    out["log_max_theta"] = psi[..., kx:kx + kz].max(axis=-1)
    out["log_min_theta"] = psi[..., kx:kx + kz].min(axis=-1)
    out["theta_S"], out["beta"] = psi[..., -2], psi[..., -1]
    return out


# ---------------------------------------------------------------------------
# A Metropolis-within-Gibbs sampler of the same joint posterior
# ---------------------------------------------------------------------------
# NUTS on (psi, V) above is exact but slow on Gadd et al.'s simulation: the data pin Z's shape while its
# rotation about the origin is nearly free (k_z = 2, p(Z | X, sigma) isotropic, p(Y | Z) nearly so), a
# ring along which trajectories need hundreds of leapfrog steps of a step size set by the ring's width
# (measured, case 3: step size 0.007, 562 leapfrog steps per draw).  The sampler below moves along
# those directions by construction, each move leaving p(psi, V | Y) invariant:
#
#   1. elliptical slice updates of V | psi, Y (Murray, Adams & MacKay 2010; prior N(0, I)), ``n_ess`` per
#      iteration -- Gadd et al.'s Alg. 3 in the whitened coordinates;
#   2. random-walk MH on all of psi with V fixed (non-centred: Z = L_z(sigma') V moves with sigma), the
#      proposal s L adapted in warm-up (``RandomWalkAdaptation``: Robbins-Monro scale, Haario covariance);
#   3. random-walk MH on log sigma with Z fixed (centred: V' = L_z(sigma')^-1 Z, acceptance from
#      p(Z | X, sigma') p(sigma')), the same marginal scale as move 2's; then (3b) univariate slice sampling
#      (Neal 2003, stepping out) of every coordinate of psi given Z -- sigma from p(sigma) p(Z | X, sigma),
#      theta, theta_S and beta from p(psi) p(Y | Z, psi) -- which needs no tuning;
#   4. per latent dimension j, the scale move (v_:,j, log theta_j) -> (e^s v_:,j, log theta_j - 2 s),
#      s ~ N(0, ``scale_sd``^2): theta_j (z_nj - z_mj)^2 is unchanged, so the likelihood is; the
#      acceptance ratio is N(e^s v_:,j; 0, I) e^(N s) p(log theta_j - 2 s) / (N(v_:,j; 0, I) p(log theta_j))
#      (the map's Jacobian e^(N s) in v, 1 in log theta);
#   5. for k_z >= 2, a rotation of each pair of latent columns by an angle phi ~ U(0, 2 pi) (an independence
#      proposal on the rotation group: symmetric, and N(V; 0, I) is unchanged), accepted with the
#      likelihood ratio -- the move along the ring.
#
# Each is a Metropolis-Hastings or slice update of p(psi, V | Y) (or a deterministic-measure-preserving
# map with its Jacobian), so their composition is exact; ``tests/test_gplvm_joint.py`` checks each move
# by a Geweke joint-distribution test.  Costs per iteration: 2 + 1 + 1 Cholesky factors for moves 2, 3
# and 5 (k_z = 2) and one per elliptical-slice likelihood evaluation.


class JointGibbsState(NamedTuple):
    """What carries between iterations: psi, V, Z = L_z V, L_z and log p(Y | Z, theta, beta)."""

    psi: np.ndarray
    V: np.ndarray  # (N, k_z)
    Z: np.ndarray  # (N, k_z)
    chol_z: np.ndarray  # L_z(sigma)
    log_likelihood: float
    log_prior: float

    @property
    def position(self) -> np.ndarray:
        """psi (the runner records it as the draw)."""
        return self.psi

    @property
    def log_density(self) -> float:
        """log p(psi) + log p(Y | Z, psi) - |V|^2 / 2: the joint target up to its constant."""
        return self.log_prior + self.log_likelihood - 0.5 * float(np.sum(self.V * self.V))


class JointGibbsInfo(NamedTuple):
    """What one iteration did: the psi block's MH step (``accepted``, ``acceptance_prob``, which the
    warm-up adapts on) and the other moves' acceptances."""

    accepted: bool
    acceptance_prob: float
    accepted_centred: bool
    accepted_scale: float  # fraction of the k_z scale moves accepted
    accepted_rotation: float  # fraction of the rotation moves accepted (NaN for k_z = 1)
    n_cubic: int
    n_shrinkages: int  # elliptical slice shrinkages


def _log_lik(model: SupervisedGPLVM, psi, Z) -> float:
    """eq. 1, log p(Y | Z, theta, beta) = sum_i log N(y_:,i | 0, K_f(Z) + beta^-1 I); -inf where the matrix
    cannot be factorised.  The same quantity as ``pseudo_marginal.log_likelihood`` (tested to rounding),
    built lean for the elliptical slice loop: K_f from the squared differences, one LAPACK Cholesky
    (counted by ``linalg.record_cubic``) and one triangular solve with Y."""
    kx, kz = model.input_dim, model.latent_dim
    theta, theta_s, noise = np.exp(psi[kx:kx + kz]), math.exp(psi[-2]), math.exp(-psi[-1])
    C = np.zeros((model.n, model.n))
    for j in range(kz):
        d = Z[:, j, None] - Z[None, :, j]
        C -= (0.5 * theta[j]) * (d * d)
    np.exp(C, out=C)
    C *= theta_s
    C[np.diag_indices_from(C)] += noise
    L, info = _dpotrf(C, lower=1, clean=1, overwrite_a=1)
    linalg.record_cubic("cholesky")
    if info != 0 or not np.all(np.isfinite(C)):
        return -math.inf
    A, info = _dtrtrs(L, model.Y, lower=1)
    if info != 0:
        return -math.inf
    n, ky = model.Y.shape
    return float(-0.5 * np.sum(A * A) - ky * np.sum(np.log(np.diag(L))) - 0.5 * n * ky * _LOG_2PI)


def _chol_z(model: SupervisedGPLVM, psi):
    try:
        return linalg.cholesky(model.latent_prior_cov(psi), name="K_z", max_tries=1)
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return None


def gibbs_init(model: SupervisedGPLVM, prior, psi, V) -> JointGibbsState:
    """The state at (psi, V); stops if the start has zero density."""
    psi = np.array(psi, dtype=np.float64)
    V = np.array(V, dtype=np.float64).reshape(model.n, model.latent_dim)
    L = model.latent_prior_chol(psi)
    Z = L @ V
    lp, ll = float(prior.log_density(psi)), _log_lik(model, psi, Z)
    if not (math.isfinite(lp) and math.isfinite(ll)):
        raise ValueError(f"the start psi = {psi} has log prior {lp} and log-likelihood {ll}: start elsewhere")
    return JointGibbsState(psi, V, Z, L, ll, lp)


def _accept(rng, log_ratio: float) -> bool:
    return bool(math.isfinite(log_ratio) and math.log(rng.uniform()) < log_ratio)


MOVES = ("ess", "block", "centred", "slice", "scale", "rotation")


def gibbs_step(rng: np.random.Generator, state: JointGibbsState, model: SupervisedGPLVM, prior, factor: np.ndarray,
               *, n_ess: int = 1, scale_sd: float = 0.2, slice_width: float = 1.0,
               moves=MOVES, inverse_temperature: float = 1.0) -> tuple[JointGibbsState, JointGibbsInfo]:
    """One iteration of moves 1-5 (the comment above this function) with the psi proposal factor ``factor``
    (p x p: psi' = psi + factor xi, xi ~ N(0, I)); ``moves`` selects a subset (each is exact on its own:
    the Geweke tests check them one by one).  ``inverse_temperature`` b < 1 targets the tempered joint
    p(psi) N(V; 0, I) p(Y | Z, psi)^b of a replica-exchange ladder (:func:`tempered_step`): the likelihood
    ratios of moves 1, 2, 3b and 5 are raised to b; moves 3 and 4 leave the likelihood unchanged.
    ``state.log_likelihood`` stays the untempered log p(Y | Z, psi)."""
    unknown = sorted(set(moves) - set(MOVES))
    if unknown:
        raise ValueError(f"moves: unknown {unknown}; the moves are {MOVES}")
    n, kz, kx = model.n, model.latent_dim, model.input_dim
    psi, V, Z, L, ll, lp = state
    b = float(inverse_temperature)
    if not 0.0 <= b <= 1.0:
        raise ValueError(f"inverse_temperature must be in [0, 1], got {inverse_temperature}")
    shrink = 0
    with linalg.count_ops() as ops, np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # move 1: elliptical slice on V | psi (prior N(0, I))
        for _ in range(int(n_ess) if "ess" in moves else 0):
            # the slice is on the tempered likelihood b log p(Y | Z, psi) (b = 1: exactly the plain one)
            st, info = ess.step(rng, ess.EllipticalSliceState(V.ravel(), b * ll), lambda u: u,
                                lambda u: b * _log_lik(model, psi, L @ u.reshape(n, kz)))
            V = st.position.reshape(n, kz)
            ll = st.log_likelihood / b if b > 0.0 else _log_lik(model, psi, L @ V)
            shrink += int(info.n_likelihood_evals) - 1
        Z = L @ V
        # move 2: random-walk MH on psi, V fixed
        prob, accepted = 0.0, False
        psi_p = psi + factor @ rng.standard_normal(psi.size) if "block" in moves else None
        lp_p = float(prior.log_density(psi_p)) if psi_p is not None else -math.inf
        if math.isfinite(lp_p):
            L_p = _chol_z(model, psi_p) if np.any(psi_p[:kx] != psi[:kx]) else L
            if L_p is not None:
                Z_p = L_p @ V
                ll_p = _log_lik(model, psi_p, Z_p)
                log_r = b * ll_p + lp_p - b * ll - lp
                prob = float(min(1.0, math.exp(min(log_r, 0.0)))) if math.isfinite(log_r) else 0.0
                if _accept(rng, log_r):
                    psi, L, Z, ll, lp, accepted = psi_p, L_p, Z_p, ll_p, lp_p, True
        # move 3: log sigma with Z fixed (centred); the acceptance reads p(Z | X, sigma)
        accepted_c, lp_c = False, -math.inf
        if "centred" in moves:
            scale = np.sqrt(np.sum(factor[:kx] ** 2, axis=1))
            psi_c = psi.copy()
            psi_c[:kx] += scale * rng.standard_normal(kx)
            lp_c = float(prior.log_density(psi_c))
        if math.isfinite(lp_c):
            L_c = _chol_z(model, psi_c)
            if L_c is not None:
                V_c = linalg.solve_triangular(L_c, Z, lower=True)
                # log N(Z | 0, L L^T) = -|L^-1 Z|^2 / 2 - k_z sum log diag L (+ const)
                log_r = (lp_c - 0.5 * float(np.sum(V_c * V_c)) - kz * float(np.sum(np.log(np.diag(L_c))))
                         - lp + 0.5 * float(np.sum(V * V)) + kz * float(np.sum(np.log(np.diag(L)))))
                if _accept(rng, log_r):
                    psi, L, V, lp, accepted_c = psi_c, L_c, V_c, lp_c, True
        # move 3b: univariate slice sampling (Neal 2003, stepping out) of each coordinate of psi given Z
        # (centred): sigma_l from p(sigma) p(Z | X, sigma), the others from p(psi) p(Y | Z, psi); no tuning,
        # the bracket width ``slice_width`` on the log scale
        if "slice" in moves:
            def cond_sigma(x, l):
                q = psi.copy()
                q[l] = x
                lpq = float(prior.log_density(q))
                if not math.isfinite(lpq):
                    return -math.inf, None
                Lq = _chol_z(model, q)
                if Lq is None:
                    return -math.inf, None
                Vq = linalg.solve_triangular(Lq, Z, lower=True)
                return lpq - 0.5 * float(np.sum(Vq * Vq)) - kz * float(np.sum(np.log(np.diag(Lq)))), (q, lpq, Lq, Vq)

            def cond_f(x, i):
                q = psi.copy()
                q[i] = x
                lpq = float(prior.log_density(q))
                if not math.isfinite(lpq):
                    return -math.inf, None
                llq = _log_lik(model, q, Z)
                return lpq + b * llq, (q, lpq, llq)

            for i in range(psi.size):
                if i < kx:
                    f0, _ = cond_sigma(psi[i], i)
                    _, _, aux, *_ = slice_update(rng, float(psi[i]), f0 + math.log(rng.uniform()),
                                                 lambda x, i=i: cond_sigma(x, i), slice_width, 10)
                    if aux is not None:
                        psi, lp, L, V = aux
                else:
                    f0 = lp + b * ll
                    _, _, aux, *_ = slice_update(rng, float(psi[i]), f0 + math.log(rng.uniform()),
                                                 lambda x, i=i: cond_f(x, i), slice_width, 10)
                    if aux is not None:
                        psi, lp, ll = aux
        # move 4: scale moves (v_:,j, log theta_j) -> (e^s v_:,j, log theta_j - 2 s), likelihood unchanged
        n_scale = 0
        for j in range(kz if "scale" in moves else 0):
            s = float(scale_sd) * rng.standard_normal()
            psi_s = psi.copy()
            psi_s[kx + j] -= 2.0 * s
            lp_s = float(prior.log_density(psi_s))
            vv = float(V[:, j] @ V[:, j])
            log_r = lp_s - lp - 0.5 * (math.exp(2.0 * s) - 1.0) * vv + n * s
            if _accept(rng, log_r):
                psi, lp = psi_s, lp_s
                V = V.copy()
                V[:, j] *= math.exp(s)
                n_scale += 1
        Z = L @ V
        # move 5: rotations of pairs of latent columns, phi ~ U(0, 2 pi)
        n_rot, n_pairs = 0, 0
        for j in range(kz if "rotation" in moves else 0):
            for k in range(j + 1, kz):
                n_pairs += 1
                phi = rng.uniform(0.0, 2.0 * math.pi)
                c, s_ = math.cos(phi), math.sin(phi)
                V_r = V.copy()
                V_r[:, j], V_r[:, k] = c * V[:, j] - s_ * V[:, k], s_ * V[:, j] + c * V[:, k]
                Z_r = L @ V_r
                ll_r = _log_lik(model, psi, Z_r)
                if _accept(rng, b * (ll_r - ll)):
                    V, Z, ll = V_r, Z_r, ll_r
                    n_rot += 1
    info = JointGibbsInfo(accepted, prob, accepted_c, n_scale / kz if "scale" in moves else math.nan, n_rot / n_pairs if n_pairs else math.nan,
                          int(ops.cubic), shrink)
    return JointGibbsState(psi, V, Z, L, ll, lp), info


def gibbs_chain_spec(model: SupervisedGPLVM, prior, psi0, Z0, *, n_warmup: int, proposal_sd: float = 0.1,
                     n_ess: int = 1, scale_sd: float = 0.2, target_accept: float = 0.25) -> runner.ChainSpec:
    """A chain of :func:`gibbs_step` from (psi0, Z0), the psi proposal adapted in ``n_warmup`` iterations
    (``RandomWalkAdaptation``: from ``proposal_sd``^2 I, Robbins-Monro scale towards ``target_accept``,
    the draws' covariance at n/2 and 3n/4) and frozen after; Z recorded per kept draw (``extra["Z"]``)."""
    psi0 = np.asarray(psi0, dtype=np.float64)
    L0 = model.latent_prior_chol(psi0)
    V0 = linalg.solve_triangular(L0, np.asarray(Z0, dtype=np.float64).reshape(model.n, model.latent_dim), lower=True)

    def make_step(factor):
        return lambda r, st: gibbs_step(r, st, model, prior, factor, n_ess=n_ess, scale_sd=scale_sd)

    p = psi0.size
    adapt = RandomWalkAdaptation(make_step, float(proposal_sd) ** 2 * np.eye(p), int(n_warmup),
                                 target_accept=target_accept, initial_scale=1.0) if n_warmup > 0 else None
    step = None if adapt is not None else make_step(float(proposal_sd) * np.eye(p))
    return runner.ChainSpec(lambda: gibbs_init(model, prior, psi0, V0), step, int(n_warmup), adapt,
                            record=lambda st, info: {"Z": st.Z.copy()})


# ---------------------------------------------------------------------------
# Replica exchange (parallel tempering) of the Gibbs sampler
# ---------------------------------------------------------------------------
# On Gadd et al.'s Case 2 the joint posterior has separated local modes (log p differing by 10-25 nats,
# latent GPs of different smoothness sigma) between which the moves above do not pass in 40,000
# iterations (docs/reproduction/gadd_gplvm.md).  Replica exchange (Swendsen & Wang 1986; Geyer 1991)
# runs K copies at inverse temperatures 1 = b_0 > b_1 > ... > b_K-1 > 0, copy k targeting
# pi_k(psi, V) propto p(psi) N(V; 0, I) p(Y | Z, psi)^b_k, each moved by ``gibbs_step`` at b_k, and after
# every sweep proposes to exchange the states of neighbouring temperatures (k, k+1), accepted with
#
#     min{1, exp((b_k - b_k+1) (log p(Y | Z_k+1, psi_k+1) - log p(Y | Z_k, psi_k)))},
#
# the MH ratio of the swap on the product space prod_k pi_k (which the swap and each copy's move leave
# invariant), so the b_0 = 1 copy is a chain of the posterior.  Pairs are offered in the deterministic
# even-odd order (even pairs on even sweeps, odd pairs on odd ones; Okabe et al. 2001, Syed et al. 2022),
# each exact on its own.


class TemperedState(NamedTuple):
    """The K replicas, replica k at inverse temperature ``betas[k]`` (replica 0 is the posterior's)."""

    replicas: tuple
    sweep: int

    @property
    def position(self) -> np.ndarray:
        """psi of the b = 1 replica (the draw)."""
        return self.replicas[0].psi

    @property
    def log_density(self) -> float:
        """The b = 1 replica's log p(psi, V | Y) up to its constant."""
        return self.replicas[0].log_density

    @property
    def Z(self) -> np.ndarray:
        """Z of the b = 1 replica."""
        return self.replicas[0].Z


class TemperedInfo(NamedTuple):
    """The b = 1 replica's ``JointGibbsInfo`` fields, the swaps offered and accepted this sweep (per pair
    (k, k+1), NaN where not offered) and every replica's psi-block acceptance probability."""

    accepted: bool
    acceptance_prob: float
    accepted_centred: bool
    accepted_scale: float
    accepted_rotation: float
    n_cubic: int
    n_shrinkages: int
    swap_accepted: tuple
    replica_acceptance_prob: tuple


def tempered_step(rng: np.random.Generator, state: TemperedState, model: SupervisedGPLVM, prior, factors, betas,
                  *, n_ess: int = 1, scale_sd: float = 0.2, moves=MOVES) -> tuple[TemperedState, TemperedInfo]:
    """One sweep of replica exchange (the comment above :class:`TemperedState`): :func:`gibbs_step` of
    every replica at its inverse temperature with its own psi proposal factor ``factors[k]`` (``moves``
    as there), then the even or odd neighbour swaps."""
    K = len(betas)
    reps, infos = [], []
    for k in range(K):
        st, inf = gibbs_step(rng, state.replicas[k], model, prior, factors[k], n_ess=n_ess, scale_sd=scale_sd,
                             moves=moves, inverse_temperature=float(betas[k]))
        reps.append(st)
        infos.append(inf)
    swaps = [math.nan] * (K - 1)
    for k in range(state.sweep % 2, K - 1, 2):
        log_r = (float(betas[k]) - float(betas[k + 1])) * (reps[k + 1].log_likelihood - reps[k].log_likelihood)
        ok = _accept(rng, log_r)
        swaps[k] = float(ok)
        if ok:
            reps[k], reps[k + 1] = reps[k + 1], reps[k]
    i0 = infos[0]
    info = TemperedInfo(i0.accepted, i0.acceptance_prob, i0.accepted_centred, i0.accepted_scale,
                        i0.accepted_rotation, int(sum(i.n_cubic for i in infos)), int(sum(i.n_shrinkages for i in infos)),
                        tuple(swaps), tuple(float(i.acceptance_prob) for i in infos))
    return TemperedState(tuple(reps), state.sweep + 1), info


class _ReplicaInfo(NamedTuple):
    acceptance_prob: float


def respace_ladder(betas, rejection) -> np.ndarray:
    """Syed, Bouchard-Cote, Deligiannidis & Doucet (2022, JRSSB) Sec. 5.1: the ladder with the same end
    points and size whose neighbours have equal estimated swap rejection rates.

    ``betas`` decreasing from 1, ``rejection[k]`` the observed rejection rate of the swap (k, k+1).  The
    cumulative rejection Lambda(b) (piecewise linear in b through the ladder, the local communication
    barrier's estimate) is inverted at K equally spaced levels.  A pair never offered (NaN) counts as
    the mean of the others."""
    b = np.asarray(betas, dtype=np.float64)[::-1]  # increasing
    r = np.asarray(rejection, dtype=np.float64)[::-1]
    r = np.where(np.isfinite(r), r, np.nanmean(r) if np.any(np.isfinite(r)) else 0.5)
    r = np.maximum(r, 1e-3)  # keep Lambda strictly increasing
    lam = np.concatenate([[0.0], np.cumsum(r)])
    new = np.interp(np.linspace(0.0, lam[-1], b.size), lam, b)
    new[0], new[-1] = b[0], b[-1]
    return new[::-1].copy()


class _TemperedAdaptation:
    """Each replica's psi proposal adapted as ``RandomWalkAdaptation`` adapts one chain's, on the states
    and acceptance probabilities at its own temperature; with ``adapt_ladder``, the inverse temperatures
    respaced by :func:`respace_ladder` from the swaps of rounds ending at 1/8, 1/4 and 1/2 of the warm-up
    (Syed et al. 2022's doubling rounds); everything frozen after warm-up."""

    def __init__(self, make_step, proposal_cov, n_warmup: int, betas, target_accept: float, adapt_ladder: bool):
        self.make_step, self.K, self.n_warmup = make_step, len(betas), int(n_warmup)
        self.betas0, self.adapt_ladder = np.asarray(betas, dtype=np.float64), bool(adapt_ladder)
        self.rw = [RandomWalkAdaptation(lambda f: None, proposal_cov, n_warmup, target_accept=target_accept,
                                        initial_scale=1.0, position=lambda s: s.psi) for _ in range(self.K)]
        n = self.n_warmup
        self.rounds = sorted({m for m in (n // 8, n // 4, n // 2) if m >= 8}) if self.adapt_ladder and self.K > 2 else []

    def init(self, rng, state):
        return ([a.init(rng, state.replicas[k]) for k, a in enumerate(self.rw)], self.betas0.copy(),
                np.zeros(self.K - 1), np.zeros(self.K - 1))

    @staticmethod
    def _factors(rw_states):
        return [np.exp(s.log_scale) * s.chol for s in rw_states]

    def kernel(self, a):
        return self.make_step(self._factors(a[0]), a[1])

    def update(self, a, iteration, state, info):
        rw_states, betas, offered, accepted = a
        rw_states = [ad.update(st, iteration, state.replicas[k], _ReplicaInfo(info.replica_acceptance_prob[k]))
                     for k, (ad, st) in enumerate(zip(self.rw, rw_states))]
        sw = np.asarray(info.swap_accepted, dtype=np.float64)
        seen = np.isfinite(sw)
        offered, accepted = offered + seen, accepted + np.where(seen, sw, 0.0)
        if iteration + 1 in self.rounds:
            with np.errstate(invalid="ignore", divide="ignore"):
                rejection = 1.0 - accepted / offered
            betas = respace_ladder(betas, rejection)
            offered, accepted = np.zeros(self.K - 1), np.zeros(self.K - 1)
        return rw_states, betas, offered, accepted

    def finalize(self, a):
        rw_states, betas = a[0], a[1]
        return self.make_step(self._factors(rw_states), betas), {
            "proposal_scale": float(np.exp(rw_states[0].log_scale)),
            "replica_proposal_scales": [float(np.exp(s.log_scale)) for s in rw_states],
            "inverse_temperatures": [float(b) for b in betas]}


def tempered_chain_spec(model: SupervisedGPLVM, prior, psi0, Z0, betas, *, n_warmup: int,
                        proposal_sd: float = 0.1, n_ess: int = 1, scale_sd: float = 0.2,
                        target_accept: float = 0.25, moves=MOVES, adapt_ladder: bool = False) -> runner.ChainSpec:
    """A replica-exchange chain (:func:`tempered_step`) at inverse temperatures ``betas`` (``betas[0]`` = 1,
    decreasing, > 0), every replica starting at (psi0, Z0) and its psi proposal adapted in ``n_warmup``
    sweeps as :func:`gibbs_chain_spec` adapts one chain's; with ``adapt_ladder`` the interior temperatures
    are respaced in warm-up to equal swap rejection rates (:func:`respace_ladder`; the end points stay).
    The b = 1 replica's psi is the draw and its Z is recorded (``extra["Z"]``), with the swaps accepted per
    pair (``extra["swap_accepted"]``); the ladder used after warm-up is ``params["inverse_temperatures"]``."""
    betas = np.asarray(betas, dtype=np.float64)
    if betas.ndim != 1 or betas.size < 1 or betas[0] != 1.0 or np.any(np.diff(betas) >= 0) or betas[-1] <= 0:
        raise ValueError(f"betas must start at 1 and decrease strictly to a positive value, got {betas.tolist()}")
    psi0 = np.asarray(psi0, dtype=np.float64)
    L0 = model.latent_prior_chol(psi0)
    V0 = linalg.solve_triangular(L0, np.asarray(Z0, dtype=np.float64).reshape(model.n, model.latent_dim), lower=True)
    K, p = betas.size, psi0.size

    def make_step(factors, ladder):
        return lambda r, st: tempered_step(r, st, model, prior, factors, ladder, n_ess=n_ess, scale_sd=scale_sd,
                                           moves=moves)

    def init():
        s0 = gibbs_init(model, prior, psi0, V0)
        return TemperedState(tuple(s0 for _ in range(K)), 0)

    adapt = (_TemperedAdaptation(make_step, float(proposal_sd) ** 2 * np.eye(p), int(n_warmup), betas, target_accept,
                                 adapt_ladder) if n_warmup > 0 else None)
    step = None if adapt is not None else make_step([float(proposal_sd) * np.eye(p)] * K, betas)
    return runner.ChainSpec(init, step, int(n_warmup), adapt,
                            record=lambda st, info: {"Z": st.Z.copy(),
                                                     "swap_accepted": np.asarray(info.swap_accepted, dtype=float)})
