"""Gaussian approximations q(f | y, theta) = N(m, Sigma) to the latent posterior.

Both approximations here -- the Laplace approximation (``laplace``) and
expectation propagation (``ep``) -- give a Gaussian of the same "site" form

    Sigma = (K^-1 + diag(w))^-1,        w >= 0,

with ``w = W = -d^2 log p(y|f)/df^2`` at the mode for the Laplace
approximation and ``w = tau_tilde`` (the site precisions) for EP.  Neither
ever forms K^-1.  Both keep

* the lower Cholesky factor ``B_chol`` of ``B = I + W^1/2 K W^1/2``
  (Rasmussen & Williams 2006, eq. 3.26 / 3.67), whose eigenvalues are >= 1,
* and, when the caller supplies it, the lower Cholesky factor ``K_chol`` of K.

With these, everything the importance sampler of Filippone & Girolami (2014,
eq. 25) needs costs O(n^2) per draw and no further O(n^3) operation:

* log |Sigma| = log |K| - log |B|;
* (f - m)^T Sigma^-1 (f - m) = |L_K^-1 (f - m)|^2 + (f - m)^T W (f - m);
* a draw f = m + Sigma (L_K^-T z1 + W^1/2 z2), z1, z2 ~ N(0, I_n) independent.
  The bracket has covariance K^-1 + W = Sigma^-1, so Sigma times it has
  covariance Sigma Sigma^-1 Sigma = Sigma, i.e. the draw is exactly
  N(m, Sigma) (the "perturbation" construction of a Gaussian whose
  precision is a sum of two easy precisions).  Written without K^-1:
  Sigma (L_K^-T z1 + W^1/2 z2) = (I + K W)^-1 (L_K z1 + K W^1/2 z2), and
  (I + K W)^-1 v = v - K W^1/2 B^-1 W^1/2 v (Woodbury).

This replaces the explicit Cholesky factor of Sigma = K - K W^1/2 B^-1 W^1/2 K,
which would cost a triangular solve, a product and one more Cholesky (about
seven Cholesky-equivalents in time) per approximation; ``covariance()`` still
forms Sigma explicitly for tests and diagnostics.
"""

from __future__ import annotations

from .ep import ep_approximation, ep_log_marginal_and_grad
from .gaussian import ConvergenceWarning, GaussianApproximation, failures_counted
from .laplace import laplace_approximation, laplace_log_marginal_and_grad

__all__ = ["GaussianApproximation", "ConvergenceWarning", "failures_counted", "laplace_approximation",
           "laplace_log_marginal_and_grad",
           "ep_approximation", "ep_log_marginal_and_grad"]
