"""Where the paper's pseudo-marginal chains sit in the exact posterior (issue 40, Gadd et al.).

For each case of a finished run: the exact joint sampler's chains (``results/gplvm/chains_joint/``) give the
posterior of the label-invariant quantities (sigma, log max / min theta, theta_S, beta); for each chain of the
paper's sampler (``results/gplvm/chains/``) and of the correlated PM set (``chains_cpm``) the report gives its
mean's quantile in that posterior, and the ML estimate's.  A chain that explored the posterior has its mean near
the middle (quantiles spread around 50 %); chains stuck at their start sit where the ML estimate is.

    python benchmarks/gplvm_pm_vs_joint.py RUN_DIR [--out FILE]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from datetime import datetime, timezone

import numpy as np
import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_name  # noqa: E402


def _chains(run: str, folder: str, case: str) -> dict | None:
    files = sorted(glob.glob(os.path.join(run, "results", "gplvm", folder, f"{case}_block*.nc")))
    return gplvm.merge_chains([io.read_inference_data(f) for f in files]) if files else None


def _invariants(chains: dict) -> dict[str, np.ndarray]:
    post = chains["posterior"]
    names = [str(v) for v in post.data_vars if v != "Z"]
    psi = np.log(np.stack([post[n].values for n in names], axis=-1))
    theta = psi[..., [i for i, n in enumerate(names) if n.startswith("theta_") and n != "theta_S"]]
    out = {n: psi[..., i] for i, n in enumerate(names) if n.startswith("sigma_")}
    out.update(log_max_theta=theta.max(-1), log_min_theta=theta.min(-1), theta_S=psi[..., names.index("theta_S")],
               beta=psi[..., names.index("beta")])
    return out


def report(run: str) -> str:
    lines = [f"# Gadd et al.: the pseudo-marginal chains' means as quantiles of the exact joint posterior",
             f"# run: {run}; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; CPU {cpu_name()}",
             "# columns: per invariant (log scale), the joint posterior's mean [5 %, 95 %] and each PM chain's mean "
             "as a quantile (%) of the pooled joint draws; ML = the type-II ML estimate's quantile"]
    for case in gplvm.CASES:
        joint = _chains(run, "chains_joint", case)
        if joint is None:
            continue
        ml = xr.load_dataset(os.path.join(run, "results", "gplvm", "ml", f"{case}.nc"))
        ml_inv = _invariants({"posterior": xr.Dataset({str(p): (("chain", "draw"), [[float(v)]])
                                                       for p, v in zip(ml["param"].values, ml["value"].values)})})
        inv = _invariants(joint)
        lines.append(f"{case}: joint {inv['beta'].shape[0]} chains x {inv['beta'].shape[1]} kept draws")
        for name, draws in inv.items():
            pooled = np.sort(draws.ravel())
            q = lambda x: 100.0 * np.searchsorted(pooled, x) / pooled.size  # noqa: E731
            row = (f"  {name:>14s}: joint {pooled.mean():7.3f} [{np.quantile(pooled, 0.05):7.3f}, "
                   f"{np.quantile(pooled, 0.95):7.3f}]  ML {q(float(ml_inv[name].ravel()[0])):5.1f} %")
            for folder, label in (("chains", "paper"), ("chains_cpm", "cpm")):
                pm_chains = _chains(run, folder, case)
                if pm_chains is not None:
                    means = _invariants(pm_chains)[name].mean(axis=1)
                    row += f"  {label} " + " ".join(f"{q(m):5.1f}" for m in means)
            lines.append(row)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a run directory holding results/gplvm/")
    ap.add_argument("--out", help="write the report here (default: stdout)")
    args = ap.parse_args(argv)
    text = report(args.run)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
