"""Naive reference implementations used only by the tests."""

import numpy as np


def se_kernel_double_loop(X, X2, amplitude, precisions):
    """a * exp(-1/2 sum_d w_d (x_d - x'_d)^2) by explicit loops."""
    K = np.empty((X.shape[0], X2.shape[0]))
    for i in range(X.shape[0]):
        for j in range(X2.shape[0]):
            s = 0.0
            for d in range(X.shape[1]):
                s += precisions[d] * (X[i, d] - X2[j, d]) ** 2
            K[i, j] = amplitude * np.exp(-0.5 * s)
    return K


def finite_difference_grad(fun, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (fun(x + e) - fun(x - e)) / (2 * eps)
    return g


def hmc_fixed_length_step(rng, x, log_density_and_grad, step_size, n_steps, inv_mass, jitter):
    """HMC with a fixed number of leapfrog steps and a jittered step size, written as Neal
    (2011, Fig. 2) does -- full momentum steps between the two half steps -- with
    M^-1 = ``inv_mass`` (a vector: diagonal; a matrix: dense).  This is the kernel
    ``gpbayes.sparse.mcmc`` had before it used ``gpbayes.mcmc.hmc``; the random numbers
    come in the same order: z ~ N(0, I) for the momentum, u for the jitter, u for the
    acceptance (drawn also when the trajectory failed).  Returns (x, accepted)."""
    inv_mass = np.asarray(inv_mass, dtype=float)
    dense = inv_mass.ndim == 2
    z = rng.standard_normal(x.shape[0])
    if dense:
        C = np.linalg.cholesky(inv_mass)
        p = np.linalg.solve(C.T, z)  # p = C^-T z ~ N(0, (C C^T)^-1)
    else:
        p = z / np.sqrt(inv_mass)
    eps = step_size * (1.0 + jitter * (2.0 * rng.uniform() - 1.0))

    def kinetic(p):
        return 0.5 * p @ (inv_mass @ p if dense else inv_mass * p)

    value0, grad = log_density_and_grad(x)
    h0 = -value0 + kinetic(p)
    q = x.copy()
    p = p + 0.5 * eps * grad
    ok = True
    for i in range(n_steps):
        q = q + eps * (inv_mass @ p if dense else inv_mass * p)
        value, grad = log_density_and_grad(q)
        if not np.isfinite(value):
            ok = False
            break
        p = p + (eps if i < n_steps - 1 else 0.5 * eps) * grad
    accept_prob = min(1.0, np.exp(h0 - (-value + kinetic(p)))) if ok else 0.0
    accepted = rng.uniform() < accept_prob
    return (q if accepted else x), bool(accepted)
