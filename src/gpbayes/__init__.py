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
inference    the inference methods as objects: options, defaults, checks, how each runs
classification  predictive probabilities, EP type-II ML
metrics      capacity accuracy / AUC
sparse       sparse variational GP and its MCMC
gplvm        supervised GPLVM: variational Bayes and pseudo-marginal inference
diagnostics  ESS, R-hat
io           the ArviZ group layout of sampler results
predictive   posterior-predictive draws of y, pointwise log-likelihood (az.loo)
rng          per-experiment random streams

The public API (``gpbayes.api``, re-exported here): models ``GPRegressor``,
``GPClassifier``, ``PoissonGP``, ``SparseGPClassifier``, ``GPLVMRegressor``; ``sample(model, method=...)``
returning an ``arviz.InferenceData``, the method a string or a method object
(``NUTS``, ``PseudoMarginal``, ... of ``gpbayes.inference``); ``summary``; ``predict``.

The reproduction of the five papers (config, vendored data, claims, figures,
one module per paper) is the separate package ``gpbayes_repro``, which this
library never imports.
"""

__version__ = "0.1.0"

_METHOD_OBJECTS = ["Method", "RandomWalkMH", "HMC", "NUTS", "Slice", "AMIS", "MAMIS", "AMISToMAMIS", "TypeIIML",
                   "PseudoMarginal", "PMAMIS", "LatentGibbs", "SliceSampler", "EPML", "JointHMC", "SparseGibbs",
                   "GPLVMPseudoMarginal", "ISCorrectedNUTS", "WhitenedNUTS"]

__all__ = ["GPRegressor", "GPClassifier", "PoissonGP", "SparseGPClassifier", "GPLVMRegressor", "methods", "sample", "summary", "predict",
           "sample_posterior_predictive", "compute_log_likelihood", "NotConvergedWarning", *_METHOD_OBJECTS, "kernels", "likelihoods",
           "priors"]

_API = {"GPRegressor", "GPClassifier", "PoissonGP", "SparseGPClassifier", "GPLVMRegressor", "methods", "sample",
        "summary", "predict", "sample_posterior_predictive", "compute_log_likelihood", "NotConvergedWarning",
        *_METHOD_OBJECTS}


def __getattr__(name):
    """Import the public API on first use (PEP 562).

    ``import gpbayes.linalg`` (what every workflow job does) then does not load the
    API's samplers, ArviZ and the rest: about 0.5 s of start-up per job.
    ``gb.sample``, ``gb.kernels`` etc. work as before.
    """
    import importlib

    if name in _API:
        value = getattr(importlib.import_module(".api", __name__), name)
    elif not name.startswith("_"):
        try:  # a submodule: gb.kernels, gb.api, gb.mcmc, ...
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'gpbayes' has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module 'gpbayes' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
