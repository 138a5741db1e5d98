"""NUTS on the hyperparameters and the whitened latent values jointly: the exact posterior, no weights.

The latent-Gaussian models (GP classification, the log-Gaussian Cox process) have the joint posterior

    p(psi, f | y)  propto  p(psi) N(f; 0, K_psi) p(y | f).

Written in the whitened coordinates f = L_psi v, L_psi = chol(K_psi) -- Murray & Adams (2010) eq. 5,
the "prior-whitened" representation their Sec. 2 starts from, and the non-centred parameterisation of
Stan, NumPyro and Hensman et al. (2015) -- v has the prior N(0, I) whatever psi, and the target of
(psi, v), of dimension p + n, is

    log pi(psi, v) = log p(psi) - 1/2 v^T v - n/2 log 2 pi + sum_i log p(y_i | f_i),   f = L_psi v,

which NUTS (``gpbayes.mcmc.nuts``: Stan's multinomial NUTS and windowed warm-up) samples exactly, with
no approximation to correct (unlike ``gpbayes.mcmc.is_corrected``) and no estimator noise (unlike
pseudo-marginal MH).  It is what NumPyro's NUTS runs on these models; this module is that method at
the cost of hand-written reverse mode.

The gradient
------------
With g = d log p(y | f) / df at f = L v (the likelihood's ``d1``):

* d/dv = L^T g - v (O(n^2));
* d/dpsi_j = g^T (dL/dpsi_j) v = tr(K_bar dK/dpsi_j), K_bar the reverse-mode adjoint of K through the
  Cholesky factor for the adjoint L_bar = g v^T of L.  Murray (2016, "Differentiation of the Cholesky
  decomposition", arXiv:1602.07527, Sec. 3's symbolic reverse mode): forward, dL = L Phi(L^-1 dK L^-T),
  Phi = the lower triangle with its diagonal halved; transposed,

      K_bar = sym(L^-T Phi(L^T L_bar) L^-1),   sym(A) = (A + A^T) / 2,

  symmetrised because dK is symmetric (``gpbayes.sparse.svgp.cholesky_backward`` is the general
  form).  Here L^T L_bar = a v^T is rank one, a = L^T g, so with W = L^-1 the product
  Phi(a v^T) W needs no O(n^3) work: its row i is a_i (sum_{k <= i} v_k W_k. - v_i W_i. / 2), a
  cumulative sum down the columns of diag(v) W.  What remains is one triangular inverse and one
  triangular product W^T (Phi(a v^T) W):

      O(n^3) operations per value and gradient: 1 Cholesky + 1 triangular inverse + 1 triangular
      product (n^3/3 + n^3/3 + n^3 flops),

  counted by ``gpbayes.linalg``; the traces against every dK/dpsi_j come from one GEMM of
  ``kernel.gradient_traces`` (O(n^2 d) for ARD; a kernel without it: ``gpbayes.kernels.gradient_traces``'s
  fallback over its n x n ``gradients``).  Measured on Ionosphere (n = 351, 34
  hyperparameters, AMD EPYC, one thread): 3.0 ms per value and gradient, against 6.85 ms for
  NumPyro's (JAX's automatic reverse mode through ``jnp.linalg.cholesky``) in
  ``benchmarks/results/bench_peers_ionosphere-ard_4x800_whitened.txt``, where the same trajectories
  (63 leapfrog steps per draw) made this sampler 2.22x NumPyro's NUTS in min bulk ESS per CPU-second.

The kept position of a chain is psi; f = L_psi v is recorded per kept draw (``posterior["f"]``, one
more Cholesky per draw).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from .. import linalg
from ..kernels import gradient_traces
from . import nuts, runner

__all__ = ["WhitenedJointPosterior", "chain_spec", "whitened_start"]

_LOG_2PI = math.log(2.0 * math.pi)


class WhitenedJointPosterior:
    """(psi, v) -> (log pi(psi, v), gradient): the whitened joint posterior of the module docstring.

    ``position`` is the concatenation [psi (p), v (n)].  K_psi = ``kernel(psi, X)`` is factorised
    without jitter (the models' kernels carry a relative nugget): where it is not positive definite,
    or psi is outside the prior's support, the value is -inf and the gradient NaN (NUTS counts a
    divergence).  One object per chain: it keeps five n x n work arrays from one evaluation to the
    next (none of what it returns is a view of them).
    """

    def __init__(self, kernel, X, y, likelihood, prior):
        self.kernel, self.likelihood, self.prior = kernel, likelihood, prior
        self.X = np.asarray(X, dtype=np.float64)
        self.y = likelihood.check_targets(y)
        self.p, self.n = int(kernel.n_params), int(self.X.shape[0])
        self.dim = self.p + self.n
        # the library's kernels write K into a reused buffer (``out``); a kernel of the bare protocol allocates
        self._kernel_out = "out" in inspect.signature(kernel.__call__).parameters
        self._work = None
        self.n_failures = 0

    def split(self, position) -> tuple[np.ndarray, np.ndarray]:
        """(psi, v) of a position [psi, v]."""
        position = np.asarray(position, dtype=np.float64)
        if position.shape != (self.dim,):
            raise ValueError(f"position: expected shape ({self.dim},) = p + n = {self.p} + {self.n}, "
                             f"got {position.shape}")
        return position[: self.p], position[self.p:]

    def _buffers(self):
        if self._work is None:
            self._work = [np.empty((self.n, self.n), order="F") for _ in range(5)]
        return self._work

    def _factor(self, psi):
        return linalg.cholesky(self.kernel(psi, self.X), name="K(psi)", max_tries=1)

    def latent(self, position) -> np.ndarray:
        """f = L_psi v at ``position`` (one Cholesky factorisation)."""
        psi, v = self.split(position)
        return self._factor(psi) @ v

    def log_density(self, position) -> float:
        """log pi(psi, v) alone (no gradient; -inf where the value and gradient are refused)."""
        psi, v = self.split(position)
        lp = float(self.prior.log_density(psi))
        if not math.isfinite(lp):
            return -math.inf
        try:
            f = self._factor(psi) @ v
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return -math.inf
        return self._value(lp, f, v)

    def _value(self, log_prior: float, f, v) -> float:
        """log p(psi) + log p(y | f) + log N(v; 0, I)."""
        return (log_prior + float(np.sum(self.likelihood.log_lik(self.y, f))) - 0.5 * float(v @ v)
                - 0.5 * self.n * _LOG_2PI)

    def _refused(self) -> tuple[float, np.ndarray]:
        self.n_failures += 1
        return -math.inf, np.full(self.dim, np.nan)

    def __call__(self, position) -> tuple[float, np.ndarray]:
        """(log pi(psi, v), its gradient in (psi, v)); see the module docstring for the formulas."""
        psi, v = self.split(position)
        with np.errstate(over="ignore", invalid="ignore"):
            lp = float(self.prior.log_density(psi))
            if not math.isfinite(lp):  # outside the prior's support: not a failure
                return -math.inf, np.full(self.dim, np.nan)
            Kb, Lb, Wb, Cb, Pb = self._buffers()
            try:
                K = self.kernel(psi, self.X, out=Kb) if self._kernel_out else np.asfortranarray(self.kernel(psi, self.X))
                L = linalg.cholesky(K, name="K(psi)", max_tries=1, out=Lb)
            except (np.linalg.LinAlgError, ValueError, FloatingPointError):
                return self._refused()
            f = L @ v
            value = self._value(lp, f, v)
            g = np.asarray(self.likelihood.d1(self.y, f), dtype=np.float64)
            if not (math.isfinite(value) and np.all(np.isfinite(g))):
                return self._refused()
            a = L.T @ g  # L^T L_bar = a v^T
            W = linalg.triangular_inverse(L, out=Wb)
            # Phi(a v^T) W, row i: a_i (sum_{k <= i} v_k W_k. - v_i W_i. / 2)
            C = np.multiply(W, v[:, None], out=Cb)
            PW = np.cumsum(C, axis=0, out=Pb)
            C *= 0.5
            PW -= C
            PW *= a[:, None]
            S = linalg.triangular_matmul(W, PW, trans=True, overwrite_b=True)  # W^T Phi(a v^T) W
            K_bar2 = np.add(S, S.T, out=Cb)  # 2 K_bar
            g_psi = 0.5 * gradient_traces(self.kernel, psi, self.X, K_bar2, K, overwrite_W=True)
            grad = np.concatenate([g_psi + self.prior.grad_log_density(psi), a - v])
        if not np.all(np.isfinite(grad)):
            return self._refused()
        return value, grad


def whitened_start(target: WhitenedJointPosterior, psi0, f0) -> np.ndarray:
    """The position [psi0, L_psi0^-1 f0]: a chain started at latent values f0 (e.g. the Laplace mode)."""
    L = linalg.cholesky(target.kernel(psi0, target.X), name="K(psi0)", count=False)
    v0 = linalg.solve_triangular(L, np.asarray(f0, dtype=np.float64), lower=True)
    return np.concatenate([np.asarray(psi0, dtype=np.float64), v0])


def chain_spec(position0, target: WhitenedJointPosterior, *, n_adapt: int = 1000, step_size: float | None = None,
               **nuts_options) -> runner.ChainSpec:
    """A NUTS chain on ``target`` (``nuts.chain_spec``: Stan's warm-up, its ``nuts_options``) whose kept
    position is psi, with f = L_psi v recorded per kept draw (``extra["f"]``)."""
    spec = nuts.chain_spec(position0, target, n_adapt=n_adapt, step_size=step_size, **nuts_options)
    return runner.ChainSpec(spec.init, spec.step, spec.n_warmup, spec.adapt,
                            position=lambda st: np.array(st.position[: target.p]),
                            record=lambda st, info: {"f": target.latent(st.position)})
