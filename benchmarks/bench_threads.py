"""Where a second BLAS thread starts to pay for GP regression's value and gradient (issue 24 §3).

For each n: a synthetic ARD problem (d = 8), ``GPRegression.log_marginal_and_grad`` (the fused
gradient: one Cholesky, one inverse, GEMMs of n x n x (d + 1)) called ``--reps`` times with the BLAS
pools (numpy's and scipy's OpenBLAS) limited to 1 thread and to ``--threads`` threads by
threadpoolctl, alternating.  Median wall time and process CPU time per call; "speed-up" is the
one-thread wall time over the multi-thread one, "CPU ratio" the multi-thread CPU time over the
one-thread one.  ``gpbayes.threads.CROSSOVER_N`` is set from this table: the smallest n at which
the extra threads cut the wall time by at least 25 %.

    .venv/bin/python benchmarks/bench_threads.py --n 250 500 1000 1500 2000 3000

``--large`` (issue 24 §3, the crossover above n = 3000): for each n (default 3000 4000 5000) a
synthetic probit classification problem (d = 8, ARD SE at the kernel's data-driven start) and two
operations at 1 and ``--threads`` threads, alternating, ``--reps`` times each (median): one Cholesky
of K (``gpbayes.linalg.cholesky``) and one pseudo-marginal Laplace estimate (``PseudoMarginalTarget
.estimate``, N_imp 64: K, its factor, the Laplace approximation's Newton steps, 64 importance draws).
Only on an idle machine: with other processes on the cores the second thread's time is theirs.

    .venv/bin/python benchmarks/bench_threads.py --large --reps 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits


def large(args):
    """One Cholesky and one PM-LA estimate per n at 1 vs ``args.threads`` BLAS threads (wall and CPU)."""
    import gpbayes as gb
    from gpbayes import linalg
    from gpbayes.estimators.importance import PseudoMarginalTarget

    ns = args.n if args.n_given else [3000, 4000, 5000]
    print(f"{'n':>6s} {'operation':<22s} {'wall 1 thr s':>12s} {'wall ' + str(args.threads) + ' thr s':>12s} "
          f"{'speed-up':>9s} {'CPU 1 thr s':>12s} {'CPU ' + str(args.threads) + ' thr s':>12s} {'CPU ratio':>9s}  load")
    for n in ns:
        rng = np.random.default_rng(n)
        X = rng.normal(size=(n, 8))
        model = gb.GPClassifier(X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0)
        psi = model.kernel.initial_psi(model.X)
        target = PseudoMarginalTarget(model.X, model.y, model.kernel, model.likelihood, model.prior, n_imp=64)
        K = model.kernel(psi, model.X)
        ops = {"Cholesky of K": lambda: linalg.cholesky(K, name="K", count=False),
               "PM-LA estimate (64)": lambda: target.estimate(psi, np.random.default_rng(0))}
        for name, op in ops.items():
            res = {1: ([], []), args.threads: ([], [])}
            for _ in range(args.reps):
                for k in res:
                    with threadpool_limits(limits=k):
                        w0, c0 = time.perf_counter(), time.process_time()
                        op()
                        res[k][0].append(time.perf_counter() - w0)
                        res[k][1].append(time.process_time() - c0)
            w1, c1 = (float(np.median(v)) for v in res[1])
            wk, ck = (float(np.median(v)) for v in res[args.threads])
            load = open("/proc/loadavg").read().split()[0]
            print(f"{n:6d} {name:<22s} {w1:12.2f} {wk:12.2f} {w1 / wk:9.2f} {c1:12.2f} {ck:12.2f} {ck / c1:9.2f}  {load}",
                  flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=None,
                    help="sizes (default 250 500 1000 1500 2000 3000; with --large 3000 4000 5000)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--large", action="store_true", help="one Cholesky + one PM-LA estimate per n (see above)")
    args = ap.parse_args(argv)
    args.n_given = args.n is not None
    if args.large:
        import os

        from _common import machine

        print(machine())
        large(args)
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
        return
    if args.n is None:
        args.n = [250, 500, 1000, 1500, 2000, 3000]

    from gpbayes.kernels import SquaredExponential
    from gpbayes.regression import GPRegression, default_init

    print(f"{'n':>6s} {'wall 1 thr ms':>14s} {'wall ' + str(args.threads) + ' thr ms':>14s} {'speed-up':>9s} "
          f"{'CPU 1 thr ms':>13s} {'CPU ' + str(args.threads) + ' thr ms':>13s} {'CPU ratio':>9s}  load")
    for n in args.n:
        rng = np.random.default_rng(n)
        X = rng.normal(size=(n, 8))
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
        model = GPRegression(X, y, SquaredExponential(8, ard=True))
        psi = default_init(model)
        res = {1: ([], []), args.threads: ([], [])}
        for _ in range(args.reps):
            for k in res:
                with threadpool_limits(limits=k):
                    model.log_marginal_and_grad(psi)  # warm the pool at this size
                    w0, c0 = time.perf_counter(), time.process_time()
                    model.log_marginal_and_grad(psi)
                    res[k][0].append(time.perf_counter() - w0)
                    res[k][1].append(time.process_time() - c0)
        w1, c1 = (1e3 * np.median(v) for v in res[1])
        wk, ck = (1e3 * np.median(v) for v in res[args.threads])
        load = open("/proc/loadavg").read().split()[0]
        print(f"{n:6d} {w1:14.1f} {wk:14.1f} {w1 / wk:9.2f} {c1:13.1f} {ck:13.1f} {ck / c1:9.2f}  {load}")


if __name__ == "__main__":
    main()
