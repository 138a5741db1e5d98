"""Murray & Adams Ionosphere at the paper's n and chain length, a few methods.

Why this exists: at default scale (n = 100, 150 + 450 iterations, 3 chains)
Figure 3's claim 1 fails (surr-site does not beat prior-white on Ionosphere).
This script checks whether that is an artefact of the reduced scale by running
the paper's n = 200 and 1000 burn-in iterations, with fewer chains and samples
than the paper (the paper: 10 chains x 5000), through exactly the code the
workflow uses (gpbayes_repro.experiments.slice_ma.run_block, config/config.yaml's
slice_ma model settings).

    OMP_NUM_THREADS=1 python benchmarks/bench_slice_ionosphere.py \
        [--n 200] [--burn 1000] [--draws 2000] [--chains 2] \
        [--methods prior-white,surr-site]

Needs data/processed/ionosphere.nc (`snakemake data/processed/ionosphere.nc`).
Prints, per method and chain, the ESS of the complete-data log-likelihood, the
ESS of log sigma_f, and ESS per covariance construction; writes
benchmarks/results/bench_slice_ionosphere.csv.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpbayes_repro.experiments import slice_ma

from _common import REPO, ionosphere_problem, write_csv
from gpbayes_repro.threads import blas_single_thread



def conditional_widths(ds, cfg, args, n_states: int = 10, n_grid: int = 161) -> None:
    """SD of log sigma_f under each representation's conditional, at posterior states.

    States (theta, f) are taken every 50 iterations from a prior-white chain
    after its burn-in; at each, the auxiliaries are drawn as in
    hyper_slice.hyper_step (g ~ N(f, S) for surr-) and the conditional of
    log sigma_f with every other coordinate fixed is normalised on a grid.
    Narrower conditionals mean smaller moves per sweep.
    """
    from gpbayes import rng as rngmod
    from gpbayes.mcmc import hyper_slice as hs

    model = slice_ma.build_model(ds, cfg)
    amp = model.param_names.index("sigma_f")
    theta0, f0 = slice_ma.initial_point(model, rngmod.stream(args.seed, "cond", "init"))
    gen = rngmod.stream(args.seed, "cond", "chain")
    amps = []
    n_burn = max(args.burn, 200)
    widths_slice = hs.prior_widths(model.prior)
    state = hs.init(model, theta0, f0, "prior-white")
    states = []
    for i in range(n_burn + 50 * n_states):
        state, _ = hs.step(gen, state, model, "prior-white", widths_slice,
                           n_latent_updates=int(cfg["n_latent_updates"]))
        if i >= n_burn and (i - n_burn) % 50 == 49:
            states.append((state.psi.copy(), state.f.copy()))
        if i >= n_burn:
            amps.append(state.psi[amp])
    grid = np.linspace(np.log(0.1), np.log(10.0), n_grid)
    widths = {m: [] for m in ("fixed", "prior-white", "surr-site", "post-site")}
    for theta, f in states:
        for method in widths:
            state = hs.init(model, theta, f, method)
            fn = hs.log_conditional(model, method, hs.auxiliaries(gen, state, method))
            vals = []
            for x in grid:
                t = theta.copy()
                t[amp] = x
                vals.append(fn(t).log_density)
            lv = np.array(vals)
            w = np.exp(lv - lv.max())
            w /= w.sum()
            mean = float(w @ grid)
            widths[method].append(float(np.sqrt(w @ (grid - mean) ** 2)))
    print("SD of log sigma_f's conditional (median over states; marginal posterior SD from the chain: "
          f"{np.std(amps):.3f}):")
    for method, v in widths.items():
        print(f"  {method:12s} {np.median(v):.3f}  (range {min(v):.3f}-{max(v):.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--burn", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--methods", default="prior-white,surr-site")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--conditional", action="store_true",
                    help="also measure the width of log sigma_f's conditional in each representation")
    args = ap.parse_args()
    cfg, settings, ds = ionosphere_problem(args.n, args.burn, args.draws, args.chains, args.seed)
    rows = []
    with blas_single_thread():
        for method in args.methods.split(","):
            t0 = time.perf_counter()
            groups = slice_ma.run_block(ds, method=method, block=0, cfg=cfg, settings=settings, seed=args.seed)
            eff = slice_ma.chain_efficiency(groups)
            for c in range(eff.sizes["chain"]):
                rows.append({"method": method, "chain": c, "n": args.n, "n_burn": args.burn, "n_draws": args.draws,
                             "ess": float(eff["ess"][c]), "ess_log_sigma_f": float(eff["ess_log_sigma_f"][c]),
                             "ess_psi_min": float(eff["ess_psi_min"][c]),
                             "per_covariance": float(eff["per_covariance"][c]),
                             "per_likelihood": float(eff["per_likelihood"][c])})
            print(f"{method:12s} ESS {np.round(eff['ess'].values, 1)}  ESS(log sigma_f) "
                  f"{np.round(eff['ess_log_sigma_f'].values, 1)}  ESS/covariance "
                  f"{float(eff['per_covariance'].mean()):.2e}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    if args.conditional:
        conditional_widths(ds, cfg, args)
    write_csv(rows, REPO / "benchmarks" / "results" / "bench_slice_ionosphere.csv")


if __name__ == "__main__":
    main()
