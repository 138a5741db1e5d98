"""Murray & Adams on Ionosphere: the choices the paper leaves open, one at a time, on the correct target.

Why this exists (issue 15, section 3).  On Ionosphere the paper finds the
-site representations "much better" than prior-white; on the correct target
(eq. 11) ours do not lead.  The paper does not state its priors, slice widths,
square root of R or input scaling.  This script changes ONE of them at a time
away from the workflow's choice (``baseline``), always on the correct target,
and measures surr-site, prior-white and post-site as Fig. 3 does: ESS
(R-CODA ``effectiveSize``) of the complete-data log-likelihood per covariance
construction, per chain; the summary gives each method's mean with a 95 %
percentile bootstrap interval over chains and the ratios surr-site /
prior-white and post-site / prior-white with bootstrap intervals
(``gpbayes_repro.claims.bootstrap_ratio``, as the M&A claims do).

Choices (``CHOICES``):

``baseline``            the workflow's: log-uniform(0.1, 10) on every lengthscale
                        and sigma_f, bracket = prior width, no stepping out,
                        ``root="prior"``, standardised inputs
``sigma_f_0.1_100``     sigma_f ~ log-uniform(0.1, 100) (its bracket widens with it)
``sigma_f_0.1_2``       sigma_f ~ log-uniform(0.1, 2)
``bracket_1_step_out``  bracket width 1 on every coordinate with unlimited
                        stepping out (Murray's ``slice_sweep`` with step_out on)
``root_precision``      L_R = chol(Sigma^-1 + S^-1)^-T, the root of Murray's code
``inputs_raw``          the UCI values in [-1, 1] instead of standardised inputs

Each (choice, method, chain) starts from psi drawn from that choice's prior and
f ~ N(0, Sigma_psi) (the same stream for every method), and has its own random
stream keyed by (choice, method, chain).  Per-chain rows are merged into
benchmarks/results/bench_ma_sensitivity_chains.csv (rows of the choices run
are replaced), so the choices can be run in separate invocations; the summary
benchmarks/results/bench_ma_sensitivity.csv is recomputed from all rows.

    OMP_NUM_THREADS=1 python benchmarks/bench_ma_sensitivity.py [--n 100] [--burn 100] [--draws 300] \
        [--chains 4] [--choices baseline,root_precision]

Needs data/processed/ionosphere.nc (``snakemake data/processed/ionosphere.nc``).
"""

from __future__ import annotations

import argparse
import copy
import math
import time

import numpy as np
import pandas as pd
import xarray as xr

from gpbayes import diagnostics
from gpbayes import rng as rngmod
from gpbayes_repro.threads import blas_single_thread
from gpbayes.mcmc import hyper_slice as hs
from gpbayes_repro import claims
from gpbayes_repro.experiments import slice_ma

from _common import REPO, ionosphere_problem

METHODS = ("prior-white", "surr-site", "post-site")
#: choice -> what it changes (config edits, sampler options, input scaling)
CHOICES = {
    "baseline": {},
    "sigma_f_0.1_100": {"amplitude": {"loguniform": {"low": 0.1, "high": 100.0}}},
    "sigma_f_0.1_2": {"amplitude": {"loguniform": {"low": 0.1, "high": 2.0}}},
    "bracket_1_step_out": {"width": 1.0, "step_out": math.inf},
    "root_precision": {"root": "precision"},
    "inputs_raw": {"inputs": "raw"},
}
CHAINS_CSV = REPO / "benchmarks" / "results" / "bench_ma_sensitivity_chains.csv"
SUMMARY_CSV = REPO / "benchmarks" / "results" / "bench_ma_sensitivity.csv"


