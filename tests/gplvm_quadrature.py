"""The N = 2 supervised-GPLVM toy whose (tempered) posterior moments are computed by quadrature.

N = 2 points, k_x = k_z = 1, k_y = 4 outputs: psi = (log sigma, log theta, log theta_S, log beta) has 4
coordinates and V two.  With log-normal priors the posterior mean of h(psi) is a ratio of Gauss-Hermite
sums over psi (under the prior) and V (under N(0, I)); with ``inverse_temperature`` b the likelihood
enters as p(Y | Z, psi)^b, the target of one replica of ``gpbayes.gplvm.joint.tempered_step``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from gpbayes import diagnostics, priors

Q_X = np.array([[0.0], [1.0]])
Q_Y = np.array([[0.3, -0.8, 1.1, 0.2], [0.9, -0.1, 0.4, 1.3]])
Q_MEAN = np.array([0.0, 0.0, 0.0, 1.0])
Q_SD = np.array([0.4, 0.5, 0.4, 0.4])
Q_PRIOR = priors.IndependentPrior(tuple(priors.LogNormal(m, s) for m, s in zip(Q_MEAN, Q_SD)))


@functools.lru_cache(maxsize=None)
def quadrature_moments(n_psi: int = 9, n_v: int = 24, inverse_temperature: float = 1.0):
    """E[psi_k] and E[psi_k^2] under p(psi) N(V; 0, I) p(Y | Z = L_z V, psi)^b by Gauss-Hermite quadrature."""
    t, w = np.polynomial.hermite_e.hermegauss(n_psi)
    w = w / w.sum()
    tv, wv = np.polynomial.hermite_e.hermegauss(n_v)
    wv = wv / wv.sum()
    grids = np.meshgrid(*[Q_MEAN[k] + Q_SD[k] * t for k in range(4)], indexing="ij")
    psi = np.stack([g.ravel() for g in grids], axis=1)  # (G, 4)
    wpsi = np.prod(np.stack(np.meshgrid(*[w] * 4, indexing="ij")), axis=0).ravel()
    v1, v2 = (a.ravel() for a in np.meshgrid(tv, tv, indexing="ij"))
    wvv = np.outer(wv, wv).ravel()
    sigma, theta, theta_s, beta = (np.exp(psi[:, k]) for k in range(4))
    # K_z = [[1 + eps, r], [r, 1 + eps]], r = exp(-sigma / 2 (x_1 - x_2)^2); Z = L V
    eps = 1e-6
    r = np.exp(-0.5 * sigma)
    l11 = np.sqrt(1 + eps)
    l21, l22 = r / l11, np.sqrt(1 + eps - (r / l11) ** 2)
    z1 = l11 * v1[None, :]
    z2 = l21[:, None] * v1[None, :] + l22[:, None] * v2[None, :]
    c_off = theta_s[:, None] * np.exp(-0.5 * theta[:, None] * (z1 - z2) ** 2)  # (G, V)
    c_diag = (theta_s + 1.0 / beta)[:, None]
    det = c_diag**2 - c_off**2
    a, b = Q_Y[0], Q_Y[1]
    quad = (c_diag[..., None] * (a**2 + b**2) - 2 * c_off[..., None] * a * b) / det[..., None]
    log_lik = -0.5 * quad.sum(-1) - 0.5 * Q_Y.shape[1] * np.log(det) - Q_Y.size / 2 * math.log(2 * math.pi)
    log_lik = float(inverse_temperature) * log_lik
    lik = np.exp(log_lik - log_lik.max()) @ wvv  # (G,)
    post = wpsi * lik
    post /= post.sum()
    return post @ psi, post @ psi**2


def z_scores(draws, inverse_temperature: float = 1.0):
    """Per moment E[psi_k], E[psi_k^2] of ``draws`` (chain, draw, 4): (z = (chain mean - quadrature) / se,
    |quadrature mean - prior mean| / se for the first moments, a report), se from the run's own ESS."""
    mean, second = quadrature_moments(inverse_temperature=inverse_temperature)
    zs, shifts, report = [], [], []
    for k in range(4):
        for power, exact in ((1, mean[k]), (2, second[k])):
            h = draws[..., k] ** power
            ess = diagnostics.ess(h, method="mean")
            se = float(np.std(h)) / math.sqrt(ess)
            zs.append((h.mean() - exact) / se)
            if power == 1:
                shifts.append(abs(exact - Q_MEAN[k]) / se)
            report.append(f"b={inverse_temperature} psi_{k}^{power}: chain {h.mean():.4f} quadrature {exact:.4f} "
                          f"se {se:.4f} ESS {ess:.0f}")
    return np.array(zs), np.array(shifts), "\n".join(report)
