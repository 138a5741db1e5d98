"""Writing your own likelihood: robust regression with a Student-t likelihood.

A factorised likelihood is a subclass of the protocol
``gpbayes.likelihoods.Likelihood`` that writes ``name``, ``check_targets(y)``,
``log_lik(y, f)`` per observation and ``d1``, ``d2``, ``d3`` (its derivatives in
f); the rest (the tilted moments, the site fits of M&A eqs. 12–13) it inherits
by quadrature. Two optional members make the y-level outputs: ``predictive_mean``
(what ``gb.predict`` reports as ``y_mean``) and ``sample_targets`` (draws of y,
for ``gb.sample_posterior_predictive``). The Student-t is not log-concave, so
it lists no Laplace/EP approximation (``approximations = ()``).

``gb.LatentGP(X, y, likelihood=...)`` puts it in the latent-Gaussian model
(M&A eq. 3): ``gb.sample`` runs a sampler that keeps f (here slice sampling in
the surrogate-data representation, the default with two hyperparameters),
``gb.predict`` gives the latent predictive at new inputs from the kept f, and
``gb.sample_posterior_predictive(..., X_new=...)`` draws y there (f_* from the GP
conditional given f, then y from the likelihood). Two outliers pull the Gaussian
model's mean; the Student-t model ignores them.
"""

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import gammaln

import gpbayes as gb
from gpbayes.likelihoods import Likelihood
from _common import figure_path


@dataclasses.dataclass(frozen=True)
class StudentT(Likelihood):
    """p(y | f) = t_nu(y; f, scale^2), independent per observation."""

    nu: float = 4.0
    scale: float = 0.1
    name = "student-t"
    approximations = ()  # not log-concave: no Laplace (W = -d2 < 0 at outliers) and no EP

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

    def predictive_mean(self, mean, var):
        # E[y_*] = E[f_*] for nu > 1 (the noise is symmetric about f)
        return np.asarray(mean, dtype=np.float64)

    def sample_targets(self, rng, f):
        return f + self.scale * rng.standard_t(self.nu, size=np.shape(f))


rng = np.random.default_rng(8)
X = np.sort(rng.uniform(-3, 3, 40))[:, None]
y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
y[[10, 25]] += 3.0  # two outliers

lik = StudentT()
f = np.linspace(-1, 1, 5)  # the derivatives against finite differences of log_lik
for d, fun in ((lik.d1, lik.log_lik), (lik.d2, lik.d1), (lik.d3, lik.d2)):
    assert np.allclose(d(0.3, f), (fun(0.3, f + 1e-6) - fun(0.3, f - 1e-6)) / 2e-6, atol=1e-5)

model = gb.LatentGP(X, y, likelihood=StudentT(nu=4), ard=False)
# the method gb.sample(model) picks for two hyperparameters (it then runs until converged); short chains here
idata = gb.sample(model, method=gb.SliceSampler(representation="surr-site"), chains=2, draws=150, n_warmup=100,
                  seed=1, progress=False, cores=1)
print(gb.summary(idata)[["mean", "ess_bulk", "r_hat"]])
xs = np.linspace(-3, 3, 100)[:, None]
robust = gb.predict(model, idata, xs)  # f_mean, f_sd, f_lower, f_upper, y_mean over "point"
# draws of y at 3 new inputs: f_* | f from the GP conditional, then y_* from the Student-t
x_new = np.array([[-2.0], [0.0], [2.0]])
gb.sample_posterior_predictive(model, idata, X_new=x_new, seed=2)
y_new = idata.posterior_predictive["y"]  # (chain, draw, point)
print("y at x = -2, 0, 2: mean", y_new.mean(("chain", "draw")).values.round(2),
      "5-95 %", y_new.quantile([0.05, 0.95], dim=("chain", "draw")).values.round(2).tolist())

gauss = gb.GPRegressor(X, y, ard=False)
idata_g = gb.sample(gauss, method=gb.Slice(), chains=2, draws=100, n_warmup=50, seed=8, progress=False)
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(X[:, 0], y, "k.", label="data (two outliers)")
ax.plot(xs[:, 0], gb.predict(gauss, idata_g, xs)["mean"].values, label="Gaussian likelihood")
ax.plot(xs[:, 0], robust["f_mean"].values, label="Student-t likelihood (gb.LatentGP)")
ax.fill_between(xs[:, 0], robust["f_lower"].values, robust["f_upper"].values, alpha=0.2)
ax.plot(np.repeat(x_new[:, 0], 40), y_new.values[0, :40].T.ravel(), "C3x", ms=3, alpha=0.5,
        label="draws of y at new inputs")
ax.plot(xs[:, 0], np.sin(xs[:, 0]), "k--", lw=0.8, label="truth")
ax.set(xlabel="x", ylim=(-2, 4))
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(figure_path(__file__), dpi=80)
