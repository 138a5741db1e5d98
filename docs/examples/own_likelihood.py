"""Writing your own likelihood: robust regression with a Student-t likelihood.

A factorised likelihood is a subclass of the protocol
``gpbayes.likelihoods.Likelihood`` that writes ``name``, ``check_targets(y)``,
``log_lik(y, f)`` per observation and ``d1``, ``d2``, ``d3`` (its derivatives in
f, for the Laplace approximation); the rest (EP's tilted moments, the site fits
of M&A eqs. 12–13, the predictive) it inherits by quadrature. With it, the
latent-Gaussian model
``gpbayes.representations.LatentGaussianModel`` (M&A eq. 3) runs under the
samplers that need only ``log_lik``: here Filippone & Girolami's AA Gibbs
baseline (MH on ψ in the whitened representation, then elliptical slice
sampling of f; ``gpbayes.mcmc.latent_gibbs``). Two outliers pull the Gaussian
model's mean; the Student-t model ignores them.
"""

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import gammaln

import gpbayes as gb
from gpbayes import priors
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Likelihood
from gpbayes.mcmc import latent_gibbs
from gpbayes.representations import LatentGaussianModel
from _common import figure_path


@dataclasses.dataclass(frozen=True)
class StudentT(Likelihood):
    """p(y | f) = t_nu(y; f, scale^2), independent per observation."""

    nu: float = 3.0
    scale: float = 0.1
    name = "student-t"

    def check_targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("student-t likelihood: y has NaN or infinite values")
        return y

    def log_lik(self, y, f):
        z2 = ((y - f) / self.scale) ** 2
        return (gammaln((self.nu + 1) / 2) - gammaln(self.nu / 2) - 0.5 * np.log(self.nu * np.pi)
                - np.log(self.scale) - (self.nu + 1) / 2 * np.log1p(z2 / self.nu))

    def d1(self, y, f):
        r = y - f
        return (self.nu + 1) * r / (self.nu * self.scale**2 + r**2)

    def d2(self, y, f):
        r2, a = (y - f) ** 2, self.nu * self.scale**2
        return (self.nu + 1) * (r2 - a) / (a + r2) ** 2

    def d3(self, y, f):
        r, a = y - f, self.nu * self.scale**2
        return 2 * (self.nu + 1) * r * (r**2 - 3 * a) / (a + r**2) ** 3


rng = np.random.default_rng(8)
X = np.sort(rng.uniform(-3, 3, 40))[:, None]
y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
y[[10, 25]] += 3.0  # two outliers

lik = StudentT()
f = np.linspace(-1, 1, 5)  # the derivatives against finite differences of log_lik
for d, fun in ((lik.d1, lik.log_lik), (lik.d2, lik.d1), (lik.d3, lik.d2)):
    assert np.allclose(d(0.3, f), (fun(0.3, f + 1e-6) - fun(0.3, f - 1e-6)) / 2e-6, atol=1e-5)

kernel = SquaredExponential(1, ard=False, parameterisation="fg", nugget=1e-6)
prior = priors.IndependentPrior((priors.Gamma(1.0, 1.0), priors.Gamma(1.1, 0.1)))
lgm = LatentGaussianModel(kernel, X, lik, y, prior)
chain = latent_gibbs.run_chain(np.random.default_rng(1), lgm, kernel.initial_psi(X), np.zeros(40), method="aa",
                               n_burn=150, n_draws=300, keep_latent=True)
f_mean = chain.extra["f"].mean(axis=0)
print("acceptance of the psi updates", chain.stats["accepted"].mean())

gauss = gb.GPRegressor(X, y, ard=False)
idata = gb.sample(gauss, method=gb.Slice(), chains=2, draws=100, n_warmup=50, seed=8, progress=False)
xs = np.linspace(-3, 3, 100)[:, None]
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(X[:, 0], y, "k.", label="data (two outliers)")
ax.plot(xs[:, 0], gb.predict(gauss, idata, xs)["mean"].values, label="Gaussian likelihood")
ax.plot(X[:, 0], f_mean, label="Student-t likelihood (AA Gibbs)")
ax.plot(xs[:, 0], np.sin(xs[:, 0]), "k--", lw=0.8, label="truth")
ax.set(xlabel="x")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
