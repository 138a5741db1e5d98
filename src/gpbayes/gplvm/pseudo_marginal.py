"""Pseudo-marginal inference for the supervised GPLVM (Gadd et al., Secs. 4-5).

* ``log_likelihood``: log p(Y | Z, theta, beta), eq. 1 (one Cholesky).
* ``pseudo_marginal_estimate``: eq. 6, the importance-sampling estimate of
  p(Y | X, psi) with Q draws from the variational q(Z) of Alg. 1, in log
  space (log-mean-exp of the log-weights).
* ``init`` / ``step``: Alg. 2, adaptive pseudo-marginal MH within Gibbs over
  blocks of psi, with q re-optimised at every proposed psi.
* ``latent_init`` / ``latent_step``: Alg. 3, elliptical slice sampling of Z
  given psi (using ``gpbayes.mcmc.elliptical_slice``).
* ``within_gibbs_init`` / ``within_gibbs_step``: one iteration of Alg. 2
  followed by Alg. 3, over a state holding both; ``run_chain`` runs it
  with ``gpbayes.mcmc.runner.run_chain``.
* ``predictive_mixture`` / ``mixture_log_density``: eqs. 7-8;
  ``ml_predictive_mixture``: the type-II ML baseline with point estimates.

Importance weights (eq. 6)
--------------------------
With q from ``gpbayes.gplvm.vb`` (whitened coordinates v_j = L_z^-1 z_j,
q(v_j) = N(a_j, W_j^-1), W_j = R_j R_j^T) and eps_j = R_j^T (v_j - a_j):

    log p(Z | X, sigma) - log q(Z) = sum_j [ -|v_j|^2/2 + |eps_j|^2/2 - log|W_j|/2 ]

(the log |K_z| terms cancel), so a weight costs one triangular solve with
L_z and the Cholesky of K_f(Z) + beta^-1 I in log p(Y | Z).  The estimate
exp(log p~) is unbiased for p(Y | X, psi) for any q with full support, so the
chain targets the exact posterior (Andrieu & Roberts 2009) as long as q is a
function of (psi, Y) only.

Which q: exactness and warm starts
----------------------------------
By default q at a proposed psi' is optimised from the deterministic PCA
initialisation of Alg. 1 (``initial_variational``), so q is a function of
(psi', Y) alone and the stationary distribution is exactly p(psi | Y).
``reference_params`` replaces that start by fixed variational parameters
(the pipeline passes the type-II ML fit's q): still a function of (psi', Y)
alone, and close to the optimum near the ML estimate, so a few L-BFGS
iterations suffice (Gadd et al. Sec. 7: "fewer VB optimisation iterations";
the estimate stays unbiased whatever the iteration count, only its variance
changes).  ``warm_start=True`` starts instead from the current state's q (the
paper's "re-optimise"), which is cheaper but makes q depend on the chain's
history through the optimiser's end point; the chain is then exact only up
to the optimiser's tolerance (the same caveat as
``gpbayes.estimators.importance.PseudoMarginalTarget``).

Correlated pseudo-marginal moves (``rho > 0``; not in the paper)
----------------------------------------------------------------
The Q draws of eq. 6 are Z_q = mu + T eps_q (``sample_latent``) with standard
normals eps = (eps_1..eps_Q), shape (k_z, N, Q).  The chain state carries eps
(``PMGibbsState.normals``), and each block update of Alg. 2 proposes
(eta_r', eps') jointly, eps' = rho eps + sqrt(1 - rho^2) xi with xi ~ N(0, I)
(a Crank-Nicolson move, reversible with respect to N(0, I)).  The extended
target pi(psi, eps) = p(psi) p~(Y | X, psi; eps) N(eps | 0, I) / p(Y | X) has
p(psi | Y) as its psi-marginal (eq. 6 is unbiased over eps), and the
acceptance ratio of line 5 is unchanged in form: p~(Y|xi'; eps') p(xi') /
(p~(Y|xi; eps) p(xi)) -- the N(eps) factors cancel against the proposal
(Deligiannidis, Doucet & Pitt 2018, Sec. 2).  With rho near 1 the estimates
at the current and proposed psi are strongly correlated, so the noise in
their ratio is small and the chain sticks less.  ``rho = 0`` draws eps' = xi
afresh at the same point of the generator's stream as Alg. 2 does, so the
chain is Alg. 2's, bit for bit.  The sign-symmetric proposal draws uniforms
as well and is not offered with ``rho > 0``.

Alg. 2 details
--------------
* Block r moves eta_r = psi[block_r] (psi is already log-transformed):
  eta_r' = eta_r + N(0, Sigma_r) (line 3).  With priors stated on the
  log scale (``gpbayes.priors`` includes the Jacobian), the acceptance
  ratio of the paper, p~(Y|xi') p(xi') |dt/dxi(xi)| / (p~(Y|xi) p(xi)
  |dt/dxi(xi')|), is p~(Y|psi') p_log(psi') / (p~(Y|psi) p_log(psi)).
* The stored estimate of the current state is never recomputed.
* If a matrix at the proposed psi' cannot be factorised even with the
  jitter of ``gpbayes.linalg.cholesky``, the proposal is rejected (as if
  p~(Y | X, psi') were 0); this never happened in the tests.
* Adaptation (line 7), for g > g0 and (optionally) g <= ``adapt_stop``:
  Sigma_r^(g) = s_d/(g-1) [sum_{m=1}^g eta^(m) eta^(m)T - g etabar etabar^T] + s_d eps I,
  s_d = 2.38^2 / d; eta^(m) is the block after iteration m.  Running sums
  are kept in the state so adaptation costs O(d^2).  Adaptation that never
  stops (the paper's choice) is the adaptive Metropolis of Haario et al.
  (2001); ``adapt_stop`` freezes the proposal for a strictly Markov chain.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
from scipy.linalg.lapack import dtrtrs as _dtrtrs
from scipy.special import logsumexp

from .. import linalg
from ..estimators.importance import select_draw
from ..mcmc.pseudo_marginal import crank_nicolson
from ..mcmc import elliptical_slice as ess
from ..mcmc import runner
from ..mcmc.runner import Chain
from .vb import (
    LatentPosterior,
    SupervisedGPLVM,
    VariationalParams,
    VBResult,
    initial_variational,
    latent_posterior,
    optimise_variational,
)

__all__ = [
    "log_likelihood",
    "sample_latent",
    "latent_normals",
    "crank_nicolson",
    "importance_log_weights",
    "PMEstimate",
    "pseudo_marginal_estimate",
    "PMGibbsConfig",
    "PMGibbsState",
    "PMGibbsInfo",
    "state_from_estimate",
    "init",
    "step",
    "elliptical_latent_step",
    "LatentState",
    "latent_init",
    "latent_step",
    "PMWithinGibbsState",
    "PMWithinGibbsInfo",
    "within_gibbs_init",
    "within_gibbs_step",
    "run_chain",
    "PredictiveMixture",
    "predictive_mixture",
    "ml_predictive_mixture",
    "mixture_log_density",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


# ---------------------------------------------------------------------------
# eq. 1 and eq. 6
# ---------------------------------------------------------------------------
def log_likelihood(model: SupervisedGPLVM, psi, Z) -> float:
    """log p(Y | Z, theta, beta) = sum_i log N(y_:,i | 0, K_f(Z) + beta^-1 I) (eq. 1)."""
    _, psi_f, log_beta = model.split(psi)
    Z = np.asarray(Z, dtype=np.float64).reshape(model.n, model.latent_dim)
    C = model.latent_kernel(psi_f, Z)
    C[np.diag_indices_from(C)] += math.exp(-log_beta)
    L = linalg.cholesky(C, name="K_f + beta^-1 I")
    A = linalg.solve_triangular(L, model.Y, lower=True)
    n, D = model.Y.shape
    return float(-0.5 * np.sum(A * A) - 0.5 * D * linalg.logdet_from_cholesky(L) - 0.5 * n * D * _LOG_2PI)


def sample_latent(rng: np.random.Generator, q: LatentPosterior, n_samples: int,
                  sign_symmetric: bool = False, normals: np.ndarray | None = None) -> np.ndarray:
    """(Q, N, k_z) independent draws Z ~ q(Z): z_j = mu_j + T_j eps_j.

    With ``sign_symmetric`` each column is then negated with probability 1/2,
    i.e. Z is drawn from the mixture prod_j (q_j(z) + q_j(-z)) / 2.
    ``normals`` (k_z, N, Q): use these eps instead of drawing them from
    ``rng`` (the correlated pseudo-marginal move; see the module docstring).
    """
    n, kz = q.mean.shape
    n_samples = int(n_samples)
    if normals is None:
        eps = rng.standard_normal((kz, n, n_samples))
    else:
        eps = np.asarray(normals, dtype=np.float64)
        if eps.shape != (kz, n, n_samples):
            raise ValueError(f"normals must be ({kz}, {n}, {n_samples}), got {eps.shape}")
    draws = q.mean.T[:, :, None] + np.einsum("jnk,jkq->jnq", q.cov_root, eps)  # (kz, N, Q)
    if sign_symmetric:
        draws *= np.where(rng.uniform(size=(kz, 1, n_samples)) < 0.5, -1.0, 1.0)
    return np.ascontiguousarray(draws.transpose(2, 1, 0))


def latent_normals(q: LatentPosterior, samples) -> np.ndarray:
    """The standard normals eps (k_z, N, Q) with samples = mu + T eps (the inverse of ``sample_latent``).

    eps_j = T_j^-1 (z_j - mu_j) = R_j^T (L_z^-1 z_j - a_j), since T_j = L_z R_j^-T.
    """
    samples = np.asarray(samples, dtype=np.float64)
    out = np.empty((samples.shape[2], samples.shape[1], samples.shape[0]))
    for j in range(samples.shape[2]):
        V = linalg.solve_triangular(q.chol_prior, samples[:, :, j].T, lower=True)  # (N, Q)
        out[j] = q.chol_w[j].T @ (V - q.whitened_mean[:, j, None])
    return out


def _log_likelihoods(model: SupervisedGPLVM, psi, samples: np.ndarray) -> np.ndarray:
    """eq. 1 for each of the (Q, N, k_z) samples: one Cholesky each.

    The Q covariance matrices are built and factorised as one stack
    (``numpy.linalg.cholesky``, LAPACK ``dpotrf`` per matrix: the same factor,
    to the bit, as ``gpbayes.linalg.cholesky``; each counted as one O(n^3)
    operation); the triangular solves with Y use LAPACK ``dtrtrs`` directly.
    If any matrix of the stack is not positive definite (or not finite), every
    sample goes through ``gpbayes.linalg.cholesky`` one at a time instead, with
    its jitter fallback and errors.
    """
    _, psi_f, log_beta = model.split(psi)
    a, w = model.latent_kernel.amplitude_and_precisions(psi_f)
    n, D = model.Y.shape
    noise = math.exp(-log_beta)
    Zw = samples * np.sqrt(w)
    const = -0.5 * n * D * _LOG_2PI
    sq = np.sum((Zw[:, :, None, :] - Zw[:, None, :, :]) ** 2, axis=3)  # (Q, N, N)
    C = a * np.exp(-0.5 * sq)
    idx = np.arange(n)
    C[:, idx, idx] += noise
    factors = None
    if np.all(np.isfinite(C)):
        try:
            factors = np.linalg.cholesky(C)
        except np.linalg.LinAlgError:
            factors = None
    out = np.empty(samples.shape[0])
    if factors is None:
        for i in range(samples.shape[0]):
            L = linalg.cholesky(C[i], name="K_f + beta^-1 I")
            A = linalg.solve_triangular(L, model.Y, lower=True)
            out[i] = -0.5 * np.sum(A * A) - 0.5 * D * linalg.logdet_from_cholesky(L) + const
        return out
    for i, L in enumerate(factors):
        linalg.record_cubic("cholesky")
        A, info = _dtrtrs(L, model.Y, lower=1)
        if info != 0:  # pragma: no cover - a zero pivot cannot follow a successful Cholesky
            raise np.linalg.LinAlgError(f"dtrtrs failed with info {info}")
        out[i] = -0.5 * np.sum(A * A) - 0.5 * D * linalg.logdet_from_cholesky(L) + const
    return out


def importance_log_weights(model: SupervisedGPLVM, psi, q: LatentPosterior, samples,
                           sign_symmetric: bool = False) -> np.ndarray:
    """log w = log p(Y|Z) + log p(Z|X, sigma) - log q(Z) for each Z in ``samples`` (Q, N, k_z).

    With ``sign_symmetric`` the proposal density is the sign-symmetrised
    prod_j (q_j(z_j) + q_j(-z_j)) / 2 (see ``pseudo_marginal_estimate``).
    """
    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim != 3 or samples.shape[1:] != (model.n, model.latent_dim):
        raise ValueError(f"samples must be (Q, {model.n}, {model.latent_dim}), got {samples.shape}")
    prior_minus_q = np.zeros(samples.shape[0])
    for j in range(model.latent_dim):
        V = linalg.solve_triangular(q.chol_prior, samples[:, :, j].T, lower=True)  # (N, Q)
        Eps = q.chol_w[j].T @ (V - q.whitened_mean[:, j, None])
        quad = 0.5 * np.sum(Eps * Eps, axis=0)
        if sign_symmetric:
            Eps_m = q.chol_w[j].T @ (-V - q.whitened_mean[:, j, None])
            quad = -np.logaddexp(-quad, -0.5 * np.sum(Eps_m * Eps_m, axis=0)) + math.log(2.0)
        prior_minus_q += -0.5 * np.sum(V * V, axis=0) + quad - 0.5 * q.logdet_w[j]
    return _log_likelihoods(model, psi, samples) + prior_minus_q


class PMEstimate(NamedTuple):
    """One pseudo-marginal estimate log p~(Y | X, psi) (Gadd et al. eq. 6) with its importance
    weights and draws, the q used, the Alg. 1 run that made q and the O(n^3) operations.
    """

    log_marginal: float  # log p~(Y | X, psi), eq. 6
    log_weights: np.ndarray  # (Q,)
    samples: np.ndarray  # (Q, N, k_z) the importance draws
    variational: VariationalParams  # q used
    vb: VBResult | None  # the Alg. 1 run (None if q was given)
    n_cubic: int
    normals: np.ndarray | None = None  # (k_z, N, Q) eps behind ``samples`` (None with sign_symmetric)


def pseudo_marginal_estimate(
    rng: np.random.Generator,
    model: SupervisedGPLVM,
    psi,
    n_imp: int,
    *,
    params: VariationalParams | None = None,
    optimise: bool = True,
    vb_options: dict | None = None,
    sign_symmetric: bool = False,
    normals: np.ndarray | None = None,
) -> PMEstimate:
    """Eq. 6: log of (1/Q) sum_q p(Y|Z_q) p(Z_q|X) / q(Z_q), Z_q ~ q iid.

    q is obtained by Alg. 1 at psi (``optimise_variational`` with
    ``vb_options``), started from ``params`` or, if None, from the PCA
    initialisation; ``optimise=False`` uses ``params`` (or the PCA
    initialisation) as q directly.  ``rng`` is used only for the draws.

    ``sign_symmetric`` (not in the paper; off by default) proposes from
    prod_j (q_j(z) + q_j(-z)) / 2 instead of q.  p(Y | Z) and p(Z | X) are
    both unchanged by negating any column z_:,j (k_f depends on squared
    differences, p(Z | X) is a zero-mean Gaussian), so the posterior has
    2^k_z mirror-image modes of which q covers one; the symmetrised proposal
    covers all of them and removes the heavy right tail of the weights that
    this causes when the modes overlap.  The estimate stays unbiased.

    ``normals`` (k_z, N, Q): the standard normals eps of the draws
    Z_q = mu + T eps_q, given instead of drawn from ``rng`` (correlated
    pseudo-marginal moves; not with ``sign_symmetric``).  Without them they
    are drawn from ``rng`` after Alg. 1, and returned in ``normals``.
    """
    n_imp = int(n_imp)
    if normals is not None and sign_symmetric:
        raise ValueError("normals cannot be given with sign_symmetric=True (its sign flips are uniforms)")
    if n_imp < 1:
        raise ValueError(f"n_imp must be >= 1, got {n_imp}")
    psi = np.asarray(psi, dtype=np.float64)
    with linalg.count_ops() as ops:
        vb = None
        if optimise:
            vb = optimise_variational(model, psi, params, **(vb_options or {}))
            params = vb.params
        elif params is None:
            params = initial_variational(model, psi)
        q = latent_posterior(model, psi, params)
        if normals is None and not sign_symmetric:
            # the very draw sample_latent would make (same shape, same point of the stream)
            normals = rng.standard_normal((model.latent_dim, model.n, n_imp))
        samples = sample_latent(rng, q, n_imp, sign_symmetric, normals=normals)
        log_w = importance_log_weights(model, psi, q, samples, sign_symmetric)
        log_est = float(logsumexp(log_w) - math.log(n_imp))
    return PMEstimate(log_est, log_w, samples, params, vb, ops.cubic, normals)


# ---------------------------------------------------------------------------
# Alg. 2: adaptive pseudo-marginal MH within Gibbs
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PMGibbsConfig:
    """Settings of Alg. 2 (see the module docstring).

    blocks : index arrays into psi, one per Gibbs block (e.g. from
        ``SupervisedGPLVM.block``); they need not cover psi (the rest stays fixed).
    n_imp : Q of eq. 6.
    adapt_start : g0; adaptation from iteration g0 + 1 on.
    adapt_stop : last adapting iteration (None: never stop, as in the paper).
    adapt_epsilon : the small constant eps of line 7 (added as s_d eps I).
    warm_start : start Alg. 1 at the current q instead of the PCA initialisation.
    reference_params : without ``warm_start``, start Alg. 1 at these fixed
        variational parameters (e.g. the type-II ML fit's q) instead of the
        PCA initialisation.  Either way q is a function of psi' alone, so the
        chain is exact whatever the number of L-BFGS iterations.
    vb_options : keyword arguments of ``optimise_variational``; ``max_iter=0``
        uses the start itself as q (no optimisation).
    sign_symmetric : use the sign-symmetrised proposal (``pseudo_marginal_estimate``).
    rho : correlation of the Crank-Nicolson move of the importance normals
        (Deligiannidis, Doucet & Pitt 2018; module docstring), 0 <= rho < 1.
        0 (default) refreshes them independently at every proposal: Alg. 2
        as the paper writes it.
    """

    blocks: tuple
    n_imp: int = 10
    adapt_start: int = 200
    adapt_stop: int | None = None
    adapt_epsilon: float = 1e-6
    warm_start: bool = False
    vb_options: dict = dataclasses.field(default_factory=dict)
    sign_symmetric: bool = False
    reference_params: VariationalParams | None = None
    rho: float = 0.0

    def __post_init__(self):
        rho = float(self.rho)
        if not 0.0 <= rho < 1.0:
            raise ValueError(f"rho must be in [0, 1), got {self.rho!r}")
        if rho > 0.0 and self.sign_symmetric:
            raise ValueError("rho > 0 (correlated pseudo-marginal) needs sign_symmetric=False")
        object.__setattr__(self, "rho", rho)
        blocks = tuple(np.atleast_1d(np.asarray(b, dtype=int)) for b in self.blocks)
        if not blocks or any(b.size == 0 for b in blocks):
            raise ValueError("PMGibbsConfig needs at least one non-empty block")
        flat = np.concatenate(blocks)
        if np.unique(flat).size != flat.size:
            raise ValueError(f"blocks overlap: {[b.tolist() for b in blocks]}")
        object.__setattr__(self, "blocks", blocks)
        if int(self.n_imp) < 1:
            raise ValueError(f"n_imp must be >= 1, got {self.n_imp}")


class PMGibbsState(NamedTuple):
    """State of the blockwise PM MH (Gadd et al. Alg. 2): psi, the stored estimate (never
    recomputed), log p(psi), q and the importance draws at psi, the iteration and the proposal
    covariances of the blocks.
    """

    position: np.ndarray  # psi
    log_marginal: float  # stored log p~(Y | X, psi): never recomputed
    log_prior: float  # log p(psi) on the log scale
    variational: VariationalParams  # q at position
    samples: np.ndarray  # (Q, N, k_z) importance draws behind log_marginal
    log_weights: np.ndarray  # (Q,)
    iteration: int  # g, completed iterations
    proposal_covs: tuple  # Sigma_r^(g)
    eta_sum: tuple  # sum_m eta_r^(m)
    eta_outer: tuple  # sum_m eta_r^(m) eta_r^(m)T
    normals: np.ndarray | None = None  # (k_z, N, Q) eps behind ``samples`` (moved by rho > 0)

    @property
    def log_density(self) -> float:
        """The stored noisy log posterior: log p~(Y | X, psi) + log p(psi)."""
        return self.log_marginal + self.log_prior


class PMGibbsInfo(NamedTuple):
    """What one iteration of Alg. 2 did per block: accepted, acceptance probability, the proposal's
    estimate; the O(n^3) operations and Alg. 1 bound evaluations it cost.
    """

    accepted: np.ndarray  # (R,) bool
    acceptance_prob: np.ndarray  # (R,)
    proposal_log_marginal: np.ndarray  # (R,), -inf where the prior is zero
    n_cubic: int  # O(n^3) operations in this iteration
    n_bound_evals: int  # Alg. 1 bound evaluations in this iteration
    vb_converged: np.ndarray  # (R,) bool


def _estimate(rng, model, psi, config: PMGibbsConfig, params0, normals=None):
    start = params0 if config.warm_start else config.reference_params
    options = dict(config.vb_options)
    optimise = int(options.get("max_iter", 1)) > 0
    return pseudo_marginal_estimate(
        rng, model, psi, config.n_imp, params=start, optimise=optimise,
        vb_options=options if optimise else None, sign_symmetric=config.sign_symmetric, normals=normals,
    )


def state_from_estimate(psi, estimate: PMEstimate, prior, config: PMGibbsConfig, proposal_covs) -> PMGibbsState:
    """A chain state (iteration 0) at psi carrying ``estimate``, e.g. one built from given draws."""
    psi = np.array(psi, dtype=np.float64)
    covs = tuple(np.array(c, dtype=np.float64) for c in proposal_covs)
    for b, c in zip(config.blocks, covs):
        if c.shape != (b.size, b.size):
            raise ValueError(f"proposal covariance for block {b.tolist()} must be {b.size}x{b.size}, got {c.shape}")
    return PMGibbsState(
        psi, estimate.log_marginal, float(prior.log_density(psi)), estimate.variational,
        estimate.samples, estimate.log_weights, 0, covs,
        tuple(np.zeros(b.size) for b in config.blocks),
        tuple(np.zeros((b.size, b.size)) for b in config.blocks),
        estimate.normals,
    )


def init(rng: np.random.Generator, model: SupervisedGPLVM, prior, psi, config: PMGibbsConfig,
         proposal_covs=None) -> PMGibbsState:
    """State at psi with a fresh estimate (eq. 6); default proposals 0.01 I per block."""
    psi = np.array(psi, dtype=np.float64)
    if not np.isfinite(prior.log_density(psi)):
        raise ValueError(f"initial psi {psi} has zero prior density")
    if proposal_covs is None:
        proposal_covs = [0.01 * np.eye(b.size) for b in config.blocks]
    est = _estimate(rng, model, psi, config, None)
    return state_from_estimate(psi, est, prior, config, proposal_covs)


def step(rng: np.random.Generator, state: PMGibbsState, model: SupervisedGPLVM, prior,
         config: PMGibbsConfig) -> tuple[PMGibbsState, PMGibbsInfo]:
    """One iteration g of Alg. 2: a pseudo-marginal MH update of each block in turn."""
    R = len(config.blocks)
    accepted = np.zeros(R, dtype=bool)
    acc_prob = np.zeros(R)
    prop_lm = np.full(R, -np.inf)
    converged = np.ones(R, dtype=bool)
    n_evals = 0
    psi, lm, lp = state.position, state.log_marginal, state.log_prior
    variational, samples, log_w = state.variational, state.samples, state.log_weights
    normals = state.normals
    if config.rho > 0.0 and normals is None:
        raise ValueError("rho > 0 needs the state's importance normals (state.normals is None)")
    g = state.iteration + 1
    with linalg.count_ops() as ops:
        for r, block in enumerate(config.blocks):  # line 2
            # line 3: eta' = eta + N(0, Sigma_r^(g-1))
            L = linalg.cholesky(state.proposal_covs[r], name=f"proposal covariance of block {r}", count=False)
            proposal = psi.copy()
            proposal[block] = psi[block] + L @ rng.standard_normal(block.size)
            lp_new = float(prior.log_density(proposal))
            if not np.isfinite(lp_new):
                continue  # zero prior density: reject without touching the data
            # line 4: p~(Y | X, xi') by eq. 6, with q re-optimised at xi'; with rho > 0 the
            # importance normals move by Crank-Nicolson and are accepted jointly with xi'
            # (drawn before Alg. 1, which uses no randomness: the stream's order is unchanged)
            prop_normals = crank_nicolson(rng, normals, config.rho) if config.rho > 0.0 else None
            try:
                est = _estimate(rng, model, proposal, config, variational, prop_normals)
            except np.linalg.LinAlgError:
                continue
            if est.vb is not None:
                n_evals += est.vb.n_evaluations
                converged[r] = est.vb.converged
            prop_lm[r] = est.log_marginal
            # line 5: accept with probability min(1, ratio) against the *stored* estimate
            log_ratio = est.log_marginal + lp_new - lm - lp
            if np.isnan(log_ratio):
                raise FloatingPointError(f"NaN acceptance ratio at psi' = {proposal}")
            acc_prob[r] = 1.0 if log_ratio >= 0 else math.exp(log_ratio)
            if math.log(rng.uniform()) < log_ratio:
                accepted[r] = True
                psi, lm, lp = proposal, est.log_marginal, lp_new
                variational, samples, log_w = est.variational, est.samples, est.log_weights
                normals = est.normals
    # lines 6-8: running sums over eta^(1..g) and the Haario update
    eta_sum = tuple(s + psi[b] for s, b in zip(state.eta_sum, config.blocks))
    eta_outer = tuple(o + np.outer(psi[b], psi[b]) for o, b in zip(state.eta_outer, config.blocks))
    covs = state.proposal_covs
    adapting = g > config.adapt_start and (config.adapt_stop is None or g <= config.adapt_stop)
    if adapting and g > 1:
        new = []
        for b, s, o in zip(config.blocks, eta_sum, eta_outer):
            d = b.size
            s_d = 2.38**2 / d
            mean = s / g
            cov = s_d / (g - 1) * (o - g * np.outer(mean, mean)) + s_d * config.adapt_epsilon * np.eye(d)
            new.append(0.5 * (cov + cov.T))
        covs = tuple(new)
    new_state = PMGibbsState(psi, lm, lp, variational, samples, log_w, g, covs, eta_sum, eta_outer, normals)
    return new_state, PMGibbsInfo(accepted, acc_prob, prop_lm, ops.cubic, n_evals, converged)


# ---------------------------------------------------------------------------
# Alg. 3: elliptical slice sampling of Z given psi
# ---------------------------------------------------------------------------
class LatentState(NamedTuple):
    """State of the Z update (Gadd et al. Alg. 3): Z, log p(Y | Z, psi) and the psi it was computed at."""

    Z: np.ndarray  # (N, k_z)
    log_likelihood: float  # log p(Y | Z, theta, beta) at ``psi``
    psi: np.ndarray  # the hyperparameters the log-likelihood was evaluated at


def latent_init(model: SupervisedGPLVM, psi, Z) -> LatentState:
    """The latent state at (psi, Z): Z reshaped to (N, k_z) and its log-likelihood."""
    psi = np.array(psi, dtype=np.float64)
    Z = np.array(Z, dtype=np.float64).reshape(model.n, model.latent_dim)
    return LatentState(Z, log_likelihood(model, psi, Z), psi)


def _block_factor(L: np.ndarray, kz: int):
    """z -> (I_kz kron L) z on the column-stacked vec(Z): the root of prod_j N(0, K_z)."""
    n = L.shape[0]

    def apply(u):
        return (L @ u.reshape(kz, n).T).T.ravel()

    return apply


def elliptical_latent_step(rng, Z, log_lik, chol_prior, log_lik_fn):
    """Alg. 3 on Z (N, k_z) with prior prod_j N(z_:,j | 0, L L^T); ``log_lik_fn(Z)``.

    Z is passed to ``gpbayes.mcmc.elliptical_slice`` as vec(Z) (columns
    stacked), whose prior root is I kron L; Alg. 3 steps 1-12 are that
    module's steps 1-5.
    """
    n, kz = Z.shape
    fn = lambda v: log_lik_fn(v.reshape(kz, n).T)  # noqa: E731
    st, info = ess.step(rng, ess.EllipticalSliceState(Z.T.ravel(), log_lik), _block_factor(chol_prior, kz), fn)
    return st.position.reshape(kz, n).T.copy(), st.log_likelihood, info


def latent_step(rng: np.random.Generator, state: LatentState, model: SupervisedGPLVM, psi,
                chol_prior: np.ndarray | None = None) -> tuple[LatentState, ess.EllipticalSliceInfo]:
    """One Alg. 3 update of Z | Y, X, psi (target eq. in Sec. 4.2).

    If psi differs from the state's, log p(Y | Z) is re-evaluated first (the
    slice threshold must use the current psi).  ``chol_prior`` is L_z at psi
    if already available.
    """
    psi = np.asarray(psi, dtype=np.float64)
    if not np.array_equal(psi, state.psi):
        state = latent_init(model, psi, state.Z)
    L = model.latent_prior_chol(psi) if chol_prior is None else chol_prior
    Z, ll, info = elliptical_latent_step(rng, state.Z, state.log_likelihood, L,
                                         lambda Z: log_likelihood(model, psi, Z))
    return LatentState(Z, ll, psi.copy()), info


# ---------------------------------------------------------------------------
# one iteration of Alg. 2 followed by Alg. 3, and the chain (a use of the runner)
# ---------------------------------------------------------------------------
class PMWithinGibbsState(NamedTuple):
    """What carries from one iteration (Alg. 2 then Alg. 3) to the next."""

    gibbs: PMGibbsState  # psi, its stored estimate (eq. 6) and the Alg. 2 adaptation sums
    latent: LatentState | None  # Z of Alg. 3 (None without latent steps)

    @property
    def position(self) -> np.ndarray:
        """psi, the hyperparameters (the runner records this as the draw)."""
        return self.gibbs.position

    @property
    def log_density(self) -> float:
        """log p~(Y | X, psi) + log p(psi): the PM chain's stored (noisy) log target."""
        return self.gibbs.log_density


