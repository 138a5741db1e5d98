"""Supervised GPLVM (Gadd et al., Sec. 2) and its variational lower bound (Sec. 3, Alg. 1).

Model
-----
Inputs X (N x k_x), outputs Y (N x k_y), latent Z (N x k_z):

    z_:,j ~ N(0, K_z),  K_z = k_z(X, X; sigma) + eps I                (eq. 2)
    y_:,i | Z ~ N(0, K_f(Z, Z; theta) + beta^-1 I)                    (eq. 1)
    k_z(x, x') = exp(-1/2 sum_l sigma_l (x_l - x'_l)^2) + eps delta(x, x')
    k_f(z, z') = theta_S exp(-1/2 sum_j theta_j (z_j - z'_j)^2)        (Sec. 6.1)

All hyperparameters are positive and handled on the log scale.  The vector
``psi`` is always laid out as

    psi = (log sigma_1..k_x, log theta_1..k_z, log theta_S, log beta)

(``SupervisedGPLVM.param_names``).  ``eps`` (``latent_jitter``) is the
paper's fixed white-noise term of k_z; it is part of the model.  Y is used as
given (zero-mean GPs): centre it beforehand if needed.

Variational family and parameterisation
---------------------------------------
q(Z) = prod_j N(z_:,j | mu_j, S_j) with full N x N S_j (Sec. 3).  The
collapsed bound F~ (eq. 4 with the Psi-statistics) depends on S_j only
through its diagonal (``gpbayes.gplvm.psi_stats``), so at a stationary
point of F~ - KL in S_j,

    0 = dF~/dS_j - 1/2 (K_z^-1 - S_j^-1)   with dF~/dS_j = diag(g_j),
    =>  S_j = (K_z^-1 + Lambda_j)^-1,   Lambda_j = -2 diag(g_j).

So the optimal S_j lies in the N-parameter family of Opper & Archambeau
(2009), used for this model by Damianou et al. (2011).  We parameterise

    S_j = (K_z^-1 + diag(lambda_j))^-1,   lambda_j = exp(log_lambda_j) > 0,
    mu_j = L_z a_j   (whitened mean; L_z L_z^T = K_z).

lambda > 0 restricts q to S_j below K_z (posterior variances below prior
ones), which contains the optimum whenever the bound decreases with the
marginal variances (g_j < 0, the usual case).  The whitening makes the
KL term |a_j|^2 / 2 perfectly conditioned, where mu_j itself would see the
condition number of K_z (up to N / eps).  In whitened coordinates
v_j = L_z^-1 z_j, q is N(a_j, W_j^-1) with W_j = I + L_z^T diag(lambda_j) L_z
(eigenvalues >= 1, Cholesky R_j), so that

    S_j = T_j T_j^T,  T_j = L_z R_j^-T,
    KL_j = 1/2 (tr W_j^-1 + |a_j|^2 - N + log |W_j|),
    log |S_j| = log |K_z| - log |W_j|.

Bound (Titsias & Lawrence 2010 eq. 14, summed over the k_y = D outputs; Gadd
et al. eqs. 3-5)
-----------------------------------------------------------------------
With K_u = k_f(Z_u, Z_u) + eps_u theta_S I = L_u L_u^T, C = L_u^-1 Psi2 L_u^-T,
B = I + beta C = L_B L_B^T, A = K_u + beta Psi2 = L_u B L_u^T and
c = L_B^-1 L_u^-1 Psi1^T Y:

    F~ = -ND/2 log 2 pi + ND/2 log beta - D/2 log |B| - beta/2 |Y|^2
         + beta^2/2 |c|^2 - D beta/2 psi0 + D beta/2 tr C

    bound = F~ - sum_j KL(N(mu_j, S_j) || N(0, K_z)).

The jitter eps_u theta_S on K_u keeps the bound valid: it is the exact bound
for inducing variables u' = u + N(0, eps_u theta_S) (noisy inducing
observations leave p(f) unchanged), and it scales with theta_S so that
d K_u / d log theta_S = K_u exactly.

Gradients (all hand-written, finite-difference checked in tests)
----------------------------------------------------------------
With E = A^-1 Psi1^T Y:

    dF~/dpsi0 = -D beta / 2
    dF~/dPsi1 = beta^2 Y E^T
    dF~/dPsi2 = -D beta/2 A^-1 - beta^3/2 E E^T + D beta/2 K_u^-1
    dF~/dK_u  = D/2 (K_u^-1 - A^-1) - beta^2/2 E E^T - D beta/2 K_u^-1 Psi2 K_u^-1
    dF~/dbeta = ND/(2 beta) - D/2 tr(A^-1 Psi2) - |Y|^2/2 + beta |c|^2
                - beta^2/2 tr(E^T Psi2 E) - D psi0/2 + D/2 tr C

then through the Psi-statistics (``psi_stats_vjp``) to mu, the marginal
variances s_nj = S_j[n, n], Z_u and theta.  On to the variational parameters:

    d/da_j = L_z^T d/dmu_j + (-a_j from the KL)
    d/dlambda_jk = -sum_n S_j[n, k]^2 (g_nj + lambda_jn / 2)
      (dS = -S dLambda S gives ds_n/dlambda_k = -S[n,k]^2; dKL_j/dlambda_k = (S Lambda S)_kk / 2)

For type-II ML also in sigma, through K_z at fixed (a, lambda):

    from s:    P_j^T diag(g_j) P_j,   P_j = S_j K_z^-1 = I - S_j Lambda_j
    from KL_j: -(Lambda S Lambda - Lambda S Lambda S Lambda) / 2
    from mu = L_z a: the Cholesky adjoint (Murray 2016),
               K_bar = L^-T sym(Phi(L^T L_bar)) L^-1,  L_bar = tril(mu_bar a^T),
               Phi = lower triangle with the diagonal halved.

Optimisation is L-BFGS-B (scipy) on the negative bound; the paper used SCG,
which changes only how the same optimum is reached.  Initialisation follows
Alg. 1 line 1 (``initial_variational``).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
from scipy import optimize

from .. import linalg
from ..kernels import SquaredExponential
from .psi_stats import _backward, _forward

__all__ = [
    "SupervisedGPLVM",
    "VariationalParams",
    "LatentPosterior",
    "BoundGradients",
    "VBResult",
    "MLResult",
    "MLStartResult",
    "latent_posterior",
    "elbo",
    "initial_variational",
    "optimise_variational",
    "fit_type2_ml",
    "fit_type2_ml_start",
]

_LOG_2PI = float(np.log(2.0 * np.pi))
LOG_LAMBDA_BOUNDS = (-15.0, 15.0)


@dataclasses.dataclass(frozen=True)
class SupervisedGPLVM:
    """Data and fixed structure of a supervised GPLVM (module docstring).

    Parameters
    ----------
    X : (N, k_x) inputs.   Y : (N, k_y) outputs (a 1-D Y is one output).
    latent_dim : k_z.
    n_inducing : M, the number of inducing inputs (M <= N).
    latent_jitter : eps of k_z (paper Sec. 6.1, "white noise for numerical stability").
    inducing_jitter : eps_u, relative to theta_S, on K_u.
    """

    X: np.ndarray
    Y: np.ndarray
    latent_dim: int
    n_inducing: int
    latent_jitter: float = 1e-6
    inducing_jitter: float = 1e-6

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float64)
        Y = np.asarray(self.Y, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if Y.ndim == 1:
            Y = Y[:, None]
        if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
            raise ValueError(f"X must be (N, k_x) and Y (N, k_y) with the same N; got {X.shape}, {Y.shape}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
            raise ValueError("X or Y contains NaN/inf")
        if int(self.latent_dim) < 1:
            raise ValueError(f"latent_dim must be >= 1, got {self.latent_dim}")
        if not 1 <= int(self.n_inducing) <= X.shape[0]:
            raise ValueError(f"n_inducing must be in [1, N={X.shape[0]}], got {self.n_inducing}")
        if not (self.latent_jitter > 0 and self.inducing_jitter > 0):
            raise ValueError("latent_jitter and inducing_jitter must be positive")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "Y", Y)
        object.__setattr__(self, "latent_dim", int(self.latent_dim))
        object.__setattr__(self, "n_inducing", int(self.n_inducing))

    # ------------------------------------------------------------------ shape
    @property
    def n(self) -> int:
        """Number of data points N."""
        return self.X.shape[0]

    @property
    def input_dim(self) -> int:
        """Dimension of the observed inputs x."""
        return self.X.shape[1]

    @property
    def output_dim(self) -> int:
        """Number of outputs k_y."""
        return self.Y.shape[1]

    @property
    def input_kernel(self) -> SquaredExponential:
        """k_z without the eps delta term: exp(-1/2 sum sigma_l (x_l - x'_l)^2)."""
        return SquaredExponential(self.input_dim, ard=True, parameterisation="gplvm", fixed_amplitude=True)

    @property
    def latent_kernel(self) -> SquaredExponential:
        """k_f(z, z') = theta_S exp(-1/2 sum theta_j (z_j - z'_j)^2)."""
        return SquaredExponential(self.latent_dim, ard=True, parameterisation="gplvm")

    @property
    def n_params(self) -> int:
        """Number of log-hyperparameters: sigma per input, theta per latent dimension, theta_S, beta."""
        return self.input_dim + self.latent_dim + 2

    @property
    def param_names(self) -> list[str]:
        """Hyperparameter names in the order of psi: ``sigma_l``, ``theta_j``, ``theta_S``, ``beta``."""
        return (
            [f"sigma_{l}" for l in range(self.input_dim)]
            + [f"theta_{j}" for j in range(self.latent_dim)]
            + ["theta_S", "beta"]
        )

    def block(self, names) -> np.ndarray:
        """Indices into psi of the named parameters (e.g. ``["theta_S", "beta"]``)."""
        idx = []
        for name in names:
            if name not in self.param_names:
                raise ValueError(f"unknown parameter {name!r}; the parameters are {self.param_names}")
            idx.append(self.param_names.index(name))
        return np.array(idx, dtype=int)

    # ------------------------------------------------------------ transforms
    def split(self, psi) -> tuple[np.ndarray, np.ndarray, float]:
        """(psi of k_z, psi of k_f = (log theta_1..k_z, log theta_S), log beta)."""
        psi = np.asarray(psi, dtype=np.float64)
        if psi.shape != (self.n_params,):
            raise ValueError(f"psi must have {self.n_params} entries {self.param_names}, got shape {psi.shape}")
        if not np.all(np.isfinite(psi)):
            raise ValueError(f"non-finite log-hyperparameters {psi}")
        kx = self.input_dim
        return psi[:kx], psi[kx:-1], float(psi[-1])

    def latent_prior_cov(self, psi) -> np.ndarray:
        """K_z = k_z(X, X; sigma) + eps I."""
        psi_z, _, _ = self.split(psi)
        K = self.input_kernel(psi_z, self.X)
        K[np.diag_indices_from(K)] += self.latent_jitter
        return K

    def latent_prior_chol(self, psi) -> np.ndarray:
        """Cholesky factor of the latent prior covariance K_z at psi (Gadd et al. Sec. 2)."""
        return linalg.cholesky(self.latent_prior_cov(psi), name="K_z")

    def inducing_cov(self, psi_f, inducing) -> np.ndarray:
        """K_u = k_f(Z_u, Z_u) + eps_u theta_S I."""
        K = self.latent_kernel(psi_f, inducing)
        K[np.diag_indices_from(K)] += self.inducing_jitter * float(np.exp(psi_f[-1]))
        return K


class VariationalParams(NamedTuple):
    """Free parameters of q(Z) and the inducing inputs (module docstring)."""

    whitened_mean: np.ndarray  # (N, k_z): a_j, mu_j = L_z a_j
    log_lambda: np.ndarray  # (N, k_z): S_j = (K_z^-1 + diag(exp(log_lambda_j)))^-1
    inducing: np.ndarray  # (M, k_z): Z_u

    def pack(self) -> np.ndarray:
        """The parameters as one flat vector (whitened means, log lambda, inducing inputs)."""
        return np.concatenate([self.whitened_mean.ravel(), self.log_lambda.ravel(), self.inducing.ravel()])

    @staticmethod
    def unpack(x: np.ndarray, n: int, kz: int, m: int) -> "VariationalParams":
        """The parameters from a flat vector made by ``pack`` (N points, k_z latent dims, M inducing)."""
        k = n * kz
        return VariationalParams(
            x[:k].reshape(n, kz), x[k : 2 * k].reshape(n, kz), x[2 * k : 2 * k + m * kz].reshape(m, kz)
        )


class LatentPosterior(NamedTuple):
    """q(Z) at a given psi, in the forms the bound and the sampler need."""

    chol_prior: np.ndarray  # L_z, (N, N)
    mean: np.ndarray  # mu, (N, k_z)
    whitened_mean: np.ndarray  # a, (N, k_z)
    lam: np.ndarray  # lambda, (N, k_z)
    chol_w: tuple  # R_j with R_j R_j^T = W_j = I + L_z^T diag(lambda_j) L_z
    cov_root: np.ndarray  # T_j = L_z R_j^-T, (k_z, N, N): S_j = T_j T_j^T
    marginal_var: np.ndarray  # s_nj = S_j[n, n], (N, k_z)
    logdet_w: np.ndarray  # log |W_j|, (k_z,)
    trace_w_inv: np.ndarray  # tr W_j^-1, (k_z,)

    def kl(self) -> float:
        """sum_j KL(N(mu_j, S_j) || N(0, K_z)) (module docstring)."""
        n = self.mean.shape[0]
        a = self.whitened_mean
        return 0.5 * float(np.sum(self.trace_w_inv + np.sum(a * a, axis=0) - n + self.logdet_w))

    def covariance(self, j: int) -> np.ndarray:
        """The N x N covariance of q(z_j) for latent dimension j."""
        T = self.cov_root[j]
        return linalg.matmul(T, T.T)


def latent_posterior(model: SupervisedGPLVM, psi, params: VariationalParams, chol_prior=None) -> LatentPosterior:
    """q(Z) at psi from the free parameters (one Cholesky of K_z unless given)."""
    L = model.latent_prior_chol(psi) if chol_prior is None else chol_prior
    n, kz = model.n, model.latent_dim
    a = np.asarray(params.whitened_mean, dtype=np.float64)
    lam = np.exp(np.asarray(params.log_lambda, dtype=np.float64))
    if a.shape != (n, kz) or lam.shape != (n, kz):
        raise ValueError(f"variational means and log_lambda must be ({n}, {kz})")
    eye = np.eye(n)
    chol_w, roots = [], np.empty((kz, n, n))
    logdet, trinv = np.empty(kz), np.empty(kz)
    for j in range(kz):
        W = linalg.matmul(L.T, lam[:, j, None] * L)
        W[np.diag_indices(n)] += 1.0
        R = linalg.cholesky(W, name=f"W_{j} = I + L_z^T Lambda_{j} L_z")
        Rinv = linalg.solve_triangular(R, eye, lower=True)
        roots[j] = linalg.matmul(L, Rinv.T)
        chol_w.append(R)
        logdet[j] = linalg.logdet_from_cholesky(R)
        trinv[j] = float(np.sum(Rinv * Rinv))
    s = np.einsum("jnk,jnk->nj", roots, roots)
    return LatentPosterior(L, L @ a, a, lam, tuple(chol_w), roots, s, logdet, trinv)


class BoundGradients(NamedTuple):
    """Gradients of the variational bound (Gadd et al. Alg. 1) in the variational parameters and,
    with ``hyper_gradient``, in psi.
    """

    whitened_mean: np.ndarray
    log_lambda: np.ndarray
    inducing: np.ndarray
    psi: np.ndarray | None  # only with hyper_gradient=True

    def pack(self) -> np.ndarray:
        """The variational gradients as one flat vector, in ``VariationalParams.pack``'s order."""
        return np.concatenate([self.whitened_mean.ravel(), self.log_lambda.ravel(), self.inducing.ravel()])


def _cholesky_adjoint(L: np.ndarray, L_bar: np.ndarray) -> np.ndarray:
    """Symmetric K_bar with dF = tr(K_bar dK), given L_bar = dF/dL (Murray 2016)."""
    P = np.tril(L.T @ L_bar)
    P[np.diag_indices_from(P)] *= 0.5
    P = 0.5 * (P + P.T)
    tmp = linalg.solve_triangular(L, P, lower=True, trans=True)  # L^-T P
    return linalg.solve_triangular(L, tmp.T, lower=True, trans=True).T  # L^-T P L^-1


def elbo(model: SupervisedGPLVM, psi, params: VariationalParams, *, gradient: bool = False,
         hyper_gradient: bool = False, chol_prior: np.ndarray | None = None):
    """The lower bound F~ - KL of the module docstring at (psi, params).

    Returns the value, or (value, ``BoundGradients``) with ``gradient``;
    ``hyper_gradient`` adds the gradient in psi (type-II ML).  ``chol_prior``
    is L_z at psi if already available (saves a Cholesky per evaluation
    when psi is fixed, as in Alg. 1).
    """
    gradient = gradient or hyper_gradient
    psi_z, psi_f, log_beta = model.split(psi)
    beta = float(np.exp(log_beta))
    Y = model.Y
    n, D = Y.shape
    kz = model.latent_dim
    Zu = np.asarray(params.inducing, dtype=np.float64)
    m = Zu.shape[0]
    if Zu.shape != (m, kz):
        raise ValueError(f"inducing must be (M, {kz}), got {Zu.shape}")
    theta_s = float(np.exp(psi_f[-1]))
    w_f = np.exp(psi_f[:-1])

    # q(Z) and its KL to p(Z | X, sigma)
    q = latent_posterior(model, psi, params, chol_prior)
    kl = q.kl()

    # Alg. 1 line 3: the Psi-statistics
    ps, psi_terms, psi_args = _forward(theta_s, w_f, q.mean, q.marginal_var, Zu)

    # Alg. 1 line 4: the bound, in the stable form of the module docstring
    Ku = model.inducing_cov(psi_f, Zu)
    Lu = linalg.cholesky(Ku, name="K_u")
    tmp = linalg.solve_triangular(Lu, ps.psi2, lower=True)
    C = linalg.solve_triangular(Lu, tmp.T, lower=True).T
    C = 0.5 * (C + C.T)
    B = beta * C
    B[np.diag_indices(m)] += 1.0
    LB = linalg.cholesky(B, name="B = I + beta L_u^-1 Psi2 L_u^-T")
    P = ps.psi1.T @ Y  # (M, D)
    v = linalg.solve_triangular(Lu, P, lower=True)
    c = linalg.solve_triangular(LB, v, lower=True)
    yy = float(np.sum(Y * Y))
    cc = float(np.sum(c * c))
    trC = float(np.trace(C))
    f_tilde = (
        -0.5 * n * D * _LOG_2PI + 0.5 * n * D * log_beta - 0.5 * D * linalg.logdet_from_cholesky(LB)
        - 0.5 * beta * yy + 0.5 * beta**2 * cc - 0.5 * D * beta * ps.psi0 + 0.5 * D * beta * trC
    )
    value = float(f_tilde - kl)
    if not gradient:
        return value

    # adjoints of F~ in (psi0, Psi1, Psi2, K_u, beta)
    Kinv = linalg.cho_inverse(Lu)
    Binv = linalg.cho_inverse(LB)
    tmp = linalg.solve_triangular(Lu, Binv, lower=True, trans=True)
    Ainv = linalg.solve_triangular(Lu, tmp.T, lower=True, trans=True)
    Ainv = 0.5 * (Ainv + Ainv.T)
    E = Ainv @ P
    EE = E @ E.T
    g_psi0 = -0.5 * D * beta
    g_psi1 = beta**2 * (Y @ E.T)
    g_psi2 = -0.5 * D * beta * Ainv - 0.5 * beta**3 * EE + 0.5 * D * beta * Kinv
    KPK = linalg.matmul(linalg.matmul(Kinv, ps.psi2), Kinv)
    g_Ku = 0.5 * D * (Kinv - Ainv) - 0.5 * beta**2 * EE - 0.5 * D * beta * KPK
    g_beta = (
        0.5 * n * D / beta - 0.5 * D * float(np.sum(Ainv * ps.psi2)) - 0.5 * yy + beta * cc
        - 0.5 * beta**2 * float(np.sum(E * (ps.psi2 @ E))) - 0.5 * D * ps.psi0 + 0.5 * D * trC
    )

    gp = _backward(psi_terms, psi_args, g_psi0, g_psi1, g_psi2)

    # K_u = k_f(Z_u) + eps_u theta_S I -> Z_u and theta
    K0 = model.latent_kernel(psi_f, Zu)
    GKK = g_Ku * K0
    g_ind = gp.inducing + 2.0 * (
        -(Zu * GKK.sum(axis=1)[:, None] - GKK @ Zu) * w_f[None, :]
    )

    # to the variational parameters
    g_mu = gp.mean
    g_a = q.chol_prior.T @ g_mu - q.whitened_mean
    g_s = gp.variance
    g_loglam = np.empty((n, kz))
    covs = [q.covariance(j) for j in range(kz)]
    for j in range(kz):
        S = covs[j]
        g_loglam[:, j] = -q.lam[:, j] * ((S * S) @ (g_s[:, j] + 0.5 * q.lam[:, j]))
    if not hyper_gradient:
        return value, BoundGradients(g_a, g_loglam, g_ind, None)

    # hyperparameters: theta (Psi + K_u), beta, sigma (through K_z)
    g_psi = np.empty(model.n_params)
    kx = model.input_dim
    dKu = model.latent_kernel.gradients(psi_f, Zu, K0)
    g_theta = np.array([float(np.sum(g_Ku * dK)) for dK in dKu])
    g_theta[-1] = float(np.sum(g_Ku * Ku))  # jitter scales with theta_S too
    g_theta[:-1] += gp.log_precisions
    g_theta[-1] += gp.log_amplitude
    g_psi[kx:-1] = g_theta
    g_psi[-1] = beta * g_beta

    L = q.chol_prior
    K_bar = _cholesky_adjoint(L, np.tril(g_mu @ q.whitened_mean.T))
    for j in range(kz):
        S, lam = covs[j], q.lam[:, j]
        Pj = np.eye(n) - S * lam[None, :]  # S K_z^-1
        K_bar += linalg.matmul(Pj.T * g_s[:, j][None, :], Pj)
        LSL = lam[:, None] * S * lam[None, :]
        K_bar -= 0.5 * (LSL - linalg.matmul(LSL, S * lam[None, :]))
    K_bar = 0.5 * (K_bar + K_bar.T)
    Kx = model.input_kernel(psi_z, model.X)
    for l, dK in enumerate(model.input_kernel.gradients(psi_z, model.X, Kx)):
        g_psi[l] = float(np.sum(K_bar * dK))
    return value, BoundGradients(g_a, g_loglam, g_ind, g_psi)


# ---------------------------------------------------------------------------
# Alg. 1: initialisation and optimisation with fixed hyperparameters
# ---------------------------------------------------------------------------
def _pca_scores(Y: np.ndarray, k: int) -> np.ndarray:
    """First k principal-component scores of Y, each scaled to unit variance (zeros if rank < k)."""
    Yc = Y - Y.mean(axis=0)
    U, sv, _ = np.linalg.svd(Yc, full_matrices=False)
    out = np.zeros((Y.shape[0], k))
    r = min(k, int(np.sum(sv > 1e-12 * max(sv[0], 1e-300))) if sv.size else 0)
    out[:, :r] = U[:, :r] * sv[:r]
    sd = out[:, :r].std(axis=0)
    out[:, :r] /= np.where(sd > 0, sd, 1.0)
    # fix the sign of each component (SVD signs are arbitrary): first nonzero entry positive
    for j in range(r):
        nz = np.flatnonzero(np.abs(out[:, j]) > 1e-12)
        if nz.size and out[nz[0], j] < 0:
            out[:, j] = -out[:, j]
    return out


def initial_variational(model: SupervisedGPLVM, psi, chol_prior=None) -> VariationalParams:
    """Alg. 1 line 1: means from PCA on Y, variances at the neutral value 0.5.

    * means: the PCA scores m_pca (unit variance per component) are mapped to
      whitened coordinates by the ridge a = (I + L_z^T L_z)^-1 L_z^T m_pca,
      i.e. the posterior mean of a under a ~ N(0, I), m_pca = L_z a + N(0, I).
      With an ill-conditioned K_z the plain a = L_z^-1 m_pca would be huge;
      the ridge keeps the initial KL moderate and mu = L_z a close to m_pca
      where K_z allows.
    * variances: lambda = 2, so S_j = (K_z^-1 + 2 I)^-1, whose diagonal is
      just under 0.5 when K_z is large.
    * inducing inputs: M rows of mu at evenly spaced ranks of its first
      coordinate (all rows if M = N).

    Deterministic in (model, psi), as the pseudo-marginal sampler requires.
    """
    L = model.latent_prior_chol(psi) if chol_prior is None else chol_prior
    n, kz, m = model.n, model.latent_dim, model.n_inducing
    m_pca = _pca_scores(model.Y, kz)
    G = L.T @ L
    G[np.diag_indices(n)] += 1.0
    a = linalg.cho_solve(linalg.cholesky(G, name="I + L_z^T L_z"), L.T @ m_pca)
    mu = L @ a
    order = np.argsort(mu[:, 0], kind="stable")
    pick = order[np.round(np.linspace(0, n - 1, m)).astype(int)]
    return VariationalParams(a, np.full((n, kz), np.log(2.0)), mu[pick].copy())


class VBResult(NamedTuple):
    """The outcome of Alg. 1 (Gadd et al.): q's parameters, the bound, iterations, evaluations,
    convergence and the optimiser's message.
    """

    params: VariationalParams
    bound: float
    n_iterations: int
    n_evaluations: int
    converged: bool
    message: str


def optimise_variational(
    model: SupervisedGPLVM,
    psi,
    params0: VariationalParams | None = None,
    *,
    max_iter: int = 500,
    tol: float = 1e-7,
    optimise_inducing: bool = True,
) -> VBResult:
    """Alg. 1: maximise the bound over (mu, S, Z_u) with psi fixed (L-BFGS-B).

    Starts from ``params0`` or, if None, from ``initial_variational``;
    deterministic given its inputs.  ``tol`` is L-BFGS-B's ``ftol``
    (relative change of the bound) and ``gtol``; ``max_iter`` caps the
    iterations (each needs one or a few bound evaluations).
    """
    psi = np.asarray(psi, dtype=np.float64)
    L = model.latent_prior_chol(psi)
    p0 = initial_variational(model, psi, L) if params0 is None else params0
    n, kz = model.n, model.latent_dim
    m = p0.inducing.shape[0]
    fixed_ind = p0.inducing

    def unpack(x):
        if optimise_inducing:
            return VariationalParams.unpack(x, n, kz, m)
        k = n * kz
        return VariationalParams(x[:k].reshape(n, kz), x[k:].reshape(n, kz), fixed_ind)

    def fun(x):
        try:
            val, g = elbo(model, psi, unpack(x), gradient=True, chol_prior=L)
        except np.linalg.LinAlgError:
            return np.inf, np.zeros_like(x)
        gx = g.pack() if optimise_inducing else np.concatenate([g.whitened_mean.ravel(), g.log_lambda.ravel()])
        return -val, -gx

    x0 = p0.pack() if optimise_inducing else np.concatenate([p0.whitened_mean.ravel(), p0.log_lambda.ravel()])
    bounds = [(None, None)] * (n * kz) + [LOG_LAMBDA_BOUNDS] * (n * kz)
    if optimise_inducing:
        bounds += [(None, None)] * (m * kz)
    res = optimize.minimize(
        fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
        options={"maxiter": int(max_iter), "ftol": tol, "gtol": tol},
    )
    return VBResult(unpack(res.x), float(-res.fun), int(res.nit), int(res.nfev), bool(res.success), str(res.message))


# ---------------------------------------------------------------------------
# type-II maximum likelihood baseline (the paper's "ML"): bound maximised in
# (q, Z_u, psi) jointly, with restarts
# ---------------------------------------------------------------------------
class MLResult(NamedTuple):
    """Type-II maximum likelihood of the bound over restarts: the best psi and q, its bound, and the
    final bound of every restart.
    """

    psi: np.ndarray
    params: VariationalParams
    bound: float
    all_bounds: np.ndarray  # final bound of every restart
    n_restarts: int


def _ml_problem(model: SupervisedGPLVM, psi_bounds):
    """(negative bound and gradient in x = (a, log lambda, Z_u, psi), L-BFGS-B bounds, failure counter).

    A bound that cannot be evaluated (K_z or K_u not factorisable) returns +inf;
    ``failures[0]`` counts such evaluations.
    """
    n, kz, m, p = model.n, model.latent_dim, model.n_inducing, model.n_params
    nv = 2 * n * kz + m * kz
    bounds = [(None, None)] * (n * kz) + [LOG_LAMBDA_BOUNDS] * (n * kz) + [(None, None)] * (m * kz)
    bounds += [psi_bounds] * p
    failures = [0]

    def fun(x):
        try:
            val, g = elbo(model, x[nv:], VariationalParams.unpack(x[:nv], n, kz, m), hyper_gradient=True)
        except (np.linalg.LinAlgError, ValueError):
            failures[0] += 1
            return np.inf, np.zeros_like(x)
        return -val, -np.concatenate([g.pack(), g.psi])

    return fun, bounds, failures


class MLStartResult(NamedTuple):
    """One start of the type-II ML optimisation (``fit_type2_ml_start``)."""

    psi: np.ndarray
    params: VariationalParams
    bound: float  # -inf when the start could not be initialised
    success: bool  # L-BFGS-B reported convergence
    message: str
    n_iter: int
    n_fun_evals: int
    n_failed_evals: int  # bound evaluations that failed numerically (returned +inf to the optimiser)
    psi_at_bounds: bool  # some log-hyperparameter ended on its box bound


def fit_type2_ml_start(
    model: SupervisedGPLVM,
    psi_start,
    *,
    max_iter: int = 2000,
    tol: float = 1e-9,
    psi_bounds: tuple[float, float] = (-12.0, 12.0),
) -> MLStartResult:
    """One start of the joint optimisation of ``fit_type2_ml`` with its diagnostics.

    Same objective, initialisation (``initial_variational`` at the clipped
    start) and L-BFGS-B options as each start of ``fit_type2_ml``, so the
    same start gives the same optimum.  For restart studies.
    """
    n, kz, m, p = model.n, model.latent_dim, model.n_inducing, model.n_params
    nv = 2 * n * kz + m * kz
    start = np.clip(np.asarray(psi_start, dtype=np.float64), *psi_bounds)
    try:
        p_init = initial_variational(model, start)
    except np.linalg.LinAlgError:
        empty = VariationalParams(np.full((n, kz), np.nan), np.full((n, kz), np.nan), np.full((m, kz), np.nan))
        return MLStartResult(start.copy(), empty, -np.inf, False, "initial_variational: K_z not factorisable",
                             0, 0, 1, False)
    fun, bounds, failures = _ml_problem(model, psi_bounds)
    x0 = np.concatenate([p_init.pack(), start])
    res = optimize.minimize(
        fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
        options={"maxiter": int(max_iter), "ftol": tol, "gtol": 1e-7},
    )
    x = res.x
    psi = x[nv:].copy()
    at_bounds = bool(np.any(np.isclose(psi, psi_bounds[0]) | np.isclose(psi, psi_bounds[1])))
    return MLStartResult(psi, VariationalParams.unpack(x[:nv].copy(), n, kz, m), float(-res.fun), bool(res.success),
                         str(res.message), int(res.nit), int(res.nfev), int(failures[0]), at_bounds)


def fit_type2_ml(
    rng: np.random.Generator,
    model: SupervisedGPLVM,
    psi0,
    *,
    n_restarts: int = 3,
    restart_scale: float = 0.5,
    max_iter: int = 2000,
    tol: float = 1e-9,
    psi_bounds: tuple[float, float] = (-12.0, 12.0),
) -> MLResult:
    """Maximise the bound jointly in (a, log lambda, Z_u, psi) (L-BFGS-B).

    The first start is ``psi0``; the other ``n_restarts - 1`` are psi0 plus
    N(0, restart_scale^2) noise drawn from ``rng``.  Each start initialises
    q by ``initial_variational`` at its psi.  Returns the best.
    """
    psi0 = np.asarray(psi0, dtype=np.float64)
    n, kz, m, p = model.n, model.latent_dim, model.n_inducing, model.n_params
    nv = 2 * n * kz + m * kz
    fun, bounds, _ = _ml_problem(model, psi_bounds)

    best, results = None, []
    for r in range(max(1, int(n_restarts))):
        start = psi0 if r == 0 else psi0 + restart_scale * rng.standard_normal(p)
        start = np.clip(start, *psi_bounds)
        try:
            p_init = initial_variational(model, start)
        except np.linalg.LinAlgError:
            results.append(-np.inf)
            continue
        x0 = np.concatenate([p_init.pack(), start])
        res = optimize.minimize(
            fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
            options={"maxiter": int(max_iter), "ftol": tol, "gtol": 1e-7},
        )
        results.append(float(-res.fun))
        if best is None or -res.fun > -best.fun:
            best = res
    if best is None:
        raise RuntimeError("type-II ML: every start failed to factorise K_z")
    x = best.x
    return MLResult(x[nv:].copy(), VariationalParams.unpack(x[:nv].copy(), n, kz, m), float(-best.fun),
                    np.array(results), len(results))
