"""gpbayes against NumPyro's NUTS on the same posteriors (issue 24 §5): ESS per CPU-second and agreement.

Run it in the peer venv (NumPyro, JAX and ArviZ beside an editable gpbayes; recipe in
benchmarks/README.md) -- NumPyro is never a dependency of gpbayes or its tests:

    /work/peer-venv/bin/python benchmarks/bench_peers.py --chains 2 --warmup 200 --draws 300

Problem (so far): Boston Housing ARD regression (``data/raw/Boston.csv``, n = 506, d = 13, 15
log-hyperparameters), the model ``gpbayes.GPRegressor(X, y)`` builds: covariates and target
standardised, F&G's eq. 5 squared exponential with one lengthscale per covariate, and its default
prior on psi = log theta (tau_i ~ Gamma(1, 1/sqrt(d)), sigma ~ Gamma(1.1, 0.1), lambda ~ Gamma(1, 1),
shape/rate; the density of psi includes the Jacobian).  NumPyro samples the same psi (an improper
flat site plus a ``factor`` with the same log prior) with the same likelihood
``MultivariateNormal(0, K + lambda I)``, in float64.

Methods:

``gpbayes-nuts``
    ``gpbayes.mcmc.nuts.run_chain`` with its defaults (issue 24): multinomial NUTS, Stan's windowed
    warm-up (diagonal mass matrix from the identity, dual averaging to 0.8), the fused gradient.
``gpbayes-nuts-before``
    what ``gb.sample(model, method="nuts")`` ran before issue 24: H&G's slice NUTS, dense mass
    (-H)^-1 at the MAP, dual averaging of the step size only (delta 0.65, t0 30), the per-parameter
    gradient.
``numpyro-nuts``
    ``numpyro.infer.NUTS`` with its defaults (diagonal mass, target 0.8, max tree depth 10).

Every chain of every method starts from the same point (``regression.default_init`` plus 0.3 N(0, I),
one seeded draw per chain); chains run one after another in this process, with one BLAS/XLA thread.
CPU time is the process's (``time.process_time``: all threads).  NumPyro compiles its sampler once per
shape: a first chain of the same length is run and discarded, and its CPU time minus the mean of the
measured chains is reported as compilation.  Per gradient: the median CPU time of one value and
gradient of the log posterior (gpbayes: ``log_posterior_value_and_grad``; NumPyro: its jitted
``potential_fn``).  Diagnostics by ArviZ for both: rank-normalised split R-hat, bulk and tail ESS,
MCSE of the mean.  |z| = |mean_a - mean_b| / sqrt(MCSE_a^2 + MCSE_b^2) per log-hyperparameter.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1 --xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import boston, cpu_name  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def load_average() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:  # pragma: no cover
        return "?"


def median_cpu(fn, reps: int = 30) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return float(np.median(ts))


# ---------------------------------------------------------------------------
# gpbayes
# ---------------------------------------------------------------------------
def run_gpbayes(model, starts, n_warmup, n_draws, seed, before: bool):
    from threadpoolctl import threadpool_limits

    from gpbayes import linalg, regression
    from gpbayes.finite_differences import hessian_from_gradients
    from gpbayes.mcmc import hmc, nuts
    from gpbayes.posterior import log_posterior_value_and_grad

    gp = model.gp
    if before:
        gp = regression.GPRegression(gp.X, gp.y, gp.kernel, gradient="per_parameter")
    vg = log_posterior_value_and_grad(gp, model.prior)
    draws, steps, div, cpu = [], [], 0, 0.0
    setup_cpu = 0.0
    with threadpool_limits(limits=1):
        per_grad = median_cpu(lambda: vg(starts[0]))
        if before:  # gb.sample's set-up then: the MAP and (-H)^-1 there (counted as set-up, not sampling)
            t0 = time.process_time()
            fit = regression.fit_type2_ml(gp, np.random.default_rng(seed), n_restarts=2, log_prior=model.prior)
            H = hessian_from_gradients(lambda p: vg(p)[1], fit.psi)
            mass = hmc.mass_matrix("dense", linalg.inverse_of_negative_definite(H))
            setup_cpu = time.process_time() - t0
        for c, start in enumerate(starts):
            rng = np.random.default_rng([seed, c])
            t0 = time.process_time()
            if before:
                ch = nuts.run_chain(rng, start, vg, mass, n_draws=n_draws, n_adapt=n_warmup, step_size=None,
                                    variant="slice", adaptation="step_size")
            else:
                ch = nuts.run_chain(rng, start, vg, n_draws=n_draws, n_adapt=n_warmup)
            cpu += time.process_time() - t0
            draws.append(ch.draws)
            steps.append(ch.stats["n_steps"])
            div += int(np.sum(ch.stats["diverging"]))
    return {"draws": np.stack(draws), "cpu": cpu, "compile": setup_cpu, "per_grad": per_grad,
            "steps": float(np.mean(np.concatenate(steps))), "divergences": div}


# ---------------------------------------------------------------------------
# NumPyro
# ---------------------------------------------------------------------------
def run_numpyro(model, starts, n_warmup, n_draws, seed):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import gammaln
    from numpyro.distributions import constraints
    from numpyro.infer import MCMC, NUTS
    from numpyro.infer.util import initialize_model

    from gpbayes.priors import Gamma

    numpyro.enable_x64()
    comps = model.prior.components
    if not all(isinstance(c, Gamma) for c in comps):
        raise SystemExit("bench_peers: the NumPyro model mirrors Gamma priors only")
    shape = jnp.array([c.shape for c in comps])
    rate = jnp.array([c.rate for c in comps])
    X, y = jnp.asarray(model.X), jnp.asarray(model.y)
    n, d = model.X.shape
    p = len(comps)

    def gp_model():
        psi = numpyro.sample("psi", dist.ImproperUniform(constraints.real_vector, (), event_shape=(p,)))
        # the same density of psi = log theta as gpbayes.priors.Gamma (Jacobian included)
        numpyro.factor("log_prior", jnp.sum(shape * jnp.log(rate) - gammaln(shape) + shape * psi - rate * jnp.exp(psi)))
        Xs = X / jnp.exp(psi[:d])
        sq = jnp.sum(Xs**2, 1)[:, None] + jnp.sum(Xs**2, 1)[None, :] - 2.0 * Xs @ Xs.T
        K = jnp.exp(psi[d]) * jnp.exp(-0.5 * jnp.maximum(sq, 0.0)) + jnp.exp(psi[d + 1]) * jnp.eye(n)
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(n), covariance_matrix=K), obs=y)

    info = initialize_model(jax.random.PRNGKey(0), gp_model)
    pot = jax.jit(jax.value_and_grad(info.potential_fn))
    per_grad = median_cpu(lambda: jax.block_until_ready(pot({"psi": jnp.asarray(starts[0])})))

    mcmc = MCMC(NUTS(gp_model), num_warmup=n_warmup, num_samples=n_draws, num_chains=1, progress_bar=False)

    def one(c, start):
        t0 = time.process_time()
        mcmc.run(jax.random.PRNGKey(seed * 1000 + c), init_params={"psi": jnp.asarray(start)},
                 extra_fields=("num_steps", "diverging"))
        jax.block_until_ready(mcmc.get_samples())
        return time.process_time() - t0

    t_first = one(999, starts[0])  # compiles; discarded
    draws, steps, div, times = [], [], 0, []
    for c, start in enumerate(starts):
        times.append(one(c, start))
        draws.append(np.asarray(mcmc.get_samples()["psi"]))
        ex = mcmc.get_extra_fields()
        steps.append(np.asarray(ex["num_steps"]))
        div += int(np.sum(np.asarray(ex["diverging"])))
    return {"draws": np.stack(draws), "cpu": float(sum(times)), "compile": max(t_first - float(np.mean(times)), 0.0),
            "per_grad": per_grad, "steps": float(np.mean(np.concatenate(steps))), "divergences": div}


# ---------------------------------------------------------------------------
def summarise(name, res, names):
    import arviz as az

    post = az.convert_to_dataset({"psi": res["draws"]}, coords={"param": names}, dims={"psi": ["param"]})
    ess_b = az.ess(post, method="bulk")["psi"].values
    ess_t = az.ess(post, method="tail")["psi"].values
    rhat = az.rhat(post)["psi"].values
    mcse = az.mcse(post, method="mean")["psi"].values
    flat = res["draws"].reshape(-1, res["draws"].shape[-1])
    return {"name": name, "mean": flat.mean(0), "sd": flat.std(0, ddof=1), "mcse": mcse, "ess_bulk": ess_b,
            "ess_tail": ess_t, "rhat": rhat, **res}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--methods", nargs="+", default=["gpbayes-nuts", "numpyro-nuts"],
                    choices=["gpbayes-nuts", "gpbayes-nuts-before", "numpyro-nuts"])
    ap.add_argument("--out", type=Path, help="also write the report to this file")
    args = ap.parse_args(argv)

    import gpbayes as gb
    from gpbayes import regression

    X, y = boston()
    model = gb.GPRegressor(X, y)
    names = model.param_names
    rng = np.random.default_rng(args.seed)
    psi0 = regression.default_init(model.gp)
    starts = [psi0 + 0.3 * rng.standard_normal(psi0.size) for _ in range(args.chains)]

    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    out(f"bench_peers: Boston Housing ARD regression (n = {model.n}, d = {X.shape[1]}, {len(names)} log-hyperparameters), "
        f"{args.chains} chains x ({args.warmup} + {args.draws}), sequential, one BLAS/XLA thread")
    out(f"CPU: {cpu_name()}, {os.cpu_count()} cores; load average at start {load_average()} (machine shared)")
    versions = {"numpy": np.__version__}
    try:
        import arviz
        versions["arviz"] = arviz.__version__
        import jax
        import numpyro
        versions.update(numpyro=numpyro.__version__, jax=jax.__version__)
    except ImportError:
        pass
    out("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    results = []
    for m in args.methods:
        t0 = time.time()
        if m == "numpyro-nuts":
            try:
                res = run_numpyro(model, starts, args.warmup, args.draws, args.seed)
            except ImportError as err:
                out(f"{m}: not installed ({err})")
                continue
        else:
            res = run_gpbayes(model, starts, args.warmup, args.draws, args.seed, before=m.endswith("before"))
        results.append(summarise(m, res, names))
        out(f"{m}: done in {time.time() - t0:.0f} s wall, load average {load_average()}")

    out()
    out(f"{'method':22s} {'min bulk ESS':>12s} {'min tail ESS':>12s} {'max R-hat':>9s} {'CPU-s':>8s} "
        f"{'compile/setup CPU-s':>19s} {'ms/grad':>8s} {'steps/draw':>10s} {'div':>4s} {'ESS/CPU-s':>9s}")
    for r in results:
        out(f"{r['name']:22s} {r['ess_bulk'].min():12.0f} {r['ess_tail'].min():12.0f} {r['rhat'].max():9.3f} "
            f"{r['cpu']:8.1f} {r['compile']:19.1f} {1e3 * r['per_grad']:8.2f} {r['steps']:10.1f} "
            f"{r['divergences']:4d} {r['ess_bulk'].min() / r['cpu']:9.3f}")
    peer = next((r for r in results if r["name"] == "numpyro-nuts"), None)
    if peer is not None:
        out()
        for r in results:
            if r is peer:
                continue
            ratio = (r["ess_bulk"].min() / r["cpu"]) / (peer["ess_bulk"].min() / peer["cpu"])
            z = np.abs(r["mean"] - peer["mean"]) / np.sqrt(r["mcse"] ** 2 + peer["mcse"] ** 2)
            out(f"{r['name']} / numpyro-nuts, min bulk ESS per CPU-s: {ratio:.2f}x; "
                f"max |z| of the posterior means: {z.max():.2f} ({names[int(np.argmax(z))]})")
    out()
    head = f"{'parameter':16s}" + "".join(f" {r['name'] + ' mean (MCSE)':>30s} {'sd':>6s} {'ESS':>6s}" for r in results)
    out(head + ("   |z|" if peer is not None and len(results) > 1 else ""))
    for i, nm in enumerate(names):
        row = f"{nm:16s}"
        for r in results:
            row += f" {r['mean'][i]:>21.3f} ({r['mcse'][i]:.3f}) {r['sd'][i]:6.3f} {r['ess_bulk'][i]:6.0f}"
        if peer is not None and len(results) > 1:
            zs = [abs(r["mean"][i] - peer["mean"][i]) / math.hypot(r["mcse"][i], peer["mcse"][i])
                  for r in results if r is not peer]
            row += "  " + " ".join(f"{z:4.1f}" for z in zs)
        out(row)
    out(f"load average at end {load_average()}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
