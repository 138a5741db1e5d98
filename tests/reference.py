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
