#!/usr/bin/env python
"""Cost of one HMC leapfrog step of the sparse-GP sampler, against M.

One leapfrog step costs one evaluation of the sampler's target
log q*(v, theta) (Hensman et al. 2015, ``gpbayes.sparse.log_q_star``)
together with its gradient w.r.t. (v, theta): ``SparseTarget.logdensity_and_grad``
(K_uu and its Cholesky factor, W = L^-1 K_uf, the Gauss-Hermite quadrature
of the N expectations, the reverse pass through W, L and the kernel).  Its
wall time is reported in seconds and in Cholesky-equivalents: divided by the
time of one ``gpbayes.linalg.cholesky`` of the same M x M K_uu, measured in
the same process.  Timing is round-robin over M (see ``run``) and the
minimum over rounds is reported (the estimate of the intrinsic cost least
disturbed by other processes on a shared machine; the median is in the CSV
too).  BLAS is limited to one thread (``gpbayes_repro.threads.blas_single_thread``).

The expected cost is O(N M^2) (two M x N triangular solves and one
M x N x M product, about 4 N M^2 flops) + O(M^3) (Cholesky and its
backward) + O(N M d) (kernel, its gradient and a dozen element-wise passes
over M x N arrays) + O(N Q) (quadrature, Q = 20 nodes: two log Phi passes
over N Q values for the probit).  The log-log slope of time against M is
fitted over the M of the brief and between consecutive M; it can approach 2
only once the N M^2 term dominates the others.  To show where that happens
the benchmark also times, at the same shapes, the three N M^2 BLAS calls
alone ("NM^2 part") and reports their share of the step, and times the
quadrature alone (the M-independent floor); "v-only" is the evaluation
without the theta-gradient (``grad="v"``: what the Gibbs baseline's HMC on
v pays).  Larger M (256, 512) are added by default to follow the slope
towards its asymptote; they are not in the main fit.

Cost model.  The step's cost is fitted (least squares on relative errors,
i.e. weights 1/t, over every timed (N, M) of the main set) as

    t(N, M) = a N + b N M^2,

the M-independent O(N) floor (quadrature, O(N M d)-type passes whose M-part
is small here, Python overhead per call scales with N through array sizes)
plus the O(N M^2) term of the issue.  Reported: a, b, the fitted share of
each term at every M, the M* = sqrt(a / b) above which the N M^2 term
dominates, and the relative residuals (the O(M^3) Cholesky terms and the
O(N M) terms are not in the model; the residuals show how much that
matters).  With one N the two terms are identified through M alone; pass
several ``--N`` values to check the linearity in N as well.

Data: N points uniform in [-3, 3]^2 with probit labels of sin(x1) + cos(x2);
Z = the first M rows; SE kernel ("ma", isotropic) at psi = (0, 0).

GPflow comparison (issue 16, section 3; ``compare_gpflow``, run first): the
same log q*(v, theta) and gradient by GPflow 2.11 when ``import gpflow`` works
(see ``gpflow_workload``), agreement printed, per M in ``--gpflow-M`` at the
first ``--N``; median over ``--gpflow-rounds`` interleaved rounds, ratio
GPflow time / gpbayes time, Chol-eq in ``scipy.linalg.cho_factor`` units;
written to ``bench_sparse_gpflow.csv``.  Without GPflow it prints
"GPflow not installed: ratio not measured".

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sparse.py

writes ``benchmarks/results/bench_sparse.csv`` and prints the table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.linalg import solve_triangular as scipy_solve_triangular

from gpbayes import kernels, likelihoods, linalg, priors
from gpbayes.sparse import svgp
from gpbayes.sparse.target import SparseTarget, log_q_star

from _common import write_csv

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "bench_sparse.csv"


def make_target(N: int, M: int, seed: int = 0) -> tuple[SparseTarget, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (N, 2))
    f = np.sin(X[:, 0]) + np.cos(X[:, 1])
    y = np.where(rng.uniform(size=N) < 1 / (1 + np.exp(-3 * f)), 1.0, -1.0)
    k = kernels.SquaredExponential(2, parameterisation="ma")
    prior = priors.IndependentPrior((priors.Gamma(2.0, 2.0), priors.Gamma(2.0, 2.0)))
    target = SparseTarget(X, y, X[:M], k, likelihoods.Probit(), prior)
    return target, target.join(rng.normal(size=M), np.zeros(2))


def workloads(N: int, M: int) -> tuple[dict, int]:
    """The timed calls for one M, and the O(n^3) operations one evaluation counts."""
    target, x = make_target(N, M)
    v, psi = target.split(x)
    cond = svgp.whitened_conditional(target.kernel, psi, target.Z, target.X, target.jitter)
    K_uu, L, W = cond.K_uu, cond.L, cond.W
    G = np.random.default_rng(1).normal(size=W.shape)
    mu, var = np.zeros((N, 1)), np.ones((N, 1))
    with linalg.count_ops() as ops:
        target.logdensity_and_grad(x)

    def nm2_part():
        # the three N M^2 operations of an evaluation, alone, at the same shapes:
        # W = L^-1 K_uf, K_uf_bar = L^-T W_bar, L_bar = -K_uf_bar W^T
        A = scipy_solve_triangular(L, G, lower=True, check_finite=False)
        B = scipy_solve_triangular(L, G, lower=True, trans=1, check_finite=False)
        return A, B @ W.T

    fns = {
        "joint": lambda: target.logdensity_and_grad(x),
        "cholesky": lambda: linalg.cholesky(K_uu),
        "v_only": lambda: log_q_star(target, v, psi, grad="v"),
        "quadrature": lambda: svgp.expected_log_lik(target.likelihood, target.y, mu, var, target.n_quad),
        "nm2_part": nm2_part,
    }
    return fns, ops.cubic


def run(N: int, Ms: list[int], rounds: int, seconds_per_call: float) -> list[dict]:
    """Round-robin timing: in each round every (M, workload) is timed once as the
    mean of a batch of calls lasting about ``seconds_per_call``; the result is the
    minimum over rounds (and the median, for the CSV).  Interleaving spreads the
    slow periods of a shared machine over all M instead of a few."""
    setups = {M: workloads(N, M) for M in Ms}
    batch = {}
    for M, (fns, _) in setups.items():  # batch sizes from one warm-up call each
        for name, fn in fns.items():
            fn()
            t0 = time.perf_counter()
            fn()
            batch[M, name] = max(1, int(seconds_per_call / max(time.perf_counter() - t0, 1e-7)))
    samples = {key: [] for key in batch}
    for _ in range(rounds):
        for M, (fns, _) in setups.items():
            for name, fn in fns.items():
                n = batch[M, name]
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                samples[M, name].append((time.perf_counter() - t0) / n)
    rows = []
    for M, (_, n_cubic) in setups.items():
        t = {name: float(np.min(samples[M, name])) for name in setups[M][0]}
        rows.append({
            "N": N, "M": M,
            "seconds_per_leapfrog": t["joint"],
            "seconds_per_leapfrog_median": float(np.median(samples[M, "joint"])),
            "cholesky_seconds": t["cholesky"],
            "cholesky_equivalents": t["joint"] / t["cholesky"],
            "seconds_nm2_part": t["nm2_part"],
            "share_nm2_part": t["nm2_part"] / t["joint"],
            "seconds_v_only": t["v_only"],
            "seconds_quadrature": t["quadrature"],
            "counted_cubic_ops": n_cubic,
        })
    return rows


def gpflow_workload(target: SparseTarget, x: np.ndarray):
    """GPflow 2.11's SVGP-for-MCMC equivalent of ``logdensity_and_grad`` (or None
    if ``import gpflow`` fails): ``gpflow.conditionals.base_conditional(..., white=True,
    q_sqrt=None)`` (what ``conditional`` calls, here with K_uu + jitter a I as
    gpbayes) gives p(f_n | u = L v) (Hensman et al. 2015, whitened), the
    same Gauss-Hermite nodes and log Phi (``Normal.log_cdf``, TFP's log_ndtr) give the
    quadrature, ``tf.GradientTape`` the gradient w.r.t. v and the kernel's
    unconstrained (log) parameters, inside one ``tf.function``; the prior's
    value and gradient (numpy, gpbayes's own) are added to both sides.
    """
    try:
        import gpflow
        import tensorflow as tf
        import tensorflow_probability as tfp
    except Exception:  # noqa: BLE001 -- any import failure means "not installed"
        return None
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    gpflow.config.set_default_float(np.float64)
    gpflow.config.set_default_jitter(target.jitter)
    gpflow.config.set_default_positive_bijector("exp")  # unconstrained = log, as psi
    v, psi = target.split(x)
    M = target.n_inducing
    kern = gpflow.kernels.SquaredExponential(variance=float(np.exp(2 * psi[1])),
                                             lengthscales=float(np.exp(psi[0])))
    Z = gpflow.inducing_variables.InducingPoints(target.Z)
    Xt = tf.constant(target.X)
    yt = tf.constant(target.y[:, None])
    t, w = svgp.gauss_hermite(target.n_quad)
    tt, wt = tf.constant(t[None, :]), tf.constant(w[:, None])
    vv = tf.Variable(v)
    ell, var_u = kern.lengthscales.unconstrained_variable, kern.variance.unconstrained_variable
    const = 0.5 * M * float(np.log(2 * np.pi))
    eye = tf.eye(M, dtype=tf.float64)
    # log Phi: TFP's log_ndtr (special_math), the same asymptotic series as scipy's
    std_normal = tfp.distributions.Normal(tf.constant(0.0, tf.float64), tf.constant(1.0, tf.float64))

    @tf.function
    def value_and_grad():
        with tf.GradientTape() as tape:
            # what gpflow.conditionals.conditional does, with gpbayes's jitter a I in K_uu
            Kmm = gpflow.covariances.Kuu(Z, kern, jitter=0.0) + target.jitter * kern.variance * eye
            Kmn = gpflow.covariances.Kuf(Z, kern, Xt)
            Knn = kern(Xt, full_cov=False)
            mu, var = gpflow.conditionals.base_conditional(Kmn, Kmm, Knn, vv, full_cov=False, q_sqrt=None,
                                                           white=True)
            F = mu + tf.sqrt(tf.maximum(var, svgp.VAR_FLOOR)) * tt  # (N, Q)
            val = tf.reduce_sum(std_normal.log_cdf(yt * F) @ wt) - 0.5 * tf.reduce_sum(vv * vv) - const
        g_v, g_l, g_a = tape.gradient(val, [vv, ell, var_u])
        return val, g_v, g_l, g_a

    prior = target.prior

    def fn():
        val, g_v, g_l, g_a = value_and_grad()
        # psi_1 = log lengthscale = GPflow's unconstrained lengthscale; psi_2 = (log variance) / 2
        g_psi = np.array([float(g_l), 2.0 * float(g_a)]) + prior.grad_log_density(psi)
        return float(val) + float(prior.log_density(psi)), np.concatenate([g_v.numpy().ravel(), g_psi])

    return fn


def environment() -> str:
    """The code paths the timings depend on: library versions, the BLAS kernels chosen at run
    time (threadpoolctl) and whether numpy's AVX-512 dispatch or OpenBLAS's core type is pinned
    (``tests/conftest.py`` pins them for the bit-for-bit tests; a benchmark should not)."""
    import os
    import platform

    import scipy
    from threadpoolctl import threadpool_info

    blas = sorted({f"{d.get('internal_api')} {d.get('version')} {d.get('architecture')}"
                   for d in threadpool_info() if d.get("user_api") == "blas"})
    pinned = {k: os.environ[k] for k in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE") if k in os.environ}
    return (f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"BLAS: {'; '.join(blas)}; CPU-feature pins: {pinned or 'none (native kernels)'}")


def compare_gpflow(N: int, Ms: list[int], rounds: int, seconds_per_call: float) -> list[dict]:
    """gpbayes vs GPflow per gradient of log q*, interleaved rounds, median over rounds."""
    from scipy.linalg import cho_factor

    setups = {}
    for M in Ms:
        target, x = make_target(N, M)
        gf = gpflow_workload(target, x)
        if gf is None:
            print("GPflow not installed: ratio not measured")
            return []
        v0, g0 = target.logdensity_and_grad(x)
        v1, g1 = gf()
        agree = max(abs(v1 - v0) / abs(v0), float(np.max(np.abs(g1 - g0)) / np.max(np.abs(g0))))
        K = target.kernel(x[-2:], target.Z)
        K[np.diag_indices_from(K)] += target.jitter
        setups[M] = ({"gpbayes": lambda t=target, x=x: t.logdensity_and_grad(x), "gpflow": gf,
                      "cho_factor": lambda K=K: cho_factor(K, lower=True, check_finite=False)}, agree)
    batch = {}
    for M, (fns, _) in setups.items():
        for name, fn in fns.items():
            fn()
            t0 = time.perf_counter()
            fn()
            batch[M, name] = max(1, int(seconds_per_call / max(time.perf_counter() - t0, 1e-7)))
    samples = {key: [] for key in batch}
    for _ in range(rounds):
        for M, (fns, _) in setups.items():
            for name, fn in fns.items():
                n = batch[M, name]
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                samples[M, name].append((time.perf_counter() - t0) / n)
    rows = []
    import gpflow
    import tensorflow as tf
    import tensorflow_probability as tfp

    print(environment())
    print(f"GPflow {gpflow.__version__}, TensorFlow {tf.__version__}, TFP {tfp.__version__}")
    print(f"gpbayes vs GPflow, one log q*(v, theta) + gradient, N = {N}, probit, d = 2, Q = 20, "
          f"1 thread; median over {rounds} interleaved rounds (min in brackets); "
          f"Chol-eq = time / one scipy.linalg.cho_factor(M x M)")
    print(f"{'M':>5} {'gpbayes ms':>16} {'GPflow ms':>16} {'ratio GPflow/gpbayes':>21} "
          f"{'gpbayes Chol-eq':>15} {'GPflow Chol-eq':>14} {'max rel diff':>12}")
    for M, (_, agree) in setups.items():
        med = {k: float(np.median(samples[M, k])) for k in setups[M][0]}
        mn = {k: float(np.min(samples[M, k])) for k in setups[M][0]}
        r = {"N": N, "M": M, "gpbayes_ms": 1e3 * med["gpbayes"], "gpflow_ms": 1e3 * med["gpflow"],
             "gpbayes_ms_min": 1e3 * mn["gpbayes"], "gpflow_ms_min": 1e3 * mn["gpflow"],
             "ratio_median": med["gpflow"] / med["gpbayes"], "ratio_min": mn["gpflow"] / mn["gpbayes"],
             "gpbayes_chol_eq": med["gpbayes"] / med["cho_factor"],
             "gpflow_chol_eq": med["gpflow"] / med["cho_factor"], "max_rel_diff": agree}
        rows.append(r)
        print(f"{M:>5} {r['gpbayes_ms']:7.2f} ({r['gpbayes_ms_min']:6.2f}) {r['gpflow_ms']:7.2f} "
              f"({r['gpflow_ms_min']:6.2f}) {r['ratio_median']:12.2f} ({r['ratio_min']:5.2f}) "
              f"{r['gpbayes_chol_eq']:15.0f} {r['gpflow_chol_eq']:14.0f} {agree:12.1e}")
    return rows


def fit_cost_model(N, M, t) -> dict:
    """Least squares on relative errors for t = a N + b N M^2 (weights 1/t)."""
    N, M, t = (np.asarray(x, dtype=float) for x in (N, M, t))
    A = np.column_stack([N, N * M**2]) / t[:, None]
    (a, b), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    pred = a * N + b * N * M**2
    return {"a": float(a), "b": float(b), "m_star": float(np.sqrt(a / b)) if a > 0 and b > 0 else float("nan"),
            "pred": pred, "rel_resid": (t - pred) / t}


def loglog_slope(M, t) -> float:
    return float(np.polyfit(np.log(M), np.log(t), 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", type=int, nargs="+", default=[2000],
                    help="data sizes (the cost model is fitted over all of them)")
    ap.add_argument("--M", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--extra-M", type=int, nargs="*", default=[256, 512],
                    help="larger M, shown to follow the slope towards its asymptote (not in the main fit)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seconds-per-call", type=float, default=0.03,
                    help="length of each timed batch of calls")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--gpflow-M", type=int, nargs="*", default=[16, 32, 64, 128, 256],
                    help="M of the gpbayes vs GPflow comparison (N = the first --N)")
    ap.add_argument("--gpflow-rounds", type=int, default=15)
    ap.add_argument("--gpflow-only", action="store_true", help="only the GPflow comparison")
    args = ap.parse_args(argv)

    from gpbayes_repro.threads import blas_single_thread

    blas_single_thread()
    if args.gpflow_M:
        gf_rows = compare_gpflow(args.N[0], args.gpflow_M, args.gpflow_rounds, args.seconds_per_call)
        if gf_rows:
            write_csv(gf_rows, args.out.with_name("bench_sparse_gpflow.csv"))
    if args.gpflow_only:
        return
    rows = []
    for N in args.N:
        rows += run(N, args.M + args.extra_M, args.rounds, args.seconds_per_call)
    main_rows = [r for r in rows if r["M"] in args.M]
    fit = fit_cost_model([r["N"] for r in main_rows], [r["M"] for r in main_rows],
                         [r["seconds_per_leapfrog"] for r in main_rows])
    a, b = fit["a"], fit["b"]
    for r in rows:
        lin, quad = a * r["N"], b * r["N"] * r["M"] ** 2
        r.update(fit_aN_seconds=lin, fit_bNM2_seconds=quad, fit_aN_chol_equiv=lin / r["cholesky_seconds"],
                 fit_bNM2_chol_equiv=quad / r["cholesky_seconds"], fit_share_NM2=quad / (lin + quad),
                 fit_rel_residual=(r["seconds_per_leapfrog"] - lin - quad) / r["seconds_per_leapfrog"],
                 fit_a=a, fit_b=b, fit_m_star=fit["m_star"])

    print(f"sparse-GP HMC leapfrog step = target + gradient w.r.t. (v, theta); probit, "
          f"d = 2, Q = 20; 1 BLAS thread; minimum over {args.rounds} interleaved rounds")
    header = (f"{'N':>5} {'M':>5} {'s/leapfrog':>11} {'chol(M) s':>10} {'chol-equiv':>10} {'NM^2 part s':>11} "
              f"{'NM^2 share':>10} {'quad s':>8} {'fit aN s':>9} {'fit bNM2 s':>10} {'aN chol':>8} "
              f"{'bNM2 chol':>9} {'fit share':>9} {'resid':>6} {'local slope':>11}")
    print(header)
    for N in args.N:
        sub = [r for r in rows if r["N"] == N]
        Ms = [r["M"] for r in sub]
        t = np.array([r["seconds_per_leapfrog"] for r in sub])
        t_nm2 = np.array([r["seconds_nm2_part"] for r in sub])
        for i, r in enumerate(sub):
            r["local_slope"] = float("nan") if i == 0 else loglog_slope(Ms[i - 1:i + 1], t[i - 1:i + 1])
            local = "" if np.isnan(r["local_slope"]) else f"{r['local_slope']:.2f}"
            print(f"{N:>5} {r['M']:>5} {r['seconds_per_leapfrog']:11.5f} {r['cholesky_seconds']:10.2e} "
                  f"{r['cholesky_equivalents']:10.0f} {r['seconds_nm2_part']:11.5f} {r['share_nm2_part']:10.2f} "
                  f"{r['seconds_quadrature']:8.5f} {r['fit_aN_seconds']:9.5f} {r['fit_bNM2_seconds']:10.5f} "
                  f"{r['fit_aN_chol_equiv']:8.0f} {r['fit_bNM2_chol_equiv']:9.0f} {r['fit_share_NM2']:9.2f} "
                  f"{r['fit_rel_residual']:6.2f} {local:>11}")
        main_idx = [i for i, m in enumerate(Ms) if m in args.M]
        slope = loglog_slope([Ms[i] for i in main_idx], t[main_idx])
        slope_nm2 = loglog_slope([Ms[i] for i in main_idx], t_nm2[main_idx])
        print(f"N = {N}: log-log slope of time vs M, M in {args.M}: {slope:.2f} (whole step), "
              f"{slope_nm2:.2f} (its N M^2 part alone)")
        if len(Ms) > len(main_idx):
            print(f"N = {N}: log-log slope over the largest M {Ms[-2:]}: {loglog_slope(Ms[-2:], t[-2:]):.2f} "
                  f"(whole step), {loglog_slope(Ms[-2:], t_nm2[-2:]):.2f} (N M^2 part)")
        for r in sub:
            r["loglog_slope_main"] = slope
            r["loglog_slope_main_nm2_part"] = slope_nm2
    print(f"fit over N in {args.N}, M in {args.M}: t = a N + b N M^2 with a = {a:.3e} s, b = {b:.3e} s; "
          f"the N M^2 term dominates for M > M* = sqrt(a/b) = {fit['m_star']:.0f}; "
          f"max |relative residual| {np.max(np.abs(fit['rel_resid'])):.2f} (main M), "
          f"{max(abs(r['fit_rel_residual']) for r in rows):.2f} (all M, extrapolated)")

    write_csv(rows, args.out)


if __name__ == "__main__":
    main()
