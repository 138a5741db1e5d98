#!/usr/bin/env python
"""Cost and accuracy of the dense marginal likelihoods (Laplace, EP), in Cholesky-equivalents.

Two tables, one row per (n, configuration):

1. **Pseudo-marginal estimate.**  One full call of ``PseudoMarginalTarget(psi, rng)`` --
   what a pseudo-marginal MH step pays at its proposal: build K, factorise it, build the
   Gaussian approximation (LA or EP), draw N_imp = 1 importance sample (F&G eq. 25), add the
   prior.  Configurations: LA, EP with the default stopping rule (``stopping="logz"``) and EP
   with F&G's rule (``stopping="fg2014"``), each cold and warm-started.  Besides the cost the
   row gives |log Z - log Z_conv|: the approximation's deterministic log marginal (R&W
   eq. 3.32 for LA, log Z_EP for EP) against the same approximation run to convergence
   (LA: Newton to tol 1e-13; EP: ``tol=1e-12, site_tol=1e-9``).
2. **Deterministic marginal against peers.**  Build K and the approximation, nothing else
   (gpbayes: ``kernel(psi, X)`` + ``laplace_approximation`` / ``ep_approximation``, cold), beside
   GPy's ``Laplace`` and ``EP`` (probit ``Bernoulli``, the same kernel sigma exp(-|x-x'|^2 /
   (2 tau^2)) = GPy ``RBF(variance=sigma, lengthscale=tau)``) and scikit-learn's
   ``GaussianProcessClassifier`` Laplace log marginal at the same kernel hyperparameters
   (``ConstantKernel(sigma) * RBF(tau)``; its likelihood is the *logistic* one, so its log
   marginal is a different number and only its cost compares).  Ratio = peer time / gpbayes
   time of the same approximation in the same process (> 1: gpbayes is faster).  A peer that
   is not installed is reported as "not installed".

Unit: every wall time is divided by the time of one ``scipy.linalg.cho_factor`` of the same K
(not the project's own wrapper, so a slow wrapper cannot hide inside the unit), measured in
the same process just before each timed call; the figure is the median ratio over repeats
(IQR alongside).  BLAS is limited to one thread (``gpbayes_repro.threads.blas_single_thread``).

Data: Pima (``data/raw/pima.dat``, n = 768, d = 8, covariates standardised) for n = 768; a
fixed random subset of it for n < 768; simulated data (d = 8, labels from a smooth latent
function plus noise) for n > 768 or when the file is missing; the output says which.
Kernel: isotropic F&G squared exponential at psi = (log tau, log sigma) = (1.5, 1.0), near the
maximum of the LA marginal on Pima; priors as F&G Sec. 4.4.

Warm starts: before each timed call the target evaluates (untimed) a previous point
psi_prev = psi + step * z, z ~ N(0, I) -- the current state of a random-walk chain -- and the
timed call starts from its mode (LA) or sites (EP).

``--baseline <dir>`` measures another version's ``src/gpbayes`` (e.g. extracted with ``git archive``)
side by side in table 1: it is imported under another name, and its calls alternate with the current
code's, each against its own unit, so both see the same load.  A baseline whose ``ep_approximation``
has no ``stopping`` argument runs its single (F&G) rule in both EP rows, and the table says so.
The converged reference values always come from the current code.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_marginal.py

writes ``benchmarks/results/bench_marginal.csv`` (table 1) and ``bench_marginal_peers.csv``
(table 2) and prints both.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import inspect
import time
from pathlib import Path

import numpy as np
import scipy.linalg

from gpbayes import linalg
from gpbayes.approx import ep_approximation, laplace_approximation
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit

REPO = Path(__file__).resolve().parents[1]
PIMA = REPO / "data" / "raw" / "pima.dat"
OUT = REPO / "benchmarks" / "results" / "bench_marginal.csv"
PSI = np.array([1.5, 1.0])
D = 8



class Impl:
    """The pieces of one gpbayes version the benchmark needs (the current one, or ``--baseline``)."""

    def __init__(self, name: str, pkg):
        import importlib

        self.name = name
        est = importlib.import_module(f"{pkg}.estimators")
        approx = importlib.import_module(f"{pkg}.approx")
        kernels = importlib.import_module(f"{pkg}.kernels")
        liks = importlib.import_module(f"{pkg}.likelihoods")
        priors = importlib.import_module(f"{pkg}.priors")
        self.PseudoMarginalTarget = est.PseudoMarginalTarget
        self.laplace_approximation = approx.laplace_approximation
        self.ep_approximation = approx.ep_approximation
        self.kernel = kernels.SquaredExponential(D, parameterisation="fg")
        self.Probit = liks.Probit
        self.prior = priors.IndependentPrior((priors.Gamma(1.0, 1.0 / np.sqrt(D)), priors.Gamma(1.1, 0.1)))
        self.has_stopping = "stopping" in inspect.signature(self.ep_approximation).parameters

    def options(self, opts: dict) -> dict:
        return opts if self.has_stopping else {}


def load_baseline(src: Path) -> Impl:
    """Import the gpbayes package at ``src`` (a copy of another version's ``src/gpbayes``) as ``gpbayes_baseline``.

    Every import inside gpbayes is relative, so the copy runs side by side with the current
    package in one process (same BLAS, same load, same unit).
    """
    import shutil
    import sys
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="gpbayes_baseline_"))
    shutil.copytree(src, tmp / "gpbayes_baseline")
    sys.path.insert(0, str(tmp))
    return Impl("baseline", "gpbayes_baseline")

#: (label, approx, approx_options, warm_start)
CONFIGS = [
    ("LA cold", "laplace", {}, False),
    ("LA warm", "laplace", {}, True),
    ("EP default cold", "ep", {"stopping": "logz"}, False),
    ("EP default warm", "ep", {"stopping": "logz"}, True),
    ("EP fg2014 cold", "ep", {"stopping": "fg2014"}, False),
    ("EP fg2014 warm", "ep", {"stopping": "fg2014"}, True),
]
#: issue 16's targets at n = 768 (Cholesky-equivalents, cho_factor unit)
TARGETS = {"LA cold": 8, "LA warm": 5, "EP default cold": 20, "EP default warm": 10}


def load_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    rng = np.random.default_rng(seed)
    if PIMA.exists() and n <= 768:
        raw = np.genfromtxt(PIMA, delimiter=",", dtype=str)
        X = raw[:, :8].astype(float)
        y = np.where(raw[:, 8] == "tested_positive", 1.0, -1.0)
        idx = np.arange(len(y)) if n >= len(y) else np.sort(rng.choice(len(y), n, replace=False))
        X, y = X[idx], y[idx]
        source = "pima" if n >= 768 else f"pima subset ({n} of 768)"
    else:
        X = rng.normal(size=(n, D))
        f = np.sin(X[:, 0]) + 0.5 * X[:, 1] - 0.3 * X[:, 2] * X[:, 3]
        y = np.where(f + rng.normal(size=n) > 0, 1.0, -1.0)
        source = f"simulated (n = {n}, d = {D})"
    X = (X - X.mean(0)) / X.std(0)
    return X, y, source


def chol_time(K: np.ndarray, reps: int = 3) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        scipy.linalg.cho_factor(K, lower=True)
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def summary(ratios) -> dict:
    return dict(chol_equiv=round(float(np.median(ratios)), 2),
                chol_equiv_q25=round(float(np.quantile(ratios, 0.25)), 2),
                chol_equiv_q75=round(float(np.quantile(ratios, 0.75)), 2))


def converged(K, y) -> dict:
    """The converged values, from the current code (the fixed points do not depend on the version)."""
    la = laplace_approximation(K, y, Probit(), tol=1e-13, max_iter=200)
    ep = ep_approximation(K, y, tol=1e-12, site_tol=1e-9, max_iter=1000)
    return {"laplace": la.log_marginal, "ep": ep.log_marginal}


def bench_estimate(n, X, y, source, K, ref, repeats, step, seed, impls) -> list[dict]:
    """Table 1; with a baseline, its calls alternate with the current code's, each against its own unit."""
    rows = []
    for label, approx, opts, warm in CONFIGS:
        rngs = {im.name: np.random.default_rng(seed) for im in impls}
        targets = {im.name: im.PseudoMarginalTarget(X, y, im.kernel, im.Probit(), im.prior, approx=approx, n_imp=1,
                                                    warm_start=warm, approx_options=im.options(opts))
                   for im in impls}
        acc = {im.name: {"ratios": [], "times": [], "cubic": [], "iters": [], "errs": []} for im in impls}
        for r in range(repeats + 1):  # the first repeat is a warm-up
            for im in impls:
                target, rng, a = targets[im.name], rngs[im.name], acc[im.name]
                stateless = hasattr(target, "estimate")  # the warm start is passed, not remembered by the target
                prev = None
                if warm:  # previous MCMC state
                    psi_prev = PSI + step * rng.standard_normal(2)
                    prev = target.estimate(psi_prev, rng).approximation if stateless else target(psi_prev, rng)
                tc = chol_time(K)
                t0 = time.perf_counter()
                if stateless:
                    target.estimate(PSI, rng, warm=prev)
                else:
                    target(PSI, rng)
                t = time.perf_counter() - t0
                if r == 0:
                    continue
                a["ratios"].append(t / tc)
                a["times"].append(t)
                a["cubic"].append(target.last_n_cubic)
                a["iters"].append(target.last_approximation.n_iter)
                a["errs"].append(abs(target.last_approximation.log_marginal - ref[approx]))
        for im in impls:
            a = acc[im.name]
            rule = opts.get("stopping", "") if im.has_stopping else ("fg2014 (only rule)" if approx == "ep" else "")
            rows.append(dict(
                n=n, data=source, implementation=im.name, config=label, rule=rule, repeats=repeats,
                **summary(a["ratios"]), time_ms=round(1e3 * float(np.median(a["times"])), 2),
                chol_ms=round(1e3 * chol_time(K, 5), 3),
                n_cubic=float(np.median(a["cubic"])), n_iter=float(np.median(a["iters"])),
                abs_err_median=float(np.median(a["errs"])), abs_err_max=float(np.max(a["errs"])),
                warm_step=step if warm else 0.0,
            ))
    return rows


def bench_phases(n, X, y, K, reps: int = 15) -> list[dict]:
    """Per-phase cost at one psi (Chol-eq, median over ``reps``): what one pseudo-marginal estimate is made of.

    kernel = K(X, X); chol K = ``linalg.cholesky(K)``; B build + dpotrf = one factorisation of
    B = I + W^1/2 K W^1/2 in place (LA's W at the mode), split into the build (lower triangle)
    and ``dpotrf``; Newton step O(n^2) = the rest of a Newton step (b, two products with K, one
    ``cho_solve``); EP diag(Sigma) = ``_Posterior.diag_sigma`` (triangular inverse + column norms);
    EP mean = ``_Posterior.mean``; importance = one N_imp = 1 draw and weight.
    """
    from gpbayes.approx.ep import _Posterior
    from gpbayes.estimators.importance import importance_sample

    kernel = SquaredExponential(D, parameterisation="fg")
    lik = Probit()
    la = laplace_approximation(K, y, lik)
    Kc = linalg.cholesky(K)
    sw = np.sqrt(la.w)
    buf = np.empty((n, n), order="F")
    b = la.w * la.m + lik.d1(y, la.m)
    post = _Posterior(K)
    ep = ep_approximation(K, y)
    sw_ep, L_ep = post.factor(ep.w)
    rng = np.random.default_rng(0)

    def step():
        c = linalg.cho_solve(la.B_chol, sw * (K @ b))
        return K @ (b - sw * c)

    phases = {
        "kernel K(X, X)": lambda: kernel(PSI, X),
        "chol K (linalg.cholesky)": lambda: linalg.cholesky(K),
        "B build (lower triangle)": lambda: linalg.build_B_lower(K, sw, buf),
        "B dpotrf in place": lambda: linalg.cholesky_in_place(linalg.build_B_lower(K, sw, buf)),
        "Newton step O(n^2)": step,
        "EP diag(Sigma)": lambda: post.diag_sigma(L_ep, sw_ep),
        "EP mean": lambda: post.mean(L_ep, sw_ep, ep.nu),
        "importance sample": lambda: importance_sample(rng, Kc, y, lik, la, 1),
    }
    rows = []
    ratios = {k: [] for k in phases}
    for _ in range(reps):
        for name, fn in phases.items():
            tc = chol_time(K)
            t0 = time.perf_counter()
            fn()
            ratios[name].append((time.perf_counter() - t0) / tc)
    build = float(np.median(ratios["B build (lower triangle)"]))
    for name in phases:
        med = float(np.median(ratios[name]))
        if name == "B dpotrf in place":
            med -= build  # the call above includes its build
        rows.append(dict(n=n, phase=name, chol_equiv=round(med, 3)))
    return rows


# ------------------------------------------------------------------------- peers
def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def peer_runners(X, y):
    """name -> (approximation, callable() -> log marginal); missing peers map to None."""
    tau, sigma = np.exp(PSI)
    out = {}
    if _have("GPy"):
        import GPy
        from GPy.inference.latent_function_inference import EP, Laplace

        from paramz import ObsAr  # GPy's EP reads Y.values

        Y01 = ObsAr(((y + 1) / 2).reshape(-1, 1))
        lik = GPy.likelihoods.Bernoulli()  # probit link

        def gpy(inference):
            kern = GPy.kern.RBF(X.shape[1], variance=sigma, lengthscale=tau)

            def run():
                if isinstance(inference, EP):
                    inference.reset()  # cold: no sites from the previous call
                return float(inference.inference(kern, X, lik, Y01)[1])
            return run

        out["GPy Laplace"] = ("laplace", gpy(Laplace()))
        out["GPy EP (parallel)"] = ("ep", gpy(EP(ep_mode="nested", parallel_updates=True)))
    else:
        out["GPy Laplace"] = ("laplace", None)
        out["GPy EP (parallel)"] = ("ep", None)
    if _have("sklearn"):
        from sklearn.gaussian_process import GaussianProcessClassifier
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel

        gpc = GaussianProcessClassifier(ConstantKernel(sigma, "fixed") * RBF(tau, "fixed"), optimizer=None)
        gpc.fit(X, y)
        base = gpc.base_estimator_
        theta = base.kernel_.theta
        out["sklearn Laplace (logistic)"] = ("laplace", lambda: float(base.log_marginal_likelihood(theta)))
    else:
        out["sklearn Laplace (logistic)"] = ("laplace", None)
    return out


def bench_peers(n, X, y, source, K, ref, repeats) -> list[dict]:
    """Table 2: the current gpbayes beside GPy and scikit-learn, interleaved, each against its own unit."""
    kernel = SquaredExponential(D, parameterisation="fg")
    ours = {
        "laplace": lambda: laplace_approximation(kernel(PSI, X), y, Probit()).log_marginal,
        "ep": lambda: ep_approximation(kernel(PSI, X), y).log_marginal,
    }
    peers = peer_runners(X, y)
    # one timing loop per approximation: ours and its peers interleaved, each against its own unit
    rows = []
    for approx, ours_fn in ours.items():
        names = ["gpbayes"] + [p for p, (a, fn) in peers.items() if a == approx]
        fns = {"gpbayes": ours_fn, **{p: peers[p][1] for p in names[1:]}}
        ratios = {p: [] for p in names}
        times = {p: [] for p in names}
        values = {}
        for r in range(repeats + 1):
            for p in names:
                if fns[p] is None:
                    continue
                tc = chol_time(K)
                t0 = time.perf_counter()
                values[p] = fns[p]()
                t = time.perf_counter() - t0
                if r:
                    ratios[p].append(t / tc)
                    times[p].append(t)
        t_ours = float(np.median(times["gpbayes"]))
        for p in names:
            if fns[p] is None:
                rows.append(dict(n=n, data=source, approximation=approx, implementation=p, status="not installed"))
                continue
            comparable = not p.startswith("sklearn")  # logistic likelihood: another log marginal
            rows.append(dict(
                n=n, data=source, approximation=approx, implementation=p, status="ok", repeats=repeats,
                **summary(ratios[p]), time_ms=round(1e3 * float(np.median(times[p])), 2),
                ratio_to_gpbayes=round(float(np.median(times[p])) / t_ours, 2),
                log_marginal=values[p],
                abs_err=abs(values[p] - ref[approx]) if comparable else float("nan"),
            ))
    return rows


def environment() -> str:
    """CPU, BLAS core type and whether numpy/OpenBLAS were pinned to older code paths (the unit depends on it)."""
    import os

    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        flags = open("/proc/cpuinfo").read()
        cpu += " (AVX-512)" if "avx512f" in flags else ""
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(sorted({f"{d.get('internal_api')} {d.get('version')} {d.get('architecture')}"
                                 for d in threadpool_info() if d.get("user_api") == "blas"}))
    except Exception:  # pragma: no cover
        blas = "unknown BLAS"
    pins = {v: os.environ.get(v) for v in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")}
    pinned = ", ".join(f"{k}={v}" for k, v in pins.items() if v)
    return (f"{cpu}; {os.cpu_count()} CPUs; {blas}; "
            + (f"PINNED code paths ({pinned})" if pinned else "native kernels (no NPY_DISABLE_CPU_FEATURES / OPENBLAS_CORETYPE)"))


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[200, 768, 2000])
    p.add_argument("--repeats", type=int, default=15, help="repeats per row (n <= 768)")
    p.add_argument("--repeats-large", type=int, default=5, help="repeats per row for n > 768")
    p.add_argument("--peer-repeats", type=int, default=5)
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--phases", action="store_true", help="also print the per-phase costs (table 3)")
    p.add_argument("--step", type=float, default=0.1, help="random-walk step sd for warm starts")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--baseline", type=Path, default=None,
                   help="another version's src/gpbayes directory, measured side by side in table 1")
    args = p.parse_args(argv)
    from gpbayes_repro.threads import blas_single_thread

    blas_single_thread()
    impls = [Impl("gpbayes", "gpbayes")]
    if args.baseline is not None:
        impls.append(load_baseline(args.baseline))

    rows, peer_rows, phase_rows = [], [], []
    for n in args.n:
        X, y, source = load_data(n, args.seed)
        K = SquaredExponential(D, parameterisation="fg")(PSI, X)
        chol_time(K)  # warm-up
        ref = converged(K, y)
        reps = args.repeats if n <= 768 else args.repeats_large
        rows += bench_estimate(n, X, y, source, K, ref, reps, args.step, args.seed, impls)
        if args.phases:
            phase_rows += bench_phases(n, X, y, K, reps)
        if not args.no_peers:
            peer_rows += bench_peers(n, X, y, source, K, ref, args.peer_repeats if n <= 768 else 3)

    write_csv(args.out, rows)
    if peer_rows:
        write_csv(args.out.with_name(args.out.stem + "_peers.csv"), peer_rows)

    print("1. One pseudo-marginal estimate (PseudoMarginalTarget call, N_imp = 1)"
          + ("" if impls[-1].has_stopping else "  [baseline: one EP rule (F&G); both its EP rows use it]"))
    head = (f"{'n':>5} {'impl':<8} {'config':<16} {'chol-eq':>7} {'IQR':>13} {'ms':>8} {'chol ms':>8} {'O(n^3)':>6} "
            f"{'iters':>5} {'|logZ - conv| med':>17} {'max':>8}  target (n = 768)")
    print(head)
    print("-" * len(head))
    for r in rows:
        tgt = TARGETS.get(r["config"]) if r["n"] == 768 else None
        note = f"<= {tgt}" if tgt else ""
        print(f"{r['n']:>5} {r['implementation']:<8} {r['config']:<16} {r['chol_equiv']:>7.2f} "
              f"{r['chol_equiv_q25']:>6.2f}-{r['chol_equiv_q75']:<6.2f} {r['time_ms']:>8.1f} "
              f"{r['chol_ms']:>8.2f} {r['n_cubic']:>6.0f} {r['n_iter']:>5.0f} {r['abs_err_median']:>17.1e} "
              f"{r['abs_err_max']:>8.1e}  {note}")
    if peer_rows:
        print("\n2. Deterministic marginal (K build + approximation, cold) beside peers")
        head = (f"{'n':>5} {'approx':<8} {'implementation':<27} {'chol-eq':>7} {'IQR':>13} {'ms':>9} "
                f"{'peer/gpbayes':>12} {'|logZ - conv|':>13}")
        print(head)
        print("-" * len(head))
        for r in peer_rows:
            if r["status"] != "ok":
                print(f"{r['n']:>5} {r['approximation']:<8} {r['implementation']:<27} not installed")
                continue
            err = "n/a (logistic)" if np.isnan(r["abs_err"]) else f"{r['abs_err']:.1e}"
            print(f"{r['n']:>5} {r['approximation']:<8} {r['implementation']:<27} {r['chol_equiv']:>7.2f} "
                  f"{r['chol_equiv_q25']:>6.2f}-{r['chol_equiv_q75']:<6.2f} {r['time_ms']:>9.1f} "
                  f"{r['ratio_to_gpbayes']:>12.2f} {err:>13}")
    if phase_rows:
        write_csv(args.out.with_name(args.out.stem + "_phases.csv"), phase_rows)
        print("\n3. Phases (Chol-eq, median; current code)")
        ns = sorted({r["n"] for r in phase_rows})
        print(f"{'phase':<28}" + "".join(f"{'n = ' + str(n):>12}" for n in ns))
        for name in dict.fromkeys(r["phase"] for r in phase_rows):
            vals = {r["n"]: r["chol_equiv"] for r in phase_rows if r["phase"] == name}
            print(f"{name:<28}" + "".join(f"{vals[n]:>12.3f}" for n in ns))
    print(f"data: {'; '.join(sorted({r['data'] for r in rows}))}; warm step sd {args.step}; "
          f"written to {args.out}")
    print(f"machine: {environment()}")


if __name__ == "__main__":
    main()