class PMWithinGibbsInfo(NamedTuple):
    """What one iteration did: Alg. 2's per-block fields and Alg. 3's shrinkages."""

    accepted: np.ndarray  # (R,) bool
    acceptance_prob: np.ndarray  # (R,)
    proposal_log_marginal: np.ndarray  # (R,)
    vb_converged: np.ndarray  # (R,) bool
    n_cubic: int  # O(n^3) operations of Alg. 2 and Alg. 3 in this iteration
    n_bound_evals: int  # Alg. 1 bound evaluations (q re-optimisations of Alg. 2)
    n_shrinkages: int  # Alg. 3, summed over the iteration's latent steps


_LATENT_STARTS = ("continue", "resample")


def _selected_latent(rng, model: SupervisedGPLVM, gibbs: PMGibbsState) -> LatentState:
    """An importance draw Z_k of the stored estimate, chosen with probability w_k / sum_j w_j."""
    return latent_init(model, gibbs.position, gibbs.samples[select_draw(rng, gibbs.log_weights)])


def within_gibbs_init(rng: np.random.Generator, model: SupervisedGPLVM, prior, psi, config: PMGibbsConfig, *,
                      proposal_covs=None, n_latent_steps: int = 1) -> PMWithinGibbsState:
    """Alg. 2's state at psi (``init``) and, with latent steps, Z = one of its importance draws ∝ w_k."""
    gibbs = init(rng, model, prior, psi, config, proposal_covs)
    return PMWithinGibbsState(gibbs, _selected_latent(rng, model, gibbs) if n_latent_steps > 0 else None)


