"""Run with one BLAS thread (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1), as the workflow does.
Golden arrays of the five core chain runners, made with the pre-runner code (commit 81aef2f)."""
import sys
import numpy as np
from gpbayes.mcmc import driver, hmc, nuts, slice as ss, pseudo_marginal as pm
from gpbayes.estimators import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes import priors

MEAN = np.array([0.5, -1.0]); PREC = np.array([[2.0, 0.6], [0.6, 1.0]])
def logp(x, rng=None):
    d = np.asarray(x) - MEAN; return -0.5 * d @ PREC @ d
def vg(x):
    d = np.asarray(x) - MEAN; return -0.5 * d @ PREC @ d, -PREC @ d
out = {}
def keep(tag, res, keys):
    for k in keys:
        out[f"{tag}/{k}"] = np.asarray(res[k])
r = driver.run_rwmh_chain(np.random.default_rng(1), MEAN + 2, logp, np.eye(2), n_burn=200, n_draws=100)
keep("rwmh", r, ["position", "log_density", "accepted", "acceptance_prob", "n_cubic", "proposal_factor", "proposal_scale", "burn_acceptance"])
mass = hmc.mass_matrix("identity", dim=2)
r = hmc.run_hmc_chain(np.random.default_rng(2), MEAN + 2, vg, mass, n_tune=60, n_draws=50)
keep("hmc", r, ["position", "log_density", "accepted", "acceptance_prob", "n_grad_evals", "diverging", "step_size", "tune_acceptance", "tune_n_grad_evals"])
r = nuts.run_nuts_chain(np.random.default_rng(3), MEAN + 2, vg, mass, n_draws=40)
keep("nuts", r, ["position", "log_density", "accepted", "acceptance_prob", "n_grad_evals", "tree_depth", "diverging", "step_size"])
r = nuts.run_nuts_chain(np.random.default_rng(4), MEAN + 2, vg, mass, n_draws=40, n_adapt=50, step_size=None)
keep("nutsda", r, ["position", "log_density", "acceptance_prob", "n_grad_evals", "tree_depth", "step_size", "tune_n_grad_evals"])
r = ss.run_slice_chain(np.random.default_rng(5), MEAN + 2, logp, 1.5, n_draws=60, n_burn=10)
keep("slice", r, ["position", "log_density", "n_density_evals", "n_shrinkages", "n_steps_out"])
r = ss.run_slice_chain(np.random.default_rng(6), MEAN + 2, logp, 1.5, n_draws=40, step_out=0, order="random")
keep("slice_ma", r, ["position", "log_density", "n_density_evals", "n_shrinkages"])
rng = np.random.default_rng(0)
X = rng.uniform(size=(25, 2)); y = np.where(X[:, 0] + 0.3 * rng.normal(size=25) > 0.5, 1.0, -1.0)
k = SquaredExponential(2, parameterisation="fg", nugget=1e-6)
pri = priors.IndependentPrior((priors.Gamma(1.0, 1 / np.sqrt(2)), priors.Gamma(1.2, 0.2)))
for approx in ("laplace", "ep"):
    t = PseudoMarginalTarget(X, y, k, Probit(), pri, approx=approx, n_imp=4)
    r = pm.run_pm_chain(np.random.default_rng(7), t, np.zeros(2), n_adapt=40, n_burn=10, n_draws=30, proposal_cov=np.eye(2) * 0.1)
    keep(f"pm_{approx}", r, ["position", "log_density", "proposal_log_density", "accepted", "acceptance_prob", "n_cubic", "proposal_factor", "adapt_position", "adapt_log_density", "init_log_density", "adapt_n_cubic", "burn_n_cubic", "init_n_cubic", "burn_acceptance"])
np.savez_compressed(sys.argv[1], **out)
print(len(out), "arrays")
