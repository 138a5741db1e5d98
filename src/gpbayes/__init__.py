"""gpbayes: fully Bayesian inference of Gaussian-process covariance hyperparameters.

Modules
-------
linalg       the one place that factorises matrices; counts O(n^3) operations
kernels      the kernel protocol; squared exponential (each paper's parameterisation),
             Matérn, rational quadratic, periodic, linear, white; + and *
likelihoods  probit, logistic, Gaussian, Poisson
priors       priors on log-transformed hyperparameters
means        mean functions (constant, linear) with Gaussian coefficients integrated out (R&W Sec. 2.7)
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
methods      the inference methods as objects: options, defaults, checks, how each runs
             (one module per family; the registry of aliases; the default method)
classification  predictive probabilities, EP type-II ML
metrics      capacity accuracy / AUC
sparse       sparse variational GP and its MCMC
gplvm        supervised GPLVM: variational Bayes and pseudo-marginal inference
diagnostics  ESS, R-hat
io           the ArviZ group layout of sampler results
predictive   posterior-predictive draws of y, pointwise log-likelihood (az.loo)
rng          per-experiment random streams

The public API (``gpbayes.api``, re-exported here): models ``GPRegressor``,
``GPClassifier``, ``PoissonGP``, ``SparseGP`` (any likelihood) and ``SparseGPClassifier``, ``GPLVMRegressor``,
``LatentGP`` (any likelihood);
``sample(model, method=...)``
returning an ``arviz.InferenceData`` (an ``xarray.DataTree`` on ArviZ 1.x), the method a string or a method object
(``NUTS``, ``PseudoMarginal``, ... of ``gpbayes.methods``); ``summary``; ``predict``.

The reproduction of the five papers (config, vendored data, claims, figures,
one module per paper) is the separate package ``gpbayes_repro``, which this
library never imports.
"""

__version__ = "0.1.0"

#: the public API's own names (``gpbayes.api``); the method objects (``NUTS``, ``PseudoMarginal``, ...)
#: are read from the registry of ``gpbayes.methods``
_API = ("GPRegressor", "GPClassifier", "PoissonGP", "SparseGP", "SparseGPClassifier", "GPLVMRegressor", "LatentGP", "sample",
        "summary",
        "predict", "sample_posterior_predictive", "compute_log_likelihood", "NotConvergedWarning")
_PACKAGES = ("methods", "kernels", "likelihoods", "priors", "means")


def _method_objects() -> list[str]:
    """``Method`` and the names of the method classes the registry of ``gpbayes.methods`` holds."""
    import importlib

    return ["Method", *importlib.import_module(".methods", __name__).METHOD_CLASSES]


def __getattr__(name):
    """Import the public API on first use (PEP 562).

    ``import gpbayes.linalg`` (what every workflow job does) then does not load the
    API's samplers, ArviZ and the rest: about 0.5 s of start-up per job.
    ``gb.sample``, ``gb.kernels`` etc. work as before; ``gb.NUTS`` and the other method
    objects come from the registry of ``gpbayes.methods`` (``__all__`` lists them).
    ``gb.methods`` is the package ``gpbayes.methods``, which is callable:
    ``gb.methods(model)`` lists the method strings that apply to ``model``.
    """
    import importlib

    if name == "__all__":
        value = [*_API, *_method_objects(), *_PACKAGES]
    elif name in _API:
        value = getattr(importlib.import_module(".api", __name__), name)
    elif not name.startswith("_"):
        try:  # a submodule: gb.kernels, gb.api, gb.mcmc, gb.methods ...
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            methods = importlib.import_module(".methods", __name__)
            if name not in _method_objects():
                raise AttributeError(f"module 'gpbayes' has no attribute {name!r}") from None
            value = getattr(methods, name)
    else:
        raise AttributeError(f"module 'gpbayes' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__getattr__("__all__")))
