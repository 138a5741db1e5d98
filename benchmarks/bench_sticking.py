"""Pseudo-marginal sticking on a 13-feature ARD classifier: correlated moves and a noise-aware N_imp (issue 24 §3).

The issue's user ran PM-MH (Laplace, N_imp 64) on a 13-feature ARD binary problem with about 100
training rows and saw the acceptance fall with length (0.10 at 1,000 draws, 0.059 at 10,000) and
long flat stretches: the chain sticks on an over-estimated p~.  Here the same kind of problem, the
same chain, and the two remedies:

* correlated pseudo-marginal moves, ``gb.PseudoMarginal(rho=...)`` (Deligiannidis, Doucet & Pitt
  2018), and
* the noise-aware N_imp, ``gb.PseudoMarginal(n_imp="auto")`` (``estimators.importance.choose_n_imp``;
  Doucet, Pitt, Deligiannidis & Kohn 2015),

Problem: Boston Housing's 13 covariates (``data/raw/Boston.csv``, standardised over the subset),
y = 1 where medv is above its median over all 506 rows, on a seeded 100-row subset
(``numpy.random.default_rng(0)``, rows drawn without replacement): 13 continuous features like the
user's, about 100 rows, classes near balanced by construction; ARD SE kernel (13 lengthscales and
the amplitude: 14 hyperparameters), probit, the library's default priors.  Data in the repository,
no download.

Per variant, 4 chains of ``--draws`` kept draws after ``--warmup`` adaptive iterations (F&G Sec.
4.4), seed 1, sequential, one BLAS thread: acceptance over the first 1,000 draws and over all,
the longest run of consecutive rejections (max and median over chains), min bulk ESS and max
rank-normalised split R-hat over the 14 log-hyperparameters (ArviZ), CPU seconds of ``gb.sample``
(``time.process_time``), min bulk ESS per CPU-second, and the chosen N_imp and sd of log p~ at the
approximate posterior's mode (for fixed N_imp: measured here at the Laplace-marginal mode, 32
estimates; for "auto": what each chain measured, min-max over chains).  And where the chains stuck:
at the position of the longest rejection run, the sd of the noisy log posterior over 32 fresh
estimates and how far above their mean the stored estimate was (in those sds).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_sticking.py \\
        --out benchmarks/results/bench_sticking.txt

No timing here is a test; the machine and its load average (start and end) are printed.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import _common

VARIANTS = [  # (label, n_imp, rho)
    ("N_imp 64, rho 0 (the user's)", 64, 0.0),
    ("N_imp 64, rho 0.9", 64, 0.9),
    ("N_imp 64, rho 0.99", 64, 0.99),
    ("N_imp auto, rho 0", "auto", 0.0),
    ("N_imp auto, rho 0.99", "auto", 0.99),
    ("N_imp 256, rho 0", 256, 0.0),
]


def problem(n_rows: int = 100, seed: int = 0):
    """(X, y): Boston's 13 covariates standardised over the subset, y = medv > median(medv of all rows)."""
    X, medv = _common.boston()
    y = medv > np.median(medv)
    idx = np.sort(np.random.default_rng(seed).choice(len(y), n_rows, replace=False))
    X, y = X[idx], y[idx]
    return (X - X.mean(0)) / X.std(0), y


def longest_rejection_runs(accepted: np.ndarray) -> np.ndarray:
    """Per chain (rows), the longest run of consecutive rejected proposals."""
    out = []
    for row in np.asarray(accepted, dtype=bool):
        best = cur = 0
        for a in row:
            cur = 0 if a else cur + 1
            best = max(best, cur)
        out.append(best)
    return np.array(out)


def sd_at_mode(model, n_imp: int, seed: int = 11) -> tuple[float, np.ndarray]:
    """sd of log p~ (32 estimates of ``n_imp`` draws) at the mode of the Laplace approximate posterior."""
    from scipy import optimize

    from gpbayes.estimators.importance import PseudoMarginalTarget, log_estimate_sd

    target = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior, n_imp=n_imp)
    det = target.deterministic_log_density(reject_failures=True)
    x0 = model.kernel.initial_psi(model.X)
    res = optimize.minimize(lambda x: -det(x) if np.isfinite(det(x)) else 1e300, x0, method="L-BFGS-B",
                            options={"maxiter": 200})
    sd, _, _ = log_estimate_sd(target, res.x, np.random.default_rng(seed), n_imp, n_repeats=32)
    return sd, res.x


