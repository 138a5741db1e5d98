"""Re-make the EP-dependent arrays of ``numerics_golden.npz`` after issue 16 (EP accurate by default).

``make_numerics_golden.py`` made the file from the code before issue 12's move and calls
functions that no longer exist, so it cannot be re-run.  Issue 16 changed EP on purpose
(log Z_EP from consistent cavities, default stopping rule on the change of log Z_EP, diag(Sigma)
from a triangular inverse), which changes every array below that depends on EP.  This script
recomputes exactly those arrays with the current code, through the same calls as
``tests/test_numerics_golden.py``, leaves every other array untouched, and prints, per array,
the largest absolute change (the numbers quoted in the commit that made the change).  The
Laplace halves of the mixed arrays must come out identical (checked here).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src \\
        /work/main/.venv/bin/python tests/data/update_numerics_golden_issue16.py tests/data/numerics_golden.npz
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from gpbayes_repro.threads import blas_single_thread
from gpbayes.estimators.importance import PseudoMarginalTarget
from gpbayes.likelihoods import Probit
from gpbayes.mcmc import particle_marginal

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("make_numerics_golden", HERE / "make_numerics_golden.py")
G = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(G)


def ep_arrays() -> dict:
    out = {}
    # F&G Sec. 5 PM-EP chain carrying a latent (test_capacity_chain_with_latents_...[ep])
    X, y, kernel, prior = G.probit_problem()
    target = PseudoMarginalTarget(X, y, kernel, Probit(), prior, approx="ep", n_imp=8)
    n_burn, n_draws, thin = 6, 30, 3
    ch = particle_marginal.run_chain(np.random.default_rng(21), target.log_density_and_latent, G.CHAIN_START,
                                     G.PROPOSAL_FACTOR, n_burn=n_burn, n_draws=n_draws)
    out["capacity_ep_position"] = ch.draws
    out["capacity_ep_log_density"] = ch.stats["lp"]
    out["capacity_ep_accepted"] = ch.stats["accepted"]
    out["capacity_ep_latent"] = ch.extra["latent"][::thin]
    out["capacity_ep_burn_acceptance"] = np.asarray(ch.warmup["n_accepted"] / n_burn)
    out["capacity_ep_n_cubic"] = np.asarray(ch.warmup["n_cubic"] + int(ch.stats["n_cubic"].sum()))
    out["capacity_ep_n_failures"] = np.asarray(target.n_failures)
    # the whole MCMC-PM-EP path of the capacity experiment (test_capacity_split_reproduces_golden)
    Xtr, ytr, Xte, yte = G.toy_split()
    ds, groups = G.pc.classify_split(Xtr, ytr, Xte, yte, cfg=G.CAPACITY_CFG, settings=G.CAPACITY_TINY,
                                     rng=np.random.default_rng(1))
    for v in ("probability", "acceptance_rate", "capacity_accuracy", "capacity_auc", "n_cubic"):
        out[f"capacity_split_{v}"] = ds[v].values
    post = groups["posterior"]
    out["capacity_split_chain_psi"] = np.concatenate([post["psi_mcmc_ep"].values, post["psi_mcmc_pm_ep"].values])
    out["capacity_split_pm_burn_acceptance"] = np.asarray(ds.attrs["mcmc_pm_ep_burn_acceptance"])
    # F&G Fig. 2 grid (LA and EP; the LA half must not change)
    rng = np.random.default_rng(5)
    X, y = G.pm_gpc.simulate_classification(rng, 20, 2, 0.35, 2.08)
    ds = G.pm_gpc.pm_variance_grid(X, y, sigma=2.08, tau_grid=np.array([0.2, 0.5, 1.1]),
                                   approximations=["laplace", "ep"], n_imps=[1, 4], n_reps=5, rng=rng,
                                   nugget=1e-6)
    assert list(ds["approximation"].values) == ["laplace", "ep"]
    out["grid_log_marginal_estimate"] = ds["log_marginal_estimate"].values
    out["grid_approx_log_marginal"] = ds["approx_log_marginal"].values
    out["grid_rng_after"] = rng.standard_normal(3)
    # AMIS set-up on a classification set (finite differences of the EP marginal)
    su = G.amis.setup(G.amis_data("classification"), "rbf", G.AMIS_CFG, G.AMIS_SETTINGS, seed=1)
    out["amis_setup_classification_mode"] = su["mode"].values
    out["amis_setup_classification_cov"] = su["cov"].values
    return out


def main(path):
    with np.load(path) as f:
        old = {k: f[k] for k in f.files}
    with blas_single_thread():
        new = ep_arrays()
    for key in ("grid_log_marginal_estimate", "grid_approx_log_marginal"):
        if not np.array_equal(new[key][0], old[key][0]):
            raise SystemExit(f"{key}: the Laplace half changed -- not an EP-only change")
    for key, value in new.items():
        a, b = np.asarray(old[key]), np.asarray(value)
        if a.shape != b.shape or a.dtype != b.dtype:
            print(f"{key}: shape/dtype {a.shape} {a.dtype} -> {b.shape} {b.dtype}")
        elif np.array_equal(a, b, equal_nan=True):
            print(f"{key}: unchanged")
        else:
            d = np.abs(a.astype(float) - b.astype(float))
            print(f"{key}: max |change| {np.nanmax(d):.3g} ({int(np.sum(d > 0))} of {d.size} entries)"
                  + (f"; old {a.tolist()} new {b.tolist()}" if a.size <= 6 else ""))
        old[key] = b
    np.savez_compressed(path, **old)
    print(f"wrote {len(old)} arrays to {path}")


if __name__ == "__main__":
    main(sys.argv[1])
