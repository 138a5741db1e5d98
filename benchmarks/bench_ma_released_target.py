"""Murray & Adams surr-site on Ionosphere: the paper's target (eq. 11) vs the target of the released code.

Why this exists (issue: why surr-site does not lead on Ionosphere).  Murray's
released ``update_theta_aux_surr.m`` (2009-2010) evaluates log N(g; f, S) as

    Lg_f = -0.5*sum((pp.gg - pp.ff).^2)./pp.aux_var - sum(log(pp.aux_var.*ones(size(pp.ff))));

i.e. with -sum(log S_ii) where the Gaussian has -1/2 sum(log S_ii): log|S| is
counted twice.  (Bratieres' 2014 Python port first copied the line and later
changed it to ``- 0.5 * np.sum(np.log(...))``.)  With S = S(theta) from the
site fits of eq. 12, the released code therefore samples

    p(theta, f | y) * prod_i S_ii(theta)^(-1/2)

instead of p(theta, f | y).  The library samples that target with
``hyper_slice.run_chain(..., target="released-code")`` (a diagnostic option,
never a default; ``representations.released_code_log_tilt``).  This script
runs, through the library's M&A sampler and the workflow's Ionosphere model
(``gpbayes_repro.experiments.slice_ma``):

* ``prior-white`` and ``surr-site`` on the correct target, and
* ``surr-site`` on the released code's target (``surr-site/released``),

and prints the posterior mean and s.d. of sigma_f and of log sigma_f, and the
ESS of the complete-data log-likelihood per covariance construction (the
paper's Fig. 3 middle panel unit).

    OMP_NUM_THREADS=1 python benchmarks/bench_ma_released_target.py [--n 200] [--burn 300] [--draws 1000] [--chains 2]

Needs data/processed/ionosphere.nc (``snakemake data/processed/ionosphere.nc``);
writes benchmarks/results/bench_ma_released_target.csv.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpbayes import diagnostics
from gpbayes import rng as rngmod
from gpbayes_repro.threads import blas_single_thread
from gpbayes.mcmc import hyper_slice as hs
from gpbayes_repro.experiments import slice_ma

from _common import REPO, ionosphere_problem, write_csv



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--burn", type=int, default=300)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    cfg, settings, ds = ionosphere_problem(args.n, args.burn, args.draws, args.chains, args.seed)
    model = slice_ma.build_model(ds, cfg)
    widths = hs.prior_widths(model.prior)
    amp = model.param_names.index("sigma_f")
    rows = []
    with blas_single_thread():
        for label, method, target in (("prior-white", "prior-white", "posterior"),
                                      ("surr-site", "surr-site", "posterior"),
                                      ("surr-site/released", "surr-site", "released-code")):
            t0 = time.perf_counter()
            for c in range(args.chains):
                psi0, f0 = slice_ma.initial_point(model, rngmod.stream(args.seed, "slice_ma", "ionosphere", "init", c))
                gen = rngmod.stream(args.seed, "released-target", label, c)
                ch = hs.run_chain(gen, model, psi0, f0, method, n_burn=args.burn, n_draws=args.draws, widths=widths,
                                  n_latent_updates=int(cfg["n_latent_updates"]), target=target)
                log_sf = ch.draws[:, amp]
                ess = diagnostics.ess_coda(ch.stats["lp"][None, :])
                rows.append({"target": label, "chain": c, "n": args.n, "n_burn": args.burn, "n_draws": args.draws,
                             "mean_sigma_f": float(np.mean(np.exp(log_sf))), "sd_sigma_f": float(np.std(np.exp(log_sf))),
                             "mean_log_sigma_f": float(np.mean(log_sf)), "sd_log_sigma_f": float(np.std(log_sf)),
                             "ess_complete_ll": float(ess),
                             "ess_per_covariance": float(ess / np.sum(ch.stats["n_covariance"]))})
                r = rows[-1]
                print(f"{label:20s} chain {c}: sigma_f {r['mean_sigma_f']:.2f} +- {r['sd_sigma_f']:.2f}  "
                      f"log sigma_f {r['mean_log_sigma_f']:.2f} +- {r['sd_log_sigma_f']:.2f}  "
                      f"ESS/cov {r['ess_per_covariance']:.2e}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    write_csv(rows, REPO / "benchmarks" / "results" / "bench_ma_released_target.csv")


if __name__ == "__main__":
    main()