def within_gibbs_step(rng: np.random.Generator, state: PMWithinGibbsState, model: SupervisedGPLVM, prior,
                      config: PMGibbsConfig, *, n_latent_steps: int = 1,
                      latent_start: str = "continue") -> tuple[PMWithinGibbsState, PMWithinGibbsInfo]:
    """One iteration g: Alg. 2 (``step``), then ``n_latent_steps`` of Alg. 3 (``latent_step``) at the new psi.

    ``latent_start`` (see ``run_chain``): ``"continue"`` starts Alg. 3 from
    the previous Z, ``"resample"`` from an importance draw of the current
    estimate chosen ∝ w_k.
    """
    if latent_start not in _LATENT_STARTS:
        raise ValueError(f"latent_start must be 'continue' or 'resample', got {latent_start!r}")
    n_shrinkages = 0
    with linalg.count_ops() as ops:
        gibbs, info = step(rng, state.gibbs, model, prior, config)
        latent = state.latent
        if latent is not None and n_latent_steps > 0:
            if latent_start == "resample":
                latent = _selected_latent(rng, model, gibbs)
            L = model.latent_prior_chol(gibbs.position)
            for _ in range(n_latent_steps):
                latent, linfo = latent_step(rng, latent, model, gibbs.position, L)
                n_shrinkages += linfo.n_shrinkages
    return PMWithinGibbsState(gibbs, latent), PMWithinGibbsInfo(
        info.accepted, info.acceptance_prob, info.proposal_log_marginal, info.vb_converged, ops.cubic,
        info.n_bound_evals, n_shrinkages)


