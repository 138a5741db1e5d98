"""gpbayes: fully Bayesian inference of Gaussian-process covariance hyperparameters.

Modules
-------
linalg       the one place that factorises matrices; counts O(n^3) operations
kernels      squared-exponential kernels in each paper's parameterisation
likelihoods  probit, logistic, Gaussian, Poisson
priors       priors on log-transformed hyperparameters
regression   exact GP regression: log marginal, gradient, type-II ML
approx       Laplace and EP Gaussian approximations q(f | y, theta)
estimators   unbiased importance-sampling estimates of p(y | theta)
representations  the latent-Gaussian model; AA (whitened), SURR (surrogate data)
             and post- reparameterisations
site_approximations  Gaussian site fits: the surrogate noise of M&A eqs. 12-13
posterior    GP-regression log posterior (value, gradient)
mcmc         samplers as init/step over explicit state, each run by the one
             runner (mcmc.runner.run_chain): random-walk MH, pseudo-marginal
             and particle-marginal MH, elliptical slice, AA/SURR Gibbs, HMC,
             NUTS, slice sampling, the six M&A representations
amis         adaptive multiple importance sampling (AMIS, MAMIS, PM-AMIS)
classification  predictive probabilities, EP type-II ML
metrics      capacity accuracy / AUC
sparse       sparse variational GP and its MCMC
gplvm        supervised GPLVM: variational Bayes and pseudo-marginal inference
diagnostics  ESS, R-hat
io           NetCDF (ArviZ layout), atomic writes, provenance
rng          per-experiment random streams

The public API (``gpbayes.api``, re-exported here): models ``GPRegressor``,
``GPClassifier``, ``PoissonGP``; ``sample(model, method=...)`` returning an
``arviz.InferenceData``; ``summary``; ``predict``.

The reproduction of the five papers (config, vendored data, claims, figures,
one module per paper) is the separate package ``gpbayes_repro``, which this
library never imports.
"""

__version__ = "0.1.0"

from . import kernels, likelihoods, priors  # noqa: E402,F401  (gb.kernels.SquaredExponential, gb.priors.Gamma)
from .api import (GPClassifier, GPLVMRegressor, GPRegressor, PoissonGP, SparseGPClassifier,  # noqa: E402
                  methods, predict, sample, summary)

__all__ = ["GPRegressor", "GPClassifier", "PoissonGP", "SparseGPClassifier", "GPLVMRegressor", "methods", "sample", "summary", "predict",
           "kernels", "likelihoods", "priors"]
