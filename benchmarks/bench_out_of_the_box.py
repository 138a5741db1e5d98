"""Out of the box vs one BLAS thread, and cores=1 vs cores=k (issue 24 §3).

Part 1 (``--part threads``): the same chain of ``gb.sample`` run in a fresh Python process twice,
once with no thread variable set (what a user gets: the library's own policy,
``gpbayes.threads.sampling_threads``) and once with ``OMP/OPENBLAS/MKL_NUM_THREADS=1``; CPU time
of the process (all its threads, ``time.process_time`` around ``gb.sample``) and wall time, and
whether the draws are the same bit for bit (a SHA-256 of the psi draws).  Done when the CPU ratio
is <= 1.2 (issue 24 Done-when).  Problems: pseudo-marginal MH (Laplace, N_imp 64) and EP on a
synthetic probit problem (n = 300, d = 8, isotropic), NUTS on a synthetic ARD regression (n = 300, d = 8);
with ``--problems pima300`` the issue's own chain: PM-MH (Laplace, N_imp 64) on the repository's
"Pima 300" (the 300 rows of ``bench_marginal.load_data(300, seed=1)``, covariates standardised,
isotropic SE, probit).  "No thread variable" removes every ``*_NUM_THREADS`` variable from the child's
environment; run it from a fresh venv to see what a new user gets.  "BLAS pool" is the largest thread
pool threadpoolctl reports in the child before ``gb.sample`` (default / one-thread run).

Part 2 (``--part cores``): a 4-chain run at ``cores=1`` and at ``cores=2`` in one process (no
thread variable set), wall time and CPU time of the calling process (the workers' CPU is not
in it; their wall is), and whether the draws are identical.

    .venv/bin/python benchmarks/bench_out_of_the_box.py --part threads
    /work/venv-oob/bin/python benchmarks/bench_out_of_the_box.py --part threads --problems pima300 --draws 2000
    .venv/bin/python benchmarks/bench_out_of_the_box.py --part cores

No timing here is a test; the machine and its load are printed with the numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

from _common import machine

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
import gpbayes as gb
which, draws = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
n, d = 300, 8
X = rng.normal(size=(n, d))
if which == "pima300":  # the repository's "Pima 300": bench_marginal.load_data(300, seed=1), isotropic
    sys.path.insert(0, sys.argv[3])
    from bench_marginal import load_data
    Xp, yp, _ = load_data(300, 1)
    model = gb.GPClassifier(Xp, yp > 0, ard=False)
    kw = dict(method="pseudo-marginal", approximation="laplace", n_imp=64)
elif which == "nuts":
    model = gb.GPRegressor(X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.normal(size=n))
    kw = dict(method="nuts")
else:
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1]
    model = gb.GPClassifier(X, f + 0.3 * rng.normal(size=n) > 0, ard=False)
    kw = dict(method="pseudo-marginal", approximation=which, n_imp=64)
import scipy.linalg  # noqa: F401  (scipy's OpenBLAS loaded too, as gb.sample will)
from threadpoolctl import threadpool_info
blas = max(i["num_threads"] for i in threadpool_info())  # the pools' size before the library's policy
w0, c0 = time.perf_counter(), time.process_time()
idata = gb.sample(model, chains=1, draws=draws, n_warmup=draws // 2, seed=3, progress=False, cores=1, **kw)
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
psi = gb.api.psi_draws(idata).values
print(json.dumps({"wall": wall, "cpu": cpu, "sha": hashlib.sha256(psi.tobytes()).hexdigest()[:16], "blas": blas}))
"""




def _gpbayes_location() -> str:
    out = subprocess.run([sys.executable, "-c", "import gpbayes; print(gpbayes.__file__)"], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def part_threads(args):
    print(machine())
    print(f"python {sys.executable}; gpbayes from {_gpbayes_location()}")
    print(f"{'problem':<10s} {'draws':>6s} {'default CPU s':>14s} {'1-thr CPU s':>12s} {'CPU ratio':>10s} "
          f"{'default wall s':>15s} {'1-thr wall s':>13s} {'same draws':>10s} {'BLAS pool':>9s}  load")
    sizes = {"laplace": args.draws, "ep": args.draws // 2, "nuts": args.draws // 4, "pima300": args.draws}
    for which in args.problems:
        draws = sizes[which]
        res = {}
        for mode in ("default", "one"):
            # "default": every *_NUM_THREADS variable removed (what a new user has), not only THREAD_VARS
            env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
            if mode == "one":
                env.update({k: "1" for k in THREAD_VARS})
            out = subprocess.run([sys.executable, "-c", CHILD, which, str(draws), os.path.dirname(__file__) or "."],
                                 env=env, capture_output=True, text=True, check=True)
            res[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        d, o = res["default"], res["one"]
        print(f"{which:<10s} {draws:6d} {d['cpu']:14.2f} {o['cpu']:12.2f} {d['cpu'] / o['cpu']:10.2f} "
              f"{d['wall']:15.2f} {o['wall']:13.2f} {str(d['sha'] == o['sha']):>10s} {d['blas']:>4d}/{o['blas']:<4d}  "
              f"{os.getloadavg()[0]:.2f}")


def part_cores(args):
    import numpy as np

    import gpbayes as gb

    print(machine())
    rng = np.random.default_rng(7)
    n, d = 200, 4
    X = rng.normal(size=(n, d))
    problems = {
        "pseudo-marginal (LA, N_imp 64), GPClassifier n=200 d=4 isotropic":
            (gb.GPClassifier(X, np.sin(X[:, 0]) + 0.3 * rng.normal(size=n) > 0, ard=False),
             dict(method="pseudo-marginal", n_imp=64)),
        "nuts, GPRegressor n=200 d=4 ARD":
            (gb.GPRegressor(X, np.sin(X[:, 0]) + 0.2 * rng.normal(size=n)), dict(method="nuts")),
    }
    print(f"{'problem':<66s} {'cores':>5s} {'wall s':>8s} {'caller CPU s':>12s} {'same draws':>10s}  load")
    for label, (model, kw) in problems.items():
        gb.sample(model, chains=2, draws=5, n_warmup=5, cores=2, progress=False, **kw)  # start the forkserver
        ref = None
        for cores in (1, 2):
            w0, c0 = time.perf_counter(), time.process_time()
            idata = gb.sample(model, chains=4, draws=args.chain_draws, n_warmup=args.chain_draws // 2, seed=1,
                              cores=cores, progress=False, **kw)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            psi = gb.api.psi_draws(idata).values
            sha = hashlib.sha256(psi.tobytes()).hexdigest()
            ref = sha if ref is None else ref
            print(f"{label:<66s} {cores:5d} {wall:8.2f} {cpu:12.2f} {str(sha == ref):>10s}  "
                  f"{os.getloadavg()[0]:.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("threads", "cores"), required=True)
    ap.add_argument("--draws", type=int, default=400, help="part threads: PM-LA draws (EP half, NUTS a quarter)")
    ap.add_argument("--problems", nargs="+", default=["laplace", "ep", "nuts"],
                    choices=("laplace", "ep", "nuts", "pima300"),
                    help="part threads: the synthetic PM-LA/EP/NUTS problems, and pima300 (PM-LA N_imp 64 on the "
                         "repository's Pima 300 rows, isotropic)")
    ap.add_argument("--chain-draws", type=int, default=400, help="part cores: draws per chain (warm-up half)")
    args = ap.parse_args(argv)
    if args.part == "threads":
        part_threads(args)
    else:
        part_cores(args)


if __name__ == "__main__":
    main()
