"""Writing your own kernel: a periodic covariance, used by GP regression with NUTS.

A kernel is any object with the methods of the kernel protocol
(``gpbayes.kernels.Kernel``): its value, diagonal, gradients in the
log-parameters ψ, an amplitude and a starting point (the sparse GP also needs two
reverse-mode products, not used here). Regression, classification and the
samplers use nothing else. Here the periodic kernel of MacKay (1998),
k(x, x') = s² exp(−2 sin²(π |x − x'| / p) / ℓ²), ψ = (log ℓ, log p, log s²); the
script checks its gradients by finite differences before sampling.
"""

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
from scipy.spatial.distance import cdist

import gpbayes as gb
from gpbayes import priors
from _common import figure_path


@dataclasses.dataclass(frozen=True)
class Periodic:
    input_dim: int
    n_params = 3
    param_names = ["lengthscale", "period", "variance"]

    def __call__(self, psi, X, X2=None):
        ell, p, s2 = np.exp(psi)
        return s2 * np.exp(-2.0 * np.sin(np.pi * cdist(X, X if X2 is None else X2) / p) ** 2 / ell**2)

    def diag(self, psi, X):
        return np.full(len(X), np.exp(psi[2]))

    def gradients(self, psi, X, K=None):
        ell, p, _ = np.exp(psi)
        K = self(psi, X) if K is None else K
        u = np.pi * cdist(X, X) / p
        d_log_ell = K * 4.0 * np.sin(u) ** 2 / ell**2                  # dK / d log l
        d_log_p = K * 4.0 * np.sin(u) * np.cos(u) * u / ell**2          # dK / d log p
        return [d_log_ell, d_log_p, K]                                  # dK / d log s2 = K

    def amplitude(self, psi):
        return float(np.exp(psi[2]))

    def initial_psi(self, X, amplitude=1.0):
        return np.array([0.0, np.log(np.ptp(X) / 4), np.log(amplitude)])

    def cross_covariance_vjp(self, psi, X1, X2, K12, K_bar, inputs=True):
        raise NotImplementedError("only the sparse GP needs it")

    def diag_vjp(self, psi, diag, diag_bar):
        return np.array([0.0, 0.0, float(np.sum(diag * diag_bar))])


kernel = Periodic(1)
X = np.linspace(0, 10, 40)[:, None]
psi = np.array([0.2, 0.9, -0.3])
for i, g in enumerate(kernel.gradients(psi, X)):  # finite differences of each log-parameter
    e = np.eye(3)[i] * 1e-6
    fd = (kernel(psi + e, X) - kernel(psi - e, X)) / 2e-6
    assert np.allclose(g, fd, atol=1e-6), kernel.param_names[i]

rng = np.random.default_rng(7)
y = np.sin(2 * np.pi * X[:, 0] / 2.5) + 0.2 * rng.normal(size=40)
prior = priors.IndependentPrior((priors.Gamma(2.0, 2.0), priors.LogNormal(np.log(2.0), 0.5),
                                 priors.Gamma(1.1, 0.1), priors.Gamma(1.0, 1.0)))  # + noise variance
reg = gb.GPRegressor(X, y, kernel=kernel, prior=prior, standardize=False)
idata = gb.sample(reg, method=gb.NUTS(), chains=2, draws=100, n_warmup=100, seed=7, progress=False)
print(gb.summary(idata)[["mean", "sd", "ess_bulk", "r_hat"]])

xs = np.linspace(0, 12, 150)[:, None]
pred = gb.predict(reg, idata, xs, max_draws=50)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.2))
ax1.plot(X[:, 0], y, "k.", label="data")
ax1.plot(xs[:, 0], pred["mean"].values, label="posterior mean")
ax1.fill_between(xs[:, 0], pred["y_lower"].values, pred["y_upper"].values, alpha=0.2, label="95 % for a new y")
ax2.hist(idata.posterior["period"].values.ravel(), bins=30)
ax2.axvline(2.5, color="k", ls="--", label="true period")
ax1.set(xlabel="x"), ax2.set(xlabel="period")
ax1.legend(fontsize=7), ax2.legend()
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