def _record(state: PMWithinGibbsState, info: PMWithinGibbsInfo) -> dict:
    out = {"log_marginal": state.gibbs.log_marginal, "log_prior": state.gibbs.log_prior,
           "accepted": info.accepted, "acceptance_prob": info.acceptance_prob}
    if state.latent is not None:
        out["Z"] = state.latent.Z
    return out


def run_chain(
    rng: np.random.Generator,
    model: SupervisedGPLVM,
    prior,
    psi0,
    config: PMGibbsConfig,
    n_draws: int,
    *,
    n_warmup: int = 0,
    proposal_covs=None,
    n_latent_steps: int = 1,
    latent_start: str = "continue",
    callback=None,
) -> Chain:
    """Alg. 2 with ``n_latent_steps`` of Alg. 3 after each iteration: ``n_warmup`` discarded, ``n_draws`` kept.

    A use of ``gpbayes.mcmc.runner.run_chain`` with the kernel
    ``within_gibbs_step`` from ``within_gibbs_init(rng, ..., psi0)``.  The
    proposal adaptation of Alg. 2 (line 7) runs inside the kernel in every
    iteration, warm-up (the paper's n0 burn-in) or not, as the paper does.

    ``latent_start`` says where Alg. 3 starts in each iteration:

    * ``"continue"`` (the paper, Sec. 4.2): from the previous iteration's Z
      (initially an importance draw picked with probability proportional to
      its weight).  Z then lags behind psi: (psi^(g), Z^(g)) is a draw from
      p(psi, Z | Y) only approximately.
    * ``"resample"``: from the current state's importance draw Z_k picked with
      probability w_k / sum w.  The PM chain's stationary law is
      p(psi | Y) (1/Q) sum_k p(Z_k | psi, Y) prod_{q != k} q(Z_q), under which
      the picked Z_k is an exact draw from p(Z | psi, Y); Alg. 3 keeps it so.
      (``tests/test_gplvm.py``'s Geweke test checks exactly this construction.)

    Returns a :class:`~gpbayes.mcmc.runner.Chain`: ``draws`` psi (n_draws, p);
    stats ``lp`` (log p~(Y | X, psi) + log p(psi)), ``n_cubic`` (Alg. 2 + Alg. 3),
    ``n_bound_evals``, ``n_shrinkages``, ``wall_time``; ``extra``
    ``log_marginal``, ``log_prior``, ``accepted`` (n_draws, R),
    ``acceptance_prob`` (n_draws, R) and, with latent steps, ``Z``
    (n_draws, N, k_z); ``state`` the final :class:`PMWithinGibbsState`;
    ``warmup`` the discarded iterations' cost.
    """
    if latent_start not in _LATENT_STARTS:
        raise ValueError(f"latent_start must be 'continue' or 'resample', got {latent_start!r}")
    n_latent_steps = int(n_latent_steps)

    def kernel(r, st):
        return within_gibbs_step(r, st, model, prior, config, n_latent_steps=n_latent_steps,
                                 latent_start=latent_start)

    def start():
        return within_gibbs_init(rng, model, prior, psi0, config, proposal_covs=proposal_covs,
                                 n_latent_steps=n_latent_steps)

    return runner.run_chain(rng, kernel, start, n_draws=int(n_draws), n_warmup=int(n_warmup), callback=callback,
                     record=_record)


