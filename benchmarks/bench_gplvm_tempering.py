"""Replica exchange for the supervised GPLVM's exact joint sampler (issue 40, Gadd et al.): does it join the
separated modes of Case 2 and speed up sigma and theta on Cases 1 and 3?

For one case of a finished run (its simulated data, ML fit and ML restarts), ``--chains`` chains of
``gpbayes.gplvm.joint.tempered_chain_spec`` start where the reproduction's joint chains start (chain c at
the ML restart of rank c by bound, plus N(0, 0.1^2) on the log scale) and run ``--warmup`` + ``--draws`` sweeps at the
inverse temperatures ``--betas`` (``--betas 1`` is the plain Gibbs sampler).  The report gives, per chain,
the means of the label-invariant quantities and of log p(Y | Z, psi), the swap acceptance per pair and the
CPU seconds; across chains the rank-normalised R-hat and bulk ESS (ArviZ) of each quantity.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_gplvm_tempering.py RUN_DIR case2 --betas 1 0.6 0.35 0.2
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd
import xarray as xr

from gpbayes.gplvm import joint, latent_posterior
from gpbayes.gplvm import pseudo_marginal as pm
from gpbayes.mcmc import runner
from gpbayes_repro import config as configmod
from gpbayes_repro.experiments import gplvm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_name  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("case")
    ap.add_argument("--betas", type=float, nargs="+", default=[1.0])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--chain-ids", type=int, nargs="*", default=None, help="which chains (restart ranks) to run")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--thin", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n-ess", type=int, default=1, help="elliptical slice updates of Z per sweep")
    ap.add_argument("--no-adapt-ladder", action="store_true")
    ap.add_argument("--out", default=None, help="write the per-draw invariants (npz)")
    a = ap.parse_args(argv)
    cfg = configmod.load_config(os.path.join(os.path.dirname(__file__), "..", "config", "config.yaml"))
    gcfg = cfg["gplvm"]
    settings = gcfg["scales"]["default"]  # n_inducing only (the same at every scale)
    ds = xr.load_dataset(os.path.join(a.run, "results", "gplvm", "data", f"{a.case}.nc"))
    ml = xr.load_dataset(os.path.join(a.run, "results", "gplvm", "ml", f"{a.case}.nc"))
    restarts = pd.read_csv(os.path.join(a.run, "results", "gplvm", "ml_restarts.csv"))
    restarts = restarts[restarts["case"] == a.case]
    lib = gplvm.library_model(ds, ml, gcfg, settings)
    model = lib.gplvm
    table = gplvm.restart_starts(restarts, model)
    ids = a.chain_ids if a.chain_ids is not None else list(range(a.chains))
    print(f"# {a.case}: betas {a.betas}, chains {ids}, {a.warmup} + {a.draws} sweeps (thin {a.thin}), n_ess {a.n_ess}; "
          f"CPU {cpu_name()}; load {os.getloadavg()[0]:.2f}", flush=True)
    inv_all, lls = [], []
    for c in ids:
        rng = np.random.default_rng([a.seed, c])
        psi0 = table[c % len(table)] + 0.1 * rng.standard_normal(model.n_params)
        Z0 = latent_posterior(model, psi0, lib.ml_fit.params).mean
        spec = joint.tempered_chain_spec(model, lib.prior, psi0, Z0, a.betas, n_warmup=a.warmup, n_ess=a.n_ess,
                                         adapt_ladder=not a.no_adapt_ladder)
        t0 = time.process_time()
        ch = runner.run_spec(rng, spec, n_draws=a.draws, thin=a.thin)
        cpu = time.process_time() - t0
        inv = joint.label_invariant(model, ch.draws)
        ll = np.array([pm.log_likelihood(model, p, Z) for p, Z in zip(ch.draws, ch.extra["Z"])])
        inv_all.append(inv)
        lls.append(ll)
        sw = np.nanmean(np.stack(ch.extra["swap_accepted"]), axis=0) if len(a.betas) > 1 else []
        print(f"chain {c}: start rank {c % len(table)}; " + " ".join(f"{k} {v.mean():.2f}" for k, v in inv.items())
              + f" loglik {ll.mean():.1f} [{ll.min():.1f}, {ll.max():.1f}]; swaps " + " ".join(f"{s:.2f}" for s in sw)
              + f"; psi accept {np.mean(ch.stats['acceptance_rate']):.2f}; CPU {cpu:.0f} s"
              + (f"; ladder {np.round(ch.params['inverse_temperatures'], 3).tolist()}" if len(a.betas) > 2 else ""),
              flush=True)
    if len(ids) > 1:
        import arviz as az

        names = list(inv_all[0]) + ["log_likelihood"]
        arrs = {n: np.stack([i[n] for i in inv_all]) for n in names[:-1]}
        arrs["log_likelihood"] = np.stack(lls)
        for n, x in arrs.items():
            print(f"  {n:>14s}: R-hat {float(az.rhat(x)):.3f}  bulk ESS {float(az.ess(x)):.1f}  "
                  f"mean {x.mean():.3f} sd {x.std():.3f}")
        if a.out:
            np.savez(a.out, **arrs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
