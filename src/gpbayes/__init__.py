"""gpbayes: fully Bayesian inference of Gaussian-process covariance hyperparameters.

Modules
-------
linalg       the one place that factorises matrices; counts O(n^3) operations
kernels      squared-exponential kernels in each paper's parameterisation
likelihoods  probit, logistic, Gaussian, Poisson
priors       priors on log-transformed hyperparameters
regression   exact GP regression: log marginal, gradient, type-II ML
mcmc         samplers as init/step over explicit state
diagnostics  ESS, R-hat
io           NetCDF (ArviZ layout), atomic writes, provenance
data         vendored data sets: checksums, preparation
rng          per-experiment random streams
"""

__version__ = "0.1.0"