# ---------------------------------------------------------------------------
# eqs. 7-8: Monte Carlo predictive density
# ---------------------------------------------------------------------------
class PredictiveMixture(NamedTuple):
    """p(y* | x*) ~ (1/G) sum_g prod_i N(y*_i | mean[g, :, i], var[g, :])."""

    mean: np.ndarray  # (G, n_test, k_y)
    var: np.ndarray  # (G, n_test), including beta^-1


def _predict_one(rng, model: SupervisedGPLVM, psi, Z, X_star, n_latent_draws):
    psi_z, psi_f, log_beta = model.split(psi)
    X_star = np.asarray(X_star, dtype=np.float64).reshape(-1, model.input_dim)
    t = X_star.shape[0]
    kz = model.latent_dim
    # eq. 8: z*_j | Z ~ N(K_z*^T K_z^-1 z_j, s*)
    Lz = model.latent_prior_chol(psi)
    Kzs = model.input_kernel(psi_z, model.X, X_star)  # (N, t)
    Vz = linalg.solve_triangular(Lz, Kzs, lower=True)
    mz = Vz.T @ linalg.solve_triangular(Lz, Z, lower=True)  # (t, kz)
    sz = np.maximum(1.0 + model.latent_jitter - np.sum(Vz * Vz, axis=0), 0.0)  # (t,)
    # GP predictive of y* given z* (the density under eq. 7)
    C = model.latent_kernel(psi_f, Z)
    noise = math.exp(-log_beta)
    C[np.diag_indices_from(C)] += noise
    Lf = linalg.cholesky(C, name="K_f + beta^-1 I")
    alpha = linalg.cho_solve(Lf, model.Y)  # (N, ky)
    theta_s = math.exp(psi_f[-1])
    means, variances = [], []
    for _ in range(int(n_latent_draws)):
        z_star = mz + np.sqrt(sz)[:, None] * rng.standard_normal((t, kz))
        Kfs = model.latent_kernel(psi_f, Z, z_star)  # (N, t)
        Vf = linalg.solve_triangular(Lf, Kfs, lower=True)
        means.append(Kfs.T @ alpha)  # A y_:,i
        variances.append(np.maximum(theta_s - np.sum(Vf * Vf, axis=0), 0.0) + noise)  # S + beta^-1
    return means, variances


