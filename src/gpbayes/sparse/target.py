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
adds the Jacobian).  With ``sample_noise`` the Gaussian likelihood's noise
variance sigma^2 is part of theta (p(y_n | f_n) = N(y_n; f_n, sigma^2) in
(T1): the Gaussian row of the poster's table, Titsias 2009): psi = (kernel
log-parameters, log sigma^2), and the expectation in (T1) is
``svgp.gaussian_expected_log_lik``'s closed form (G1); integrated over v,
exp(T1) is then Titsias' collapsed bound times p(theta), which at Z = X is the
exact marginal p(y | theta) p(theta) (up to the jitter).  Where K_uu cannot be factorised (or the kernel
overflows at extreme psi), or psi is outside the prior's support, (T1) is
-inf.

Posterior predictive from draws: ``predict_latent_draws``,
``predict_class_probabilities`` (binary or robust-max multiclass),
``predict_intensity`` (Poisson / log-Gaussian Cox process), and joint draws
of f* for draws of y* (``sample_latent_draws``).
The samplers are in ``gpbayes.sparse.mcmc``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .. import linalg
from . import svgp

__all__ = [
    "SparseTarget",
    "log_q_star",
    "initial_position",
    "predict_latent_draws",
    "sample_latent_draws",
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
    sample_noise: bool = False

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
        if self.sample_noise:
            svgp._check_noise_likelihood(self.likelihood)
        if len(self.prior) != self.n_params:
            raise ValueError(
                f"prior has {len(self.prior)} components, psi has {self.n_params}: the kernel's "
                f"{self.kernel.param_names}" + (" and the log noise variance" if self.sample_noise else "")
            )

    @property
    def n_params(self) -> int:
        """The length of psi: the kernel's log-parameters, then log sigma^2 with ``sample_noise``."""
        return self.kernel.n_params + int(self.sample_noise)

    def split_psi(self, psi):
        """(the kernel's log-parameters, log sigma^2 or None) of psi (``svgp.split_psi``)."""
        return svgp.split_psi(self.kernel, psi, self.sample_noise)

    @property
    def n_latent(self) -> int:
        """Number of latent functions (1, or one per class with robust-max)."""
        return int(getattr(self.likelihood, "n_latent", 1))

    @property
    def n_inducing(self) -> int:
        """Number of inducing inputs M."""
        return int(self.Z.shape[0])

    @property
    def dim(self) -> int:
        """Dimension of the sampled position (vec v, psi): M times the latent functions plus the
        hyperparameters' (``n_params``).
        """
        return self.n_inducing * self.n_latent + self.n_params

    def split(self, position) -> tuple[np.ndarray, np.ndarray]:
        """(v (M, C), psi) from a flat position."""
        position = np.asarray(position, dtype=np.float64)
        k = self.n_inducing * self.n_latent
        return position[:k].reshape(self.n_inducing, self.n_latent), position[k:]

    def join(self, v, psi) -> np.ndarray:
        """The flat position (vec v, psi) from its two parts (the inverse of ``split``)."""
        return np.concatenate([np.asarray(v, dtype=np.float64).ravel(), np.asarray(psi, dtype=np.float64)])

    def log_density(self, position) -> float:
        """log q*(v, psi) at a flat position (Hensman et al. 2015), without its gradient."""
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

    and with ``sample_noise`` d/dlog sigma^2 = sum_n of (G1)'s derivative (``svgp`` module docstring).
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
    kpsi, log_noise = target.split_psi(psi)  # (psi, None) unless sample_noise
    ws = svgp.workspace(M, target.X.shape[0])  # K_uf, W, W_bar built in reused buffers
    try:
        cond = svgp.whitened_conditional(target.kernel, kpsi, target.Z, target.X, target.jitter, workspace=ws)
    except linalg.NotPositiveDefiniteError:
        return -np.inf, *zero
    # p(f_n | u = L v): mean W^T v, variance k_nn - |W_:n|^2 (the same for every c)
    mu = cond.W.T @ v
    var = np.repeat(cond.var[:, None], C, axis=1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # far out in the tails (trial points of the step-size search) the
        # likelihood's derivatives can overflow; such points get density 0
        # (Q1) by quadrature, or (G1) in closed form with the sampled noise
        E, g_mu, g_var, g_log_noise = svgp.likelihood_terms(target.likelihood, target.y, mu, var, target.n_quad,
                                                            log_noise)
    value = float(np.sum(E)) - 0.5 * float(np.sum(v * v)) - 0.5 * M * C * _LOG_2PI + log_prior_psi
    if not (np.isfinite(value) and np.all(np.isfinite(g_mu)) and np.all(np.isfinite(g_var))):
        return -np.inf, *zero
    if grad == "none":
        return value, None, None
    dv = cond.W @ g_mu - v
    if grad == "v":
        return value, dv, None
    g_s = g_var.sum(axis=1)
    W_bar = _w_bar(cond.W, v, g_mu, g_s, ws)
    dpsi, _ = svgp.whitened_conditional_backward(
        target.kernel, kpsi, target.Z, target.X, cond, W_bar, g_s, inputs=False,
        overwrite_W_bar=True,
    )
    if g_log_noise is not None:
        dpsi = np.append(dpsi, np.sum(g_log_noise))
    return value, dv, dpsi + target.prior.grad_log_density(psi)


def _w_bar(W, v, g_mu, g_s, ws: svgp.Workspace | None = None):
    """W_bar = v g_mu^T - 2 W diag(g_s)  (reverse mode of (T1) through
    mu = W^T v and s2_n = k_nn - |W_:n|^2, Hensman et al. 2015 poster
    "Tricks: whiten/center").

    Built in W's (Fortran) layout, so the triangular solve that follows needs
    no layout copy and no pass mixes C- and Fortran-ordered operands: the
    outer product as (g_mu v^T)^T, then W (2 g_s) subtracted in place
    (scaling by 2 is exact, so this is bit-identical to v g_mu^T - (2 W) g_s).
    """
    if ws is not None and W.flags.f_contiguous:
        # the same operations into the workspace's W_bar and scratch buffers (no M x N allocation),
        # a block of columns at a time (~512 kB: the block's W diag(2 g_s) is subtracted while
        # it is in cache).  With one latent function the outer product has no sum, so the
        # blocks' products are those of the whole; with C > 1 it stays one GEMM.
        M, N = W.shape
        W_bar, T = ws.W_bar, ws.scratch
        g2 = 2.0 * g_s
        one = v.shape[1] == 1
        if not one:
            np.matmul(g_mu, v.T, out=W_bar.T)
        cols = max(64, 65536 // max(M, 1))
        T = T.reshape(-1, order="F")[: M * min(cols, N)].reshape(M, -1, order="F")
        for c0 in range(0, N, cols):
            c1 = min(c0 + cols, N)
            Wb, Tb = W_bar[:, c0:c1], T[:, : c1 - c0]
            if one:
                np.matmul(g_mu[c0:c1], v.T, out=Wb.T)
            np.multiply(W[:, c0:c1], g2[None, c0:c1], out=Tb)
            np.subtract(Wb, Tb, out=Wb)
        return W_bar
    W_bar = (g_mu @ v.T).T
    if not W_bar.flags.f_contiguous:
        W_bar = np.asfortranarray(W_bar)
    W_bar -= W * (2.0 * g_s)[None, :]
    return W_bar


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


def draw_likelihoods(target: SparseTarget, psi_draws) -> list:
    """The likelihood of each posterior draw: with ``sample_noise``, the Gaussian likelihood at the draw's
    noise variance exp(psi_s[-1]) (Hensman et al. 2015's Gaussian case: y = f + eps, eps ~ N(0, sigma_s^2));
    otherwise the target's likelihood for every draw."""
    psi_draws = np.atleast_2d(np.asarray(psi_draws, dtype=np.float64))
    if not target.sample_noise:
        return [target.likelihood] * psi_draws.shape[0]
    import dataclasses

    return [dataclasses.replace(target.likelihood, noise_variance=float(np.exp(p[-1]))) for p in psi_draws]


def predict_latent_draws(target: SparseTarget, v_draws, psi_draws, Xstar):
    """p(f* | u = L v_s, theta_s) for each draw s: means (S, N*, C), variances (S, N*) (of f*: with
    ``sample_noise`` the noise variance, psi's last coordinate, is not added)."""
    v_draws = np.asarray(v_draws, dtype=np.float64)
    psi_draws = np.asarray(psi_draws, dtype=np.float64)
    means, variances = [], []
    for v, psi in zip(v_draws, psi_draws):
        mu, var = svgp.predict_latent(target.kernel, target.split_psi(psi)[0], target.Z, v, Xstar, target.jitter)
        means.append(mu)
        variances.append(var)
    return np.array(means), np.array(variances)


def sample_latent_draws(rng: np.random.Generator, target: SparseTarget, v_draws, psi_draws, Xstar) -> np.ndarray:
    """Joint draws f* ~ p(f* | u = L v_s, theta_s) at the rows of ``Xstar``, one per draw s: (S, N*, C).

    The sparse model's conditional (C1 of ``gpbayes.sparse.svgp``) jointly over the N* inputs:
    mean W*^T v_s = K_*u K_uu^-1 u_s, covariance K_** - W*^T W* = K_** - K_*u K_uu^-1 K_u*, with
    W* = L^-1 K_u* and L L^T = K_uu + jitter a I (the target's jitter, as (T1) uses it; a the
    kernel amplitude).  The C latent functions share the kernel and Z and are independent given u,
    so one factor R R^T of the covariance serves them all: f*_c = W*^T v_:c + R e_c, e_c ~ N(0, I).
    R is ``linalg.cholesky``'s, with its jitter retries (the covariance is singular where a row of
    ``Xstar`` is an inducing input: f* is then u there), after ``svgp.VAR_FLOOR`` is added to the
    diagonal (the floor of (C1)'s variances); it is computed once per run of equal psi.
    O(M^3 + N* M^2 + N*^3) per distinct psi.  These are draws of f*; with ``sample_noise`` a y* needs the
    draw's own noise variance exp(psi_s[-1]) (:func:`draw_likelihoods`), not the likelihood's fixed one.
    """
    v_draws = np.asarray(v_draws, dtype=np.float64)
    psi_draws = np.atleast_2d(np.asarray(psi_draws, dtype=np.float64))
    Xstar = np.asarray(Xstar, dtype=np.float64)
    Xstar = Xstar[:, None] if Xstar.ndim == 1 else Xstar
    S, C, m = psi_draws.shape[0], target.n_latent, Xstar.shape[0]
    v_draws = v_draws.reshape(S, target.n_inducing, C)
    out = np.empty((S, m, C))
    key, W, R = None, None, None
    for s, (v, psi) in enumerate(zip(v_draws, psi_draws)):
        if psi.tobytes() != key:  # draws of one psi are adjacent (e.g. the Gibbs sampler's v-moves)
            key = psi.tobytes()
            kpsi = target.split_psi(psi)[0]
            cond = svgp.whitened_conditional(target.kernel, kpsi, target.Z, Xstar, target.jitter)
            W = cond.W
            cov = target.kernel(kpsi, Xstar) - W.T @ W  # K_** - K_*u K_uu^-1 K_u*
            cov[np.diag_indices_from(cov)] += svgp.VAR_FLOOR  # (C1)'s floor: a positive diagonal at Z
            R = linalg.cholesky(0.5 * (cov + cov.T), name="K_** - K_*u K_uu^-1 K_u*")
        out[s] = W.T @ v + R @ rng.standard_normal((m, C))
    return out


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