def run_choice(choice: str, cfg: dict, ds, args) -> list[dict]:
    spec = CHOICES[choice]
    cfg = copy.deepcopy(cfg)
    if "amplitude" in spec:
        cfg["priors"]["amplitude"] = spec["amplitude"]
    if spec.get("inputs") == "raw":  # the same rows (the subset's draw does not depend on X), raw units
        source = slice_ma.unstandardised_inputs(xr.load_dataset(REPO / "data" / "processed" / "ionosphere.nc"))
        ds = slice_ma.problem_data("ionosphere", cfg, {"ionosphere": {"n": args.n}}, args.seed, source)
    model = slice_ma.build_model(ds, cfg)
    widths = hs.prior_widths(model.prior)
    if "width" in spec:
        widths = np.full_like(widths, spec["width"])
    amp = model.param_names.index("sigma_f")
    rows, draws = [], {}
    for c in range(args.chains):
        psi0, f0 = slice_ma.initial_point(model, rngmod.stream(args.seed, "bench_ma_sensitivity", choice, "init", c))
        for method in METHODS:
            t0 = time.perf_counter()
            gen = rngmod.stream(args.seed, "bench_ma_sensitivity", choice, method, c)
            ch = hs.run_chain(gen, model, psi0, f0, method, n_burn=args.burn, n_draws=args.draws, widths=widths,
                              n_latent_updates=int(cfg["n_latent_updates"]), step_out=spec.get("step_out", 0),
                              root=spec.get("root", "prior"))
            ess = diagnostics.ess_coda(ch.stats["lp"][None, :])
            n_cov = float(np.sum(ch.stats["n_covariance"]))
            log_sf = ch.draws[:, amp]
            rows.append({"choice": choice, "method": method, "chain": c, "n": int(model.n), "n_burn": args.burn,
                         "n_draws": args.draws, "ess": float(ess),
                         "ess_log_sigma_f": float(diagnostics.ess_coda(log_sf[None, :])),
                         "n_covariance": n_cov, "n_likelihood": float(np.sum(ch.stats["n_likelihood"])),
                         "per_covariance": float(ess / n_cov),
                         "per_likelihood": float(ess / np.sum(ch.stats["n_likelihood"])),
                         "mean_sigma_f": float(np.mean(np.exp(log_sf))), "mean_log_sigma_f": float(np.mean(log_sf)),
                         "sd_log_sigma_f": float(np.std(log_sf)), "wall_seconds": time.perf_counter() - t0})
            draws.setdefault(method, []).append(log_sf)
            r = rows[-1]
            print(f"{choice:20s} {method:12s} chain {c}: ESS {r['ess']:6.1f}  ESS/cov {r['per_covariance']:.2e}  "
                  f"sigma_f {r['mean_sigma_f']:.2f}  ({r['wall_seconds']:.0f} s wall)", flush=True)
    for r in rows:  # convergence of log sigma_f, all chains of the method pooled
        d = np.stack(draws[r["method"]])
        r["rank_rhat_log_sigma_f"] = float(diagnostics.split_rhat(d, rank_normalize=True)) if len(d) > 1 else math.nan
    return rows


def summarise(chains: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Per (choice, method): mean ESS per covariance construction with a bootstrap interval, the ratio to
    prior-white with a bootstrap interval, sigma_f's posterior mean and the pooled rank R-hat of log sigma_f."""
    rng = np.random.default_rng(seed)
    out = []
    for choice in [c for c in CHOICES if c in set(chains["choice"])]:
        sub = chains[chains["choice"] == choice]
        base = sub[sub["method"] == "prior-white"]["per_covariance"].to_numpy(float)
        for method in METHODS:
            m = sub[sub["method"] == method]
            if not len(m):
                continue
            v = m["per_covariance"].to_numpy(float)
            boot = v[rng.integers(0, v.size, size=(4000, v.size))].mean(axis=1)
            lo, hi = np.quantile(boot, [0.025, 0.975]) if v.size > 1 else (math.nan, math.nan)
            est, rlo, rhi = claims.bootstrap_ratio(v, base, rng)
            out.append({"choice": choice, "method": method, "n_chains": int(v.size), "n": int(m["n"].iloc[0]),
                        "n_burn": int(m["n_burn"].iloc[0]), "n_draws": int(m["n_draws"].iloc[0]),
                        "per_covariance_mean": float(v.mean()), "per_covariance_lo": float(lo),
                        "per_covariance_hi": float(hi), "over_prior_white": est, "over_prior_white_lo": rlo,
                        "over_prior_white_hi": rhi, "ess_mean": float(m["ess"].mean()),
                        "ess_log_sigma_f_mean": float(m["ess_log_sigma_f"].mean()),
                        "sigma_f_mean": float(m["mean_sigma_f"].mean()),
                        "rank_rhat_log_sigma_f": float(m["rank_rhat_log_sigma_f"].iloc[0])})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--burn", type=int, default=100)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--choices", default=",".join(CHOICES))
    args = ap.parse_args()
    choices = args.choices.split(",")
    unknown = set(choices) - set(CHOICES)
    if unknown:
        raise SystemExit(f"unknown choices {sorted(unknown)}; choose from {list(CHOICES)}")
    cfg, _, ds = ionosphere_problem(args.n, args.burn, args.draws, args.chains, args.seed)
    rows = []
    with blas_single_thread():
        for choice in choices:
            rows += run_choice(choice, cfg, ds, args)
    new = pd.DataFrame(rows)
    if CHAINS_CSV.exists():
        old = pd.read_csv(CHAINS_CSV)
        new = pd.concat([old[~old["choice"].isin(choices)], new], ignore_index=True)
    CHAINS_CSV.parent.mkdir(parents=True, exist_ok=True)
    new.to_csv(CHAINS_CSV, index=False)
    summary = summarise(new)
    summary.to_csv(SUMMARY_CSV, index=False, float_format="%.4g")
    print(f"wrote {CHAINS_CSV}\nwrote {SUMMARY_CSV}")
    print(summary[["choice", "method", "per_covariance_mean", "per_covariance_lo", "per_covariance_hi",
                   "over_prior_white", "over_prior_white_lo", "over_prior_white_hi", "sigma_f_mean",
                   "rank_rhat_log_sigma_f"]].to_string(index=False))


if __name__ == "__main__":
    main()
