#!/usr/bin/env python
"""Gadd et al. eq. 6: spread and bias of the pseudo-marginal estimate log p~(Y | X, psi) at the paper's settings.

Per case (results/gplvm/data/<case>.nc, results/gplvm/ml/<case>.nc, the default-scale type-II ML fit) and
per point psi (psi_ML, then psi_ML + radius * u for seeded random unit directions u on the log scale),
and per setting (the paper's Q = n_imp and vb_max_iter from config.yaml's ``scales.paper``; the
pipeline's default, Q = 200 and 5 iterations, for comparison):

1. q(Z) by Alg. 1 (``optimise_variational``) started from the ML fit's q (``vb_start: ml``) with
   ``vb_max_iter`` L-BFGS-B iterations to the default tolerance (1e-7), then ``latent_posterior``;
   its CPU time (time.process_time) is reported separately ("cpu_q");
2. R = n_estimates independent estimates of eq. 6 with Q draws each from that q (q is a deterministic
   function of psi given the fixed start, so every estimate at a point uses the same q, as a chain
   at that psi would): per estimate ``sample_latent`` + ``importance_log_weights`` + log-mean-exp,
   whose CPU time is "cpu_est".

Reported per point: sd and median of the R estimates of log p~, the pooled estimate log mean of all
R*Q weights (the best available value of log p(Y | X, psi) at that q), gap = pooled - median, the
effective variance 2 * gap (if log p~ were normal with variance s^2, unbiasedness puts its median
s^2/2 below log p), the weight ESS (sum w)^2 / sum w^2 of the R*Q pooled weights and of the Q weights
of one estimate (averaged over the R estimates).  One BLAS thread; all draws seeded.

usage:
  OPENBLAS_NUM_THREADS=1 nice -n 19 python benchmarks/bench_gplvm_pm_estimator.py \
      --cases 1 2 3 --n-points 3 --n-estimates 100 --out benchmarks/results/gplvm_pm_estimator.txt
"""
import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
import yaml  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from gpbayes.gplvm import pseudo_marginal as pm  # noqa: E402
from gpbayes.gplvm.vb import latent_posterior, optimise_variational  # noqa: E402
from gpbayes_repro.experiments import gplvm  # noqa: E402

SEED = 20261129


def ess(log_w) -> float:
    """(sum w)^2 / sum w^2 of the weights exp(log_w)."""
    log_w = np.asarray(log_w, dtype=float).ravel()
    return float(math.exp(2.0 * logsumexp(log_w) - logsumexp(2.0 * log_w)))


