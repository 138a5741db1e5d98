"""The Gibbs-type runners (F&G's AA/SURR, M&A's six representations) on the common runner
reproduce the arrays of the pre-runner code bit for bit.

``tests/data/gibbs_golden.npz`` was made by ``tests/data/make_gibbs_golden.py`` with the code
before the runner (commit 81aef2f).
"""

from pathlib import Path

import numpy as np
import pytest

from gpbayes import priors
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Gaussian, Logistic, Poisson, Probit
from gpbayes.mcmc import hyper_slice as hs
from gpbayes.mcmc import latent_gibbs as lg
from gpbayes.representations import LatentGaussianModel

GOLDEN = np.load(Path(__file__).parent / "data" / "gibbs_golden.npz")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """The golden arrays were made with one BLAS thread, as every workflow job runs (README, Performance):
    multi-threaded BLAS may round differently."""
    from gpbayes_repro.threads import blas_single_thread

    with blas_single_thread():
        yield
rng = np.random.default_rng(0)
X = rng.uniform(size=(15, 2))
YB = np.where(X[:, 0] > 0.5, 1.0, -1.0)
Y_GAUSS = np.sin(3 * X[:, 0])
Y_POIS = rng.poisson(2.0, size=15).astype(float)


def eq(key, value):
    want = GOLDEN[key]
    got = np.asarray(value)
    assert got.shape == want.shape and np.array_equal(got, want.astype(got.dtype)), key


@pytest.mark.parametrize("method", ["aa", "surr"])
def test_latent_gibbs_bit_for_bit(method):
    k = SquaredExponential(2, parameterisation="fg", nugget=1e-6)
    pri = priors.IndependentPrior((priors.Gamma(1.0, 1 / np.sqrt(2)), priors.Gamma(1.2, 0.2)))
    m = LatentGaussianModel(k, X, Probit(), YB, pri)
    c = lg.run_chain(np.random.default_rng(3), m, np.zeros(2), np.zeros(15), method=method, n_burn=20, n_draws=15,
                     proposal_cov=np.eye(2) * 0.3, n_latent_updates=2)
    t = f"lg_{method}/"
    eq(t + "psi", c.draws)
    eq(t + "f", c.extra["f"])
    eq(t + "log_likelihood", c.extra["log_likelihood"])
    eq(t + "log_prior", c.extra["log_prior"])
    for old, new in (("accepted", "accepted"), ("acceptance_prob", "acceptance_rate"), ("n_cubic", "n_cubic"),
                     ("n_likelihood_evals", "n_likelihood"), ("n_shrinkages", "n_shrinkages"),
                     ("n_failed_cholesky", "n_failed_cholesky")):
        eq(t + old, c.stats[new])
    eq(t + "proposal_scale", c.params["proposal_scale"])
    eq(t + "burn_acceptance", c.warmup["n_accepted"] / 20)
    eq(t + "burn_n_cubic", c.warmup["n_cubic"])


CASES = [(lik, meth) for lik in ("logistic", "gaussian", "poisson")
         for meth in ("fixed", "prior-white", "surr-site", "surr-taylor", "post-site", "post-taylor")
         if lik == "poisson" or not meth.endswith("taylor")]


@pytest.mark.parametrize("lname,method", CASES)
def test_hyper_slice_bit_for_bit(lname, method):
    kma = SquaredExponential(2, ard=True, parameterisation="ma", nugget=1e-6)
    lu = priors.LogUniform(0.1, 10.0)
    lik, y, off = {"logistic": (Logistic(), YB, False), "gaussian": (Gaussian(0.1), Y_GAUSS, False),
                   "poisson": (Poisson(), Y_POIS, True)}[lname]
    comps = [lu, lu, lu] + ([priors.LogNormal(np.log(2.0), 1.0)] if off else [])
    model = LatentGaussianModel(kma, X, lik, y, priors.IndependentPrior(tuple(comps)), sample_offset=off)
    c = hs.run_chain(np.random.default_rng(4), model, np.zeros(model.n_params), np.zeros(15), method, n_burn=3,
                     n_draws=6, n_latent_updates=2)
    t = f"hs_{lname}_{method}/"
    eq(t + "theta", c.draws)
    eq(t + "complete_ll", c.stats["lp"])
    eq(t + "log_likelihood", c.extra["log_likelihood"])
    for old, new in (("n_likelihood_evals", "n_likelihood"), ("n_covariance", "n_covariance"), ("n_cubic", "n_cubic"),
                     ("n_density_evals", "n_density_evals"), ("n_shrinkages", "n_shrinkages")):
        eq(t + old, c.stats[new])
    eq(t + "burn_n_covariance", c.warmup["n_covariance"])
    eq(t + "burn_n_likelihood_evals", c.warmup["n_likelihood"])
