"""Finite-difference Hessians of a log density: the curvature behind Laplace-style Gaussians N(m, (-H)^-1).

Xiong, Smidl & Filippone (Sec. 4.3.1) start AMIS from, and shape the MH/HMC
proposals and mass matrices with, the Gaussian at the posterior mode whose
covariance is the inverse negative Hessian there; where no analytic Hessian
is at hand it is taken by central differences:

* ``hessian_from_gradients``: from an analytic gradient (p pairs of gradient
  evaluations), symmetrised, error O(eps^2);
* ``hessian_from_values``: from values only (1 + 2p + 4 p(p-1)/2 evaluations),
  e.g. of the approximate LA/EP log marginal of a GP classifier, which has
  no cheap gradient here, error O(eps^2).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["hessian_from_gradients", "hessian_from_values"]


def hessian_from_gradients(grad_fn: Callable[[np.ndarray], np.ndarray], x, eps: float = 1e-4) -> np.ndarray:
    """H_ij ~ (d_j f(x + eps e_i) - d_j f(x - eps e_i)) / (2 eps), then (H + H^T) / 2 (Xiong et al. Sec. 4.3.1's H).

    Row i is the central difference of the gradient along e_i; symmetrising
    averages the two estimates of each mixed derivative.
    """
    x = np.asarray(x, dtype=float)
    p = x.size
    H = np.empty((p, p))
    for i in range(p):
        e = np.zeros(p)
        e[i] = eps
        H[i] = (grad_fn(x + e) - grad_fn(x - e)) / (2 * eps)
    return 0.5 * (H + H.T)


def hessian_from_values(f: Callable[[np.ndarray], float], x, eps: float = 1e-3) -> np.ndarray:
    """Central second differences of f at x (Xiong et al. Sec. 4.3.1's H where only values are at hand).

    H_ii = (f(x + eps e_i) - 2 f(x) + f(x - eps e_i)) / eps^2,
    H_ij = (f(x + eps e_i + eps e_j) - f(x + eps e_i - eps e_j)
            - f(x - eps e_i + eps e_j) + f(x - eps e_i - eps e_j)) / (4 eps^2),  i != j.
    """
    x = np.asarray(x, dtype=float)
    p = x.size
    H = np.empty((p, p))
    E = np.eye(p) * eps
    f0 = f(x)
    for i in range(p):
        for j in range(i, p):
            if i == j:
                H[i, i] = (f(x + E[i]) - 2 * f0 + f(x - E[i])) / eps**2
            else:
                H[i, j] = H[j, i] = (f(x + E[i] + E[j]) - f(x + E[i] - E[j]) - f(x - E[i] + E[j])
                                     + f(x - E[i] - E[j])) / (4 * eps**2)
    return H