def stuck_point(model, idata, accepted, runs, n_imps, seed: int = 12) -> tuple[int, float, float]:
    """Where the longest rejection run of all chains sat: (its chain's N_imp, sd of the noisy log posterior there
    over 32 fresh estimates with that N_imp, and the stored estimate's excess over their mean in those sds)."""
    import gpbayes as gb
    from gpbayes.estimators.importance import PseudoMarginalTarget

    c = int(np.argmax(runs))
    row = accepted[c]
    best = cur = 0
    end = 0
    for i, a in enumerate(row):
        cur = 0 if a else cur + 1
        if cur > best:
            best, end = cur, i
    start = end - best + 1  # the chain sat at draw start - 1's position from draw start to draw end
    psi = gb.api.psi_draws(idata).values[c, start]
    stored = float(idata.sample_stats["lp"].values[c, start])
    n_imp = int(n_imps[c])
    target = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior, n_imp=n_imp)
    rng = np.random.default_rng(seed)
    fresh = np.array([target.estimate(psi, rng).value for _ in range(32)])
    sd = float(fresh.std(ddof=1))
    return n_imp, sd, (stored - float(fresh.mean())) / sd


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--variants", default="0,1,2,3,4,5", help="indices into VARIANTS")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    import arviz as az
    from threadpoolctl import threadpool_limits

    import gpbayes as gb

    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    say(f"bench_sticking: {_common.machine()}; shared machine (lead and helpers), one BLAS thread")
    X, y = problem()
    model = gb.GPClassifier(X, y)
    say(f"problem: Boston Housing 13 covariates, y = medv > median, 100-row subset (seed 0): n = {len(y)}, "
        f"{int(y.sum())} positive, {model.kernel.n_params} hyperparameters (ARD SE, probit)")
    say(f"chains: {args.chains} x ({args.warmup} adaptive + {args.draws} kept), seed 1, cores=1, sequential")
    with threadpool_limits(1):
        sd64, mode = sd_at_mode(model, 64)
    sd_mode = {64: sd64}
    say(f"sd of log p~ at the Laplace-marginal mode with N_imp 64 (32 estimates): {sd64:.3f}")
    say()
    head = (f"{'variant':<30s} {'acc@1000':>8s} {'acc all':>8s} {'rej run max':>11s} {'rej run med':>11s} "
            f"{'min ESS':>8s} {'max R-hat':>9s} {'CPU s':>8s} {'ESS/CPU-s':>9s} {'N_imp':>9s} {'sd log p~':>11s} "
            f"{'stuck: sd':>9s} {'excess':>6s}")
    say(head)
    for i in (int(v) for v in args.variants.split(",")):
        label, n_imp, rho = VARIANTS[i]
        c0 = time.process_time()
        with threadpool_limits(1):
            idata = gb.sample(model, method=gb.PseudoMarginal(n_imp=n_imp, rho=rho), chains=args.chains,
                              draws=args.draws, n_warmup=args.warmup, seed=1, cores=1, progress=False)
        cpu = time.process_time() - c0
        acc = idata.sample_stats["accepted"].values.astype(bool)
        runs = longest_rejection_runs(acc)
        psi = gb.api.psi_draws(idata)
        ds = psi.to_dataset("param")
        ess = float(az.ess(ds, method="bulk").to_array().min())
        rhat = float(az.rhat(ds).to_array().max())
        ss = idata.sample_stats
        if n_imp == "auto":
            ns, sds = ss["tuned_n_imp"].values, ss["tuned_n_imp_sd_log_estimate"].values
            n_txt = f"{ns.min()}-{ns.max()}" if ns.min() != ns.max() else f"{ns.min()}"
            sd_txt = f"{sds.min():.2f}-{sds.max():.2f}"
        else:
            ns = np.full(args.chains, n_imp)
            n_txt = str(n_imp)
            if n_imp not in sd_mode:
                with threadpool_limits(1):
                    sd_mode[n_imp] = sd_at_mode(model, n_imp)[0]
            sd_txt = f"{sd_mode[n_imp]:.2f}"
        with threadpool_limits(1):
            _, sd_stuck, excess = stuck_point(model, idata, acc, runs, ns)
        say(f"{label:<30s} {acc[:, :1000].mean():8.3f} {acc.mean():8.3f} {runs.max():11d} {np.median(runs):11.0f} "
            f"{ess:8.0f} {rhat:9.3f} {cpu:8.1f} {ess / cpu:9.2f} {n_txt:>9s} {sd_txt:>11s} {sd_stuck:9.2f} "
            f"{excess:6.1f}")
        if n_imp == "auto":
            say(f"    per chain: N_imp {list(map(int, ns))}, sd log p~ {[round(float(v), 2) for v in sds]}, "
                f"sd log-ratio {[round(float(v), 2) for v in ss['tuned_n_imp_sd_log_ratio'].values]}, "
                f"pilot sd at 64 {[round(float(v), 2) for v in ss['tuned_n_imp_pilot_sd'].values]}, "
                f"choice CPU s {[round(float(v), 2) for v in ss['tuned_n_imp_time'].values]}")
    say()
    say(f"load average at end: {os.getloadavg()[0]:.2f} (1 min), {os.getloadavg()[1]:.2f} (5 min)")
    say("acc@1000: acceptance over the first 1,000 kept draws of every chain; rej run: longest run of consecutive "
        "rejections per chain (max, median over chains); min ESS: min over the 14 log-hyperparameters of ArviZ's "
        "bulk ESS; CPU s: process time of gb.sample (adaptive phase, N_imp choice and draws); stuck: at the "
        "position of the longest rejection run (all chains), the sd of log p~ + log p(psi) over 32 fresh estimates "
        "with that chain's N_imp, and 'excess' = (stored estimate there - their mean) / that sd")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
