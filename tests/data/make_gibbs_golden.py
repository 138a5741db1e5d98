"""Run with one BLAS thread (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1), as the workflow does.
Golden arrays of the two Gibbs-type chain runners, made with the code before they used
gpbayes.mcmc.runner (commit 81aef2f): latent_gibbs.run_chain (AA, SURR) and
hyper_slice.run_chain (six representations; logistic, Gaussian, Poisson with offset)."""
import sys

import numpy as np

from gpbayes import priors
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Gaussian, Logistic, Poisson, Probit
from gpbayes.mcmc import hyper_slice as hs
from gpbayes.mcmc import latent_gibbs as lg
from gpbayes.representations import LatentGaussianModel

out = {}
rng = np.random.default_rng(0)
X = rng.uniform(size=(15, 2))
yb = np.where(X[:, 0] > 0.5, 1.0, -1.0)
k = SquaredExponential(2, parameterisation="fg", nugget=1e-6)
pri = priors.IndependentPrior((priors.Gamma(1.0, 1 / np.sqrt(2)), priors.Gamma(1.2, 0.2)))
m = LatentGaussianModel(k, X, Probit(), yb, pri)
for meth in ("aa", "surr"):
    r = lg.run_chain(np.random.default_rng(3), m, np.zeros(2), np.zeros(15), method=meth, n_burn=20, n_draws=15,
                     proposal_cov=np.eye(2) * 0.3, n_latent_updates=2)
    for key in ("psi", "f", "log_likelihood", "log_prior", "accepted", "acceptance_prob", "n_cubic",
                "n_likelihood_evals", "n_shrinkages", "n_failed_cholesky", "proposal_scale", "burn_acceptance",
                "burn_n_cubic"):
        out[f"lg_{meth}/{key}"] = np.asarray(r[key])
kma = SquaredExponential(2, ard=True, parameterisation="ma", nugget=1e-6)
lu = priors.LogUniform(0.1, 10.0)
cases = {"logistic": (Logistic(), yb, False), "gaussian": (Gaussian(0.1), np.sin(3 * X[:, 0]), False),
         "poisson": (Poisson(), rng.poisson(2.0, size=15).astype(float), True)}
for lname, (lik, y, off) in cases.items():
    comps = [lu, lu, lu] + ([priors.LogNormal(np.log(2.0), 1.0)] if off else [])
    model = LatentGaussianModel(kma, X, lik, y, priors.IndependentPrior(tuple(comps)), sample_offset=off)
    theta0 = np.zeros(model.n_params)
    for meth in ("fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor"):
        if lname != "poisson" and meth.endswith("taylor"):
            continue
        r = hs.run_chain(np.random.default_rng(4), model, theta0, np.zeros(15), meth, n_burn=3, n_draws=6,
                         n_latent_updates=2)
        for key in ("theta", "complete_ll", "log_likelihood", "n_likelihood_evals", "n_covariance", "n_cubic",
                    "n_density_evals", "n_shrinkages", "burn_n_covariance", "burn_n_likelihood_evals"):
            out[f"hs_{lname}_{meth}/{key}"] = np.asarray(r[key])
np.savez_compressed(sys.argv[1], **out)
print(len(out), "arrays")
