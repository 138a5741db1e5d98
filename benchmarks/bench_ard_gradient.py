"""Per-gradient cost of the exact GP-regression log marginal with an ARD kernel (issue 24 §1).

One call of ``GPRegression.log_marginal_and_grad`` (R&W Alg. 2.1 and eq. 5.9: K, one Cholesky,
alpha, C^-1 from the factor, the d + 2 traces) on Boston Housing (n = 506, d = 13, covariates and
target standardised; ``data/raw/Boston.csv``) at the kernel's data-driven start
(``regression.default_init``), or on a synthetic problem of any n and d (``--synthetic``).

Rows: ``gradient="fused"`` (the default since issue 24: all traces from one GEMM),
``gradient="per_parameter"`` (one n x n derivative matrix per parameter, bit-identical to
before), the value alone, and with ``--baseline <dir>`` another version's ``src/gpbayes``
(e.g. ``git archive 0748516 src/gpbayes``) imported side by side.  The calls are interleaved
round by round, so all rows see the same load; the figure is the median over rounds of the
calling thread's CPU time (``time.thread_time``), with the interquartile range.  One BLAS
thread (``threadpoolctl``).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ard_gradient.py \\
        --baseline /tmp/base/src/gpbayes
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import _common

REPO = Path(__file__).resolve().parents[1]


def boston() -> tuple[np.ndarray, np.ndarray]:
    """Boston Housing: 13 covariates, target medv, both standardised."""
    X, y = _common.boston()
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()


def load_package(src: Path, name: str):
    import importlib
    import shutil
    import sys
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix=f"{name}_"))
    shutil.copytree(src, tmp / name)
    sys.path.insert(0, str(tmp))
    return importlib.import_module(f"{name}.regression"), importlib.import_module(f"{name}.kernels")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--synthetic", nargs=2, type=int, metavar=("N", "D"), help="a synthetic problem instead of Boston")
    ap.add_argument("--parameterisation", default="fg")
    ap.add_argument("--baseline", type=Path, help="another version's src/gpbayes, measured side by side")
    args = ap.parse_args(argv)

    from gpbayes import regression
    from gpbayes.kernels import SquaredExponential

    if args.synthetic:
        n, d = args.synthetic
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, d))
        y = np.sin(X[:, 0]) + 0.5 * X[:, 1 % d] + 0.1 * rng.normal(size=n)
        label = f"synthetic n = {n}, d = {d}"
    else:
        X, y = boston()
        n, d = X.shape
        label = f"Boston Housing n = {n}, d = {d}"
    k = SquaredExponential(d, ard=True, parameterisation=args.parameterisation)
    fused = regression.GPRegression(X, y, k)
    per = regression.GPRegression(X, y, k, gradient="per_parameter")
    psi = regression.default_init(fused)
    calls = {
        "value and gradient, fused": lambda: fused.log_marginal_and_grad(psi),
        "value and gradient, per_parameter": lambda: per.log_marginal_and_grad(psi),
        "value only": lambda: fused.log_marginal(psi),
    }
    if args.baseline:
        breg, bker = load_package(args.baseline, "gpbayes_baseline")
        bmodel = breg.GPRegression(X, y, bker.SquaredExponential(d, ard=True, parameterisation=args.parameterisation))
        calls["value and gradient, baseline"] = lambda: bmodel.log_marginal_and_grad(psi)
        v0, g0 = bmodel.log_marginal_and_grad(psi)
        v1, g1 = per.log_marginal_and_grad(psi)
        print(f"per_parameter vs baseline: value equal {v0 == v1}, gradient bit-identical {np.array_equal(g0, g1)}")
    v0, g0 = per.log_marginal_and_grad(psi)
    v1, g1 = fused.log_marginal_and_grad(psi)
    print(f"fused vs per_parameter: value equal {v0 == v1}, max |gradient difference| "
          f"{np.max(np.abs(g1 - g0)):.2e} (max |gradient| {np.max(np.abs(g0)):.2e})")
    times = {name: [] for name in calls}
    with threadpool_limits(limits=1):
        for f in calls.values():  # warm up
            f()
        for _ in range(args.rounds):
            for name, f in calls.items():
                t0 = time.thread_time()
                f()
                times[name].append(time.thread_time() - t0)
    print(f"\n{label}, kernel SE ARD ({args.parameterisation}), {args.rounds} rounds, one BLAS thread; "
          f"CPU: {_common.cpu_name()}, load average {open('/proc/loadavg').read().split()[0]}")
    print(f"{'call':40s} {'median ms':>10s} {'IQR ms':>16s}")
    for name, ts in times.items():
        ms = 1e3 * np.asarray(ts)
        q1, q3 = np.percentile(ms, [25, 75])
        print(f"{name:40s} {np.median(ms):10.2f} {q1:7.2f}-{q3:<7.2f}")


if __name__ == "__main__":
    main()
