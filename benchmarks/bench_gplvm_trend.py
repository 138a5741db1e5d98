#!/usr/bin/env python
"""Gadd et al. chains: convergence trend with length, and Alg. 1 to a local maximum vs 5 iterations.

Issue 26 s.5.  Runs chains of one case exactly as the pipeline's
``gplvm_chains`` / ``gplvm_chains_cpm`` rules do (``experiments.gplvm.run_chain``,
same seed, starts and generator streams), with the length, Q, rho and the q(Z)
optimisation given on the command line, saves each chain and prints split rank
R-hat / bulk ESS (``claims.convergence`` on the log-hyperparameters) at prefixes
of the kept draws with ``draws_to_pass_gate``'s extrapolation.

usage:
  bench_gplvm_trend.py run TAG DATA.nc ML.nc RHO N_IMP N_BURN N_DRAWS ADAPT_START VB_TOL|- VB_MAX_ITER CHAIN...
  bench_gplvm_trend.py summary TAG[,TAG] CASE[,CASE]

DATA.nc / ML.nc: a default run's results/gplvm/data/<case>.nc and ml/<case>.nc.
Chains are pickled to $OUT (default /tmp/gplvm_trend).  The numbers quoted in
experiments/gplvm.py ("Longer, measured") and config.yaml came from:
  run cpmlong case3.nc ml_case3.nc 0.99 50 250 3000 200 - 5 0 1 2 3
  run short5 case3.nc ml_case3.nc 0 200 100 200 80 - 5 0 1
  run alg1   case3.nc ml_case3.nc 0 200 100 200 80 1e-6 500 0 1
  run cpmmid case1.nc ml_case1.nc 0.99 50 250 1500 200 - 5 0 1 2 3
  run short5b / alg1b case1 ... 0 200 50 100 40 (- 5 | 1e-6 500) 0 1
"""
import glob
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import xarray as xr
import yaml

from gpbayes_repro import claims
from gpbayes_repro.experiments import gplvm

REPO = Path(__file__).resolve().parents[1]
OUT = Path(os.environ.get("OUT", "/tmp/gplvm_trend"))


def run(tag, data, ml, rho, n_imp, n_burn, n_draws, adapt_start, vb_tol, vb_max, *chains):
    cfg = yaml.safe_load(open(REPO / "config" / "config.yaml"))
    G = cfg["gplvm"]
    S = dict(G["scales"]["default"], n_imp=int(n_imp), n_burn=int(n_burn), n_draws=int(n_draws),
             adapt_start=int(adapt_start), vb_max_iter=int(vb_max))
    if vb_tol != "-":
        S["vb_tol"] = float(vb_tol)
    chain_cfg = {k: G[k] for k in ("latent_dim", "latent_jitter", "priors", "ml", "blocks", "warm_start", "vb_start",
                                   "adapt_epsilon", "initial_proposal_sd", "start_noise_sd")}
    ds, mlds = xr.load_dataset(data), xr.load_dataset(ml)
    OUT.mkdir(parents=True, exist_ok=True)
    for c in map(int, chains):
        t0 = time.process_time()
        r = gplvm.run_chain(ds, mlds, c, chain_cfg, S, int(cfg["seed"]), float(rho))
        r["cpu"] = time.process_time() - t0
        with open(OUT / f"{tag}_{ds.attrs['case']}_c{c}.pkl", "wb") as fh:
            pickle.dump({k: v for k, v in r.items() if k != "Z"}, fh)
        print(tag, ds.attrs["case"], c, f"cpu {r['cpu']:.1f} s", "acceptance", r["accepted"].mean(axis=0), flush=True)


def summary(tags, cases):
    for tag in tags.split(","):
        for case in cases.split(","):
            rs = [pickle.load(open(f, "rb")) for f in sorted(glob.glob(str(OUT / f"{tag}_{case}_c*.pkl")))]
            if not rs:
                continue
            n = min(r["psi"].shape[0] for r in rs)
            d = np.stack([r["psi"][:n] for r in rs])
            acc = np.mean([r["accepted"].mean(axis=0) for r in rs], axis=0)
            print(f"{tag} {case}: {len(rs)} chains x {n} kept, CPU-s per chain {np.mean([r['cpu'] for r in rs]):.1f}, "
                  f"acceptance per block {np.round(acc, 3)}, "
                  f"bound evaluations per iteration {np.mean([np.mean(r['n_bound_evals']) for r in rs]):.1f}")
            if len(rs) < 2:
                continue
            ns, rh, es = [], [], []
            for k in sorted({n // 4, n // 2, n} | ({750, 1500} if n >= 1500 else set())):
                conv = claims.convergence(d[:, :k])
                ns.append(k), rh.append(conv["max_rank_rhat"]), es.append(conv["min_bulk_ess"])
                print(f"  {k:6d} kept: split R-hat {conv['max_rank_rhat']:.3f}, bulk ESS {conv['min_bulk_ess']:.1f}")
            print("  extrapolation (last two prefixes):", gplvm.draws_to_pass_gate(ns, rh, es))


if __name__ == "__main__":
    {"run": run, "summary": summary}[sys.argv[1]](*sys.argv[2:])