def measure(model, psi, ref, Q, vb_max_iter, R, rng):
    """Alg. 1 from ``ref`` then R estimates of eq. 6 with Q draws: one row of the table."""
    t0 = time.process_time()
    vb = optimise_variational(model, psi, ref, max_iter=int(vb_max_iter))
    q = latent_posterior(model, psi, vb.params)
    cpu_q = time.process_time() - t0
    log_w = np.empty((R, Q))
    t0 = time.process_time()
    for r in range(R):
        Z = pm.sample_latent(rng, q, Q)
        log_w[r] = pm.importance_log_weights(model, psi, q, Z)
        _ = logsumexp(log_w[r]) - math.log(Q)
    cpu_est = (time.process_time() - t0) / R
    est = logsumexp(log_w, axis=1) - math.log(Q)
    pooled = float(logsumexp(log_w) - math.log(R * Q))
    med = float(np.median(est))
    return {
        "Q": Q, "vb_iter": int(vb_max_iter), "nit": vb.n_iterations, "bound": vb.bound,
        "sd": float(np.std(est, ddof=1)), "median": med, "pooled": pooled, "gap": pooled - med,
        "eff_var": 2.0 * (pooled - med), "ess_pool": ess(log_w),
        "ess_per_Q": float(np.mean([ess(lw) for lw in log_w])),
        "cpu_est": cpu_est, "cpu_q": cpu_q,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", default=["1", "2", "3"], help="case numbers or names")
    ap.add_argument("--n-points", type=int, default=3, help="psi_ML plus n_points - 1 random points")
    ap.add_argument("--n-estimates", type=int, default=100, help="R independent estimates per point")
    ap.add_argument("--Q", type=int, default=None, help="draws per estimate (default: the paper scale's n_imp)")
    ap.add_argument("--vb-max-iter", type=int, default=None,
                    help="Alg. 1 iterations (default: the paper scale's vb_max_iter)")
    ap.add_argument("--radius", type=float, default=0.2, help="distance of the random points from psi_ML (log scale)")
    ap.add_argument("--default-Q", type=int, default=200, help="Q of the comparison (pipeline default) setting")
    ap.add_argument("--default-vb-max-iter", type=int, default=5)
    ap.add_argument("--no-default", action="store_true", help="skip the default-setting comparison")
    ap.add_argument("--results", default=str(REPO / "results" / "gplvm"), help="directory with data/ and ml/")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "gplvm_pm_estimator.txt"))
    args = ap.parse_args(argv)

    cfg = yaml.safe_load(open(REPO / "config" / "config.yaml"))["gplvm"]
    settings = cfg["scales"]["paper"]
    Q = int(args.Q if args.Q is not None else settings["n_imp"])
    vb_iter = int(args.vb_max_iter if args.vb_max_iter is not None else settings["vb_max_iter"])
    setups = [("paper", Q, vb_iter)]
    if not args.no_default:
        setups.append(("default", int(args.default_Q), int(args.default_vb_max_iter)))
    cases = [c if c.startswith("case") else f"case{c}" for c in args.cases]
    R = int(args.n_estimates)

    lscpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    header = [
        "# Gadd et al. eq. 6: spread of the pseudo-marginal estimate log p~(Y | X, psi)",
        "# command: " + " ".join(["python"] + [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
        f"# date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S} UTC",
        f"# git HEAD at start: {subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}",
        "# " + " ".join(lscpu.split()) + f"; {os.cpu_count()} cores",
        "# uptime at start: " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        f"# OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} (+ threadpoolctl limit 1); seed {SEED}",
        f"# data/ML fits: {args.results}/{{data,ml}}/<case>.nc (default-scale type-II ML); model: paper scale "
        f"(n_inducing {settings['n_inducing']}, latent_dim {cfg['latent_dim']})",
        f"# points: psi_ML (point 0) and psi_ML + {args.radius} u, u a seeded random unit direction (log scale)",
        f"# settings: " + "; ".join(f"{n}: Q = {q}, vb_max_iter = {m} (tol 1e-7), start = ML fit's q" for n, q, m in setups),
        f"# R = {R} independent estimates per point and setting (one q per point: Alg. 1 is deterministic given psi)",
        "# columns: sd = sd of R log p~; median; pooled = log mean of all R*Q weights; gap = pooled - median;",
        "#   effvar = 2 gap; ESSpool = (sum w)^2/sum w^2 over R*Q weights; ESS/Q = the same per estimate, mean over R;",
        "#   cpu_est = CPU-s per estimate (draws + weights, q given); cpu_q = CPU-s of Alg. 1 + latent_posterior;",
        "#   nit = L-BFGS-B iterations used; bound = Alg. 1's final bound",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cols = ["case", "point", "setting", "Q", "nit", "bound", "sd", "median", "pooled", "gap", "effvar",
            "ESSpool", "ESS/Q", "cpu_est", "cpu_q"]
    fmt = "{:<6} {:>5} {:<8} {:>4} {:>4} {:>9.2f} {:>6.2f} {:>9.2f} {:>9.2f} {:>6.2f} {:>6.2f} {:>8.1f} {:>6.2f} {:>8.4f} {:>7.2f}"
    lines = header + [" ".join(f"{c:>{w}}" if i > 2 else f"{c:<{w}}" for i, (c, w) in
                                enumerate(zip(cols, [6, 5, 8, 4, 4, 9, 6, 9, 9, 6, 6, 8, 6, 8, 7])))]

    def flush(extra=()):
        out.write_text("\n".join(lines + list(extra)) + "\n")

    flush()
    print("\n".join(lines), flush=True)
    rows = []
    with threadpool_limits(limits=1):
        for ci, case in enumerate(cases):
            ds = xr.load_dataset(Path(args.results) / "data" / f"{case}.nc")
            ml = xr.load_dataset(Path(args.results) / "ml" / f"{case}.nc")
            model = gplvm.build_model(ds, cfg, settings)
            ref, psi_ml = gplvm.ml_params(ml), ml["psi"].values
            dir_rng = np.random.default_rng([SEED, ci, 0])
            t_case = time.process_time()
            for k in range(int(args.n_points)):
                u = dir_rng.standard_normal(psi_ml.size)
                psi = psi_ml + (0.0 if k == 0 else float(args.radius)) * u / np.linalg.norm(u)
                for si, (name, q_n, m) in enumerate(setups):
                    rng = np.random.default_rng([SEED, ci, k + 1, si])
                    row = measure(model, psi, ref, q_n, m, R, rng)
                    row.update(case=case, point=k, setting=name)
                    rows.append(row)
                    lines.append(fmt.format(case, k, name, row["Q"], row["nit"], row["bound"], row["sd"],
                                            row["median"], row["pooled"], row["gap"], row["eff_var"],
                                            row["ess_pool"], row["ess_per_Q"], row["cpu_est"], row["cpu_q"]))
                    print(lines[-1], flush=True)
                    flush()
            lines.append(f"# {case}: {time.process_time() - t_case:.1f} CPU-s in all")
            print(lines[-1], flush=True)
            flush()
    lines.append("# uptime at end: " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())

    # cost of a paper-settings PM run: 4 chains x 1000 iterations x 2 Gibbs blocks, each one q + one estimate
    summary = ["", "# per case, paper setting: sd mean over points, effvar and ESSpool range over points, cpu mean"]
    for case in cases:
        p = [r for r in rows if r["case"] == case and r["setting"] == "paper"]
        if not p:
            continue
        # the chain's proposals lie away from psi_ML, where Alg. 1 stops after one iteration: cost from points > 0
        away = [r for r in p if r["point"] > 0] or p
        per_block = np.mean([r["cpu_est"] + r["cpu_q"] for r in away])
        hours = 4 * 1000 * 2 * per_block / 3600
        summary.append(
            f"# {case}: sd {np.mean([r['sd'] for r in p]):.2f}, effvar {min(r['eff_var'] for r in p):.2f}-"
            f"{max(r['eff_var'] for r in p):.2f}, ESSpool {min(r['ess_pool'] for r in p):.1f}-"
            f"{max(r['ess_pool'] for r in p):.1f}, cpu_est {np.mean([r['cpu_est'] for r in p]):.3f} s, "
            f"cpu_q {np.mean([r['cpu_q'] for r in away]):.2f} s (points > 0); 4 x 1000 iterations x 2 blocks x "
            f"(q + estimate) = {hours:.2f} CPU-h (Alg. 3's latent moves not counted)")
    lines.extend(summary)
    flush()
    print("\n".join(summary))


if __name__ == "__main__":
    main()