def predictive_mixture(rng: np.random.Generator, model: SupervisedGPLVM, psis, Zs, X_star,
                       n_latent_draws: int = 1) -> PredictiveMixture:
    """Eqs. 7-8 from posterior draws (psi^(g), Z^(g)), g = 1..G.

    For each draw, z* is drawn ``n_latent_draws`` times from eq. 8 at every
    test input independently, and the Gaussian p(y* | z*, Z, Y, theta, beta)
    is kept as one mixture component.
    """
    psis = np.atleast_2d(np.asarray(psis, dtype=np.float64))
    Zs = np.asarray(Zs, dtype=np.float64).reshape(psis.shape[0], model.n, model.latent_dim)
    means, variances = [], []
    for psi, Z in zip(psis, Zs):
        m, v = _predict_one(rng, model, psi, Z, X_star, n_latent_draws)
        means += m
        variances += v
    return PredictiveMixture(np.array(means), np.array(variances))


def ml_predictive_mixture(rng: np.random.Generator, model: SupervisedGPLVM, psi, params: VariationalParams,
                          X_star, n_samples: int = 200) -> PredictiveMixture:
    """The type-II ML baseline: psi fixed at its point estimate, Z ~ q(Z) (``n_samples`` draws)."""
    q = latent_posterior(model, psi, params)
    Zs = sample_latent(rng, q, n_samples)
    psis = np.repeat(np.asarray(psi, dtype=np.float64)[None], n_samples, axis=0)
    return predictive_mixture(rng, model, psis, Zs, X_star)


def mixture_log_density(mix: PredictiveMixture, Y_star) -> tuple[np.ndarray, np.ndarray]:
    """(log p(y*_t | x*_t) jointly over outputs (n_test,), per output (n_test, k_y)) at Y_star."""
    Y_star = np.asarray(Y_star, dtype=np.float64)
    if Y_star.ndim == 1:
        Y_star = Y_star[:, None]
    G = mix.mean.shape[0]
    var = mix.var[:, :, None]
    comp = -0.5 * (_LOG_2PI + np.log(var) + (Y_star[None] - mix.mean) ** 2 / var)  # (G, t, ky)
    joint = logsumexp(comp.sum(axis=2), axis=0) - math.log(G)
    marginal = logsumexp(comp, axis=0) - math.log(G)
    return joint, marginal
