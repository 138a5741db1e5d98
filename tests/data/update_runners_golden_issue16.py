"""Re-make the pseudo-marginal EP entries (``pm_ep/*``) of ``runners_golden.npz`` after issue 16's EP change.

EP's default stopping rule and its consistent log Z (``gpbayes.approx.ep``, stopping="logz") change the
PM-EP chain of ``tests/test_runner.py::test_pseudo_marginal_bit_for_bit[ep]``: its log densities and
therefore (possibly) its accept/reject path and O(n^3) counts.  Every other entry of the file must stay
bit for bit; this script refuses to write if regenerating them would change any.

    OMP_NUM_THREADS=1 python tests/data/update_runners_golden_issue16.py
"""

from pathlib import Path

import numpy as np

from gpbayes import priors
from gpbayes.estimators import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes_repro.threads import blas_single_thread
from gpbayes.mcmc import pseudo_marginal as pm

PATH = Path(__file__).parent / "runners_golden.npz"


def pm_chain(approx):
    """As tests/test_runner.py::test_pseudo_marginal_bit_for_bit."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(25, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=25) > 0.5, 1.0, -1.0)
    k = SquaredExponential(2, parameterisation="fg", nugget=1e-6)
    pri = priors.IndependentPrior((priors.Gamma(1.0, 1 / np.sqrt(2)), priors.Gamma(1.2, 0.2)))
    t = PseudoMarginalTarget(X, y, k, Probit(), pri, approx=approx, n_imp=4)
    c = pm.run_chain(np.random.default_rng(7), t, np.zeros(2), n_adapt=40, n_burn=10, n_draws=30,
                     proposal_cov=np.eye(2) * 0.1)
    out = {"position": c.draws}
    for old, new in (("log_density", "lp"), ("proposal_log_density", "proposal_lp"), ("accepted", "accepted"),
                     ("acceptance_prob", "acceptance_rate"), ("n_cubic", "n_cubic")):
        out[old] = c.stats[new]
    for key in ("proposal_factor", "adapt_position", "adapt_log_density", "init_log_density", "adapt_n_cubic"):
        out[key] = c.params[key]
    out["init_n_cubic"] = c.warmup["n_cubic_init"]
    out["burn_n_cubic"] = c.warmup["n_cubic"] - c.warmup["n_cubic_init"]
    out["burn_acceptance"] = c.warmup["n_accepted"] / 10
    return out


def main():
    old = dict(np.load(PATH))
    with blas_single_thread():
        la, ep = pm_chain("laplace"), pm_chain("ep")
    for k, v in la.items():  # Laplace must not move
        assert np.array_equal(np.asarray(v), old[f"pm_laplace/{k}"]), f"pm_laplace/{k} changed: refusing"
    new = dict(old)
    for k, v in ep.items():
        a = np.asarray(v)
        want = old[f"pm_ep/{k}"]
        if not np.array_equal(a.astype(want.dtype) if want.dtype.kind == "b" else a, want):
            diff = np.max(np.abs(a.astype(float) - want.astype(float))) if a.shape == want.shape else "shape"
            print(f"pm_ep/{k}: max |change| {diff}")
        new[f"pm_ep/{k}"] = a.astype(want.dtype) if want.dtype.kind == "b" else a
    np.savez(PATH, **new)


if __name__ == "__main__":
    main()
