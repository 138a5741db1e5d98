"""Which method converges fastest, per model and number of hyperparameters: the evidence behind
``gb.sample(model)``'s default choice (issue 24 §4; ``gpbayes.defaults``).

For small synthetic problems (probit classification, Poisson counts, regression), each candidate runs 4 chains x (``--warmup`` + ``--draws``), one
after the other in this process, one BLAS thread, from the same seed; the table gives min bulk ESS
over the hyperparameters (ArviZ, rank-normalised; for the importance-corrected ``nuts-is`` the weighted estimator's,
``gpbayes.diagnostics.importance_corrected_summary``), max split R-hat, CPU seconds of ``gb.sample``
(``time.process_time``: warm-up included) and min bulk ESS per CPU-second.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_default_method.py

No timing here is a test; the machine and its load are printed with the numbers.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _common import machine




def problems(n: int):
    import gpbayes as gb

    rng = np.random.default_rng(11)
    out = []
    for d, ard in ((2, False), (4, True), (8, True)):
        X = rng.normal(size=(n, d))
        f = np.sin(1.5 * X[:, 0]) + 0.7 * X[:, 1]
        clf = gb.GPClassifier(X, f + 0.3 * rng.normal(size=n) > 0, ard=ard)
        out.append((f"GPClassifier n={n} d={d} {'ARD' if ard else 'iso'}", clf,
                    [("pseudo-marginal", {"n_imp": 64}), ("surr", {}), ("slice-surr-site", {}), ("nuts-is", {}),
                     ("nuts-whitened", {})]))
    # a Poisson (log-Gaussian Cox) problem: counts in 100 bins of a smooth intensity, isotropic and ARD
    for d, ard in ((1, False), (4, True)):
        X = rng.uniform(-2, 2, size=(n, d))
        counts = rng.poisson(np.exp(0.8 * np.sin(2 * X[:, 0]) + 0.5))
        out.append((f"PoissonGP n={n} d={d} {'ARD' if ard else 'iso'}", gb.PoissonGP(X, counts, ard=ard),
                    [("pseudo-marginal", {"n_imp": 64}), ("slice-surr-site", {}), ("nuts-is", {}), ("nuts-whitened", {})]))
    X = rng.normal(size=(n, 4))
    reg = gb.GPRegressor(X, np.sin(1.5 * X[:, 0]) + 0.7 * X[:, 1] + 0.2 * rng.normal(size=n), ard=False)
    out.append((f"GPRegressor n={n} d=4 iso", reg, [("nuts", {}), ("rwmh", {}), ("slice", {})]))
    reg_ard = gb.GPRegressor(X, np.sin(1.5 * X[:, 0]) + 0.7 * X[:, 1] + 0.2 * rng.normal(size=n))
    out.append((f"GPRegressor n={n} d=4 ARD", reg_ard, [("nuts", {}), ("rwmh", {}), ("slice", {})]))
    X1 = rng.uniform(-2, 2, size=(30, 1))
    small = gb.GPRegressor(X1, np.sin(2 * X1[:, 0]) + 0.1 * rng.normal(size=30))
    out.append(("GPRegressor n=30 d=1", small, [("nuts", {}), ("rwmh", {}), ("slice", {})]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--only", default=None, help="run only problems whose label contains this")
    ap.add_argument("--methods", nargs="+", default=None, help="run only these candidates")
    ap.add_argument("--until-converged", type=int, default=0, metavar="BUDGET",
                    help="instead of a fixed length: run each candidate until converged (split R-hat < 1.01, "
                         "bulk ESS > 400 on every hyperparameter, checked every 100 draws) within BUDGET draws "
                         "per chain; report the draws per chain at the stop and the CPU seconds to get there")
    args = ap.parse_args(argv)

    import arviz as az

    import gpbayes as gb

    print(machine())
    print(f"4 chains x ({args.warmup} + {args.draws}), sequential (cores=1), seed 1")
    print(f"{'problem':<32s} {'p':>3s} {'method':<16s} {'min bulk ESS':>12s} {'max R-hat':>9s} {'CPU s':>8s} "
          f"{'ESS/CPU-s':>9s}  load")
    for label, model, candidates in problems(args.n):
        if args.only and args.only not in label:
            continue
        p = len(model.hyperparameter_labels)  # coordinates of psi
        for method, kw in candidates:
            if args.methods and method not in args.methods:
                continue
            c0 = time.process_time()
            if args.until_converged:
                idata = gb.sample(model, method, chains=4, n_warmup=args.warmup, seed=1, cores=1, progress=False,
                                  until_converged=True, budget=args.until_converged, **kw)
            else:
                idata = gb.sample(model, method, chains=4, draws=args.draws, n_warmup=args.warmup, seed=1, cores=1,
                                  progress=False, **kw)
            cpu = time.process_time() - c0
            unc = idata.unconstrained_posterior
            if "log_weight" in idata.sample_stats:  # importance-corrected draws: the weighted estimator's ESS
                from gpbayes.diagnostics import importance_corrected_summary

                s = importance_corrected_summary(gb.api.psi_draws(idata).values,
                                                 idata.sample_stats["log_weight"].values)
                ess, rhat = float(s["ess_bulk"].min()), float(s["rhat"].max())
            else:
                ess = float(min(az.ess(unc, method="bulk")[v].min() for v in unc.data_vars))
                rhat = float(max(az.rhat(unc)[v].max() for v in unc.data_vars))
            stop = (f"  {idata.sample_stats.attrs['stopped']} after {idata.posterior.sizes['draw']} draws"
                    if args.until_converged else "")
            print(f"{label:<32s} {p:3d} {method:<16s} {ess:12.0f} {rhat:9.3f} {cpu:8.1f} {ess / cpu:9.2f}  "
                  f"{os.getloadavg()[0]:.2f}{stop}", flush=True)


if __name__ == "__main__":
    main()
