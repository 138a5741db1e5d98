"""Xiong et al. AMIS experiments, stages 1-3: set-up (Gaussian approximation at the mode), blocks of replicates of each sampler, reference runs.

The AMIS/MH/slice target is ``gpbayes.posterior.log_posterior`` and the HMC/NUTS one
``log_posterior_value_and_grad``: log p(y | psi) + log p(psi), -inf where C cannot be
factorised or an extreme psi overflows the kernel.
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr

from gpbayes import amis as amis_mod
from gpbayes_repro.threads import blas_single_thread
from gpbayes import linalg, priors
from gpbayes_repro import io
from gpbayes import rng as rng_mod
from gpbayes.estimators.importance import PseudoMarginalTarget
from gpbayes.finite_differences import hessian_from_gradients, hessian_from_values
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.mcmc import hmc, nuts, pseudo_marginal, random_walk
from gpbayes.mcmc import slice as slice_mod
from gpbayes.posterior import log_posterior, log_posterior_value_and_grad
from gpbayes.regression import GPRegression, fit_type2_ml

from ... import builders, convergence, trouble
from ...indices import block_replicates

__all__ = [
    "REGRESSION_SAMPLERS",
    "family",
    "parse_sampler",
    "sampler_cost",
    "block_replicates",
    "load_data",
    "build_prior",
    "regression_model",
    "classification_target",
    "setup",
    "thin_indices",
    "run_block",
    "bookkeeping_timings",
    "reference",
    "classification_reference",
]


#: Table 4's regression samplers (AMIS family, MH family, HMC family, slice)
REGRESSION_SAMPLERS = (
    "amis", "amis_d", "mamis", "mamis_d", "mamis_p", "amis_mamis",
    "mh_i", "mh_d", "mh_h",
    "hmc_i", "hmc_d", "hmc_h", "nuts_i", "nuts_d", "nuts_h", "nutsda_i", "nutsda_d", "nutsda_h",
    "slice",
)
_MASS = {"i": "identity", "d": "diagonal", "h": "dense"}


def family(sampler: str) -> str:
    """'is' (AMIS/MAMIS), 'mh', 'hmc' (HMC/NUTS/NUTS-DA), 'slice', 'pm_amis', 'pm_mh'."""
    if sampler.startswith("pm_"):
        return sampler.rsplit("_", 2)[0]
    head = sampler.split("_")[0]
    return {"amis": "is", "mamis": "is", "mh": "mh", "hmc": "hmc", "nuts": "hmc", "nutsda": "hmc",
            "slice": "slice"}[head]


def parse_sampler(sampler: str) -> dict:
    """Name -> spec.  Regression: see REGRESSION_SAMPLERS.  Classification: pm_amis_<la|ep>_<N_imp>, pm_mh_..."""
    if sampler.startswith("pm_"):
        parts = sampler.split("_")
        if len(parts) != 4 or parts[1] not in ("amis", "mh") or parts[2] not in ("la", "ep") or not parts[3].isdigit():
            raise ValueError(f"unknown classification sampler {sampler!r}: use pm_<amis|mh>_<la|ep>_<N_imp>")
        return {"task": "classification", "method": f"pm_{parts[1]}",
                "approx": {"la": "laplace", "ep": "ep"}[parts[2]], "n_imp": int(parts[3])}
    if sampler not in REGRESSION_SAMPLERS:
        raise ValueError(f"unknown regression sampler {sampler!r}: one of {REGRESSION_SAMPLERS}")
    head, _, tail = sampler.partition("_")
    if head in ("amis", "mamis"):
        if tail == "mamis":
            return {"task": "regression", "method": "amis_mamis", "covariance": "full"}
        if tail == "p":  # MAMIS-P: regularised MAMIS (full covariance, as run in the paper)
            return {"task": "regression", "method": "mamis_p", "covariance": "full"}
        return {"task": "regression", "method": head, "covariance": "diagonal" if tail == "d" else "full"}
    if head == "slice":
        return {"task": "regression", "method": "slice"}
    return {"task": "regression", "method": head, "matrix": tail}


def sampler_cost(method: str, n_cubic_measured, n_grad_evals=None):
    """O(n^3) operations per draw in the paper's units (Sec. 4.4)."""
    if method in ("hmc", "nuts", "nutsda"):
        return hmc.PAPER_CUBIC_PER_GRAD_EVAL * np.asarray(n_grad_evals, dtype=float)
    return np.asarray(n_cubic_measured, dtype=float)


# ---------------------------------------------------------------------------
# data, models, priors
# ---------------------------------------------------------------------------
def load_data(ds: xr.Dataset, n_max: int | None, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """X, y (regression target standardised), with a random subsample of n_max rows if n > n_max."""
    X = np.asarray(ds["X"].values, dtype=float)
    y = np.asarray(ds["y"].values, dtype=float)
    name = str(ds.attrs.get("name", ""))
    n_full = X.shape[0]
    if n_max is not None and n_full > int(n_max):
        idx = np.sort(rng_mod.stream(seed, "amis", "subsample", name).choice(n_full, int(n_max), replace=False))
        X, y = X[idx], y[idx]
    if ds.attrs.get("task") == "regression":
        y = (y - y.mean()) / y.std()
    info = {"dataset": name, "n": int(X.shape[0]), "n_full": int(n_full), "d": int(X.shape[1]),
            "stand_in": int(ds.attrs.get("stand_in", 0) or 0)}
    return X, y, info


def build_prior(n_scale: int, d: int, cfg: dict, noise: bool) -> priors.IndependentPrior:
    """tau_r ~ G(a, b/sqrt(d)), sigma ~ G(.,.), lambda ~ G(.,.) (shape/rate), the same for every sampler."""
    p = cfg["priors"]
    comps = [builders.prior(p["scale"], d)] * n_scale + [builders.prior(p["amplitude"], d)]
    if noise:
        comps.append(builders.prior(p["noise_variance"], d))
    return priors.IndependentPrior(tuple(comps))


def regression_model(X, y, kernel: str, cfg: dict):
    k = SquaredExponential(X.shape[1], ard=kernel == "ard", parameterisation="amis")
    # the gradient of the code the recorded results were made with, to the bit (issue 24 made "fused" the
    # default): the HMC/NUTS chains, the mode searches and the FD Hessians do not move
    model = GPRegression(X, y, k, gradient="per_parameter")
    return model, build_prior(k.n_scale, X.shape[1], cfg, noise=True)




def classification_target(X, y, kernel: str, cfg: dict, approx: str, n_imp: int) -> PseudoMarginalTarget:
    k = SquaredExponential(X.shape[1], ard=kernel == "ard", parameterisation="amis", nugget=cfg["nugget"])
    prior = build_prior(k.n_scale, X.shape[1], cfg, noise=False)
    return PseudoMarginalTarget(X, y, k, Probit(), prior, approx=approx, n_imp=n_imp, ep_mode=cfg["ep_mode"])


def _setup_modes(ds, X, y, kernel, cfg, settings, rng):
    """{approx: (mode, (-H)^-1)} and the parameter names, for ``setup``."""
    from scipy import optimize  # here, not at the top: the replicate jobs (amis_run) never optimise

    out = {}
    if ds.attrs.get("task") == "regression":
        model, prior = regression_model(X, y, kernel, cfg)
        names = model.param_names
        ml = fit_type2_ml(model, rng, n_restarts=settings["ml_restarts"], log_prior=prior)

        value_and_grad = log_posterior_value_and_grad(model, prior)
        H = hessian_from_gradients(lambda psi: value_and_grad(psi)[1], ml.psi)
        out["exact"] = (ml.psi, linalg.inverse_of_negative_definite(H))
    else:
        for approx in ("laplace", "ep"):
            tgt = classification_target(X, y, kernel, cfg, approx, 1)
            names = tgt.kernel.param_names

            def negf(psi):
                v = tgt.approx_log_posterior(psi)
                return -v if np.isfinite(v) else 1e300

            x0 = np.zeros(len(names))
            best = None
            for r in range(settings["ml_restarts"]):
                start = x0 if r == 0 else x0 + rng.standard_normal(x0.size)
                res = optimize.minimize(negf, start, method="BFGS", options={"maxiter": 200})
                if best is None or res.fun < best.fun:
                    best = res
            H = hessian_from_values(lambda p: -negf(p), best.x)
            out[approx] = (best.x, linalg.inverse_of_negative_definite(H))
    return out, names


def setup(ds: xr.Dataset, kernel: str, cfg: dict, settings: dict, seed: int) -> xr.Dataset:
    """Posterior mode m and (-H)^{-1} (regression: exact marginal; classification: LA and EP marginals)."""
    X, y, info = load_data(ds, settings.get("n_max"), seed)
    rng = rng_mod.stream(seed, "amis", "setup", info["dataset"], kernel)
    t0 = time.perf_counter()
    with linalg.count_ops() as ops:  # numerical trouble of the mode searches, recorded below
        out, names = _setup_modes(ds, X, y, kernel, cfg, settings, rng)
    approxs = list(out)
    return xr.Dataset(
        {"mode": (("approx", "param"), np.stack([out[a][0] for a in approxs])),
         "cov": (("approx", "param", "param2"), np.stack([out[a][1] for a in approxs]))},
        coords={"approx": approxs, "param": list(names), "param2": list(names)},
        attrs={**info, "kernel": kernel, "task": str(ds.attrs.get("task")), "setup_seconds": time.perf_counter() - t0,
               **ops.trouble()},
    )


# ---------------------------------------------------------------------------
# one replicate of one sampler
# ---------------------------------------------------------------------------
def thin_indices(k: int, max_points: int) -> np.ndarray:
    """At most ``max_points`` indices into 0..k-1, log-spaced, always including the last."""
    if k <= max_points:
        return np.arange(k)
    idx = np.unique(np.round(np.geomspace(1, k, max_points)).astype(int) - 1)
    return idx


def _mcmc_run(draws, costs, tune_cost, walls, tune_wall, max_points):
    run = convergence.mcmc_running_estimate(draws, costs, cost_offset=tune_cost, transform=np.exp)
    wall = tune_wall + np.cumsum(walls)
    idx = thin_indices(run.cost.size, max_points)
    return run.cost[idx], run.estimate[idx], wall[idx]


def _one_regression(rng, model, prior, mode, cov, spec, st, max_points):
    method = spec["method"]
    logp = log_posterior(model, prior)
    extra = {"tuning_cost": 0.0, "tuning_wall": 0.0, "bookkeeping_fraction": np.nan, "accept": np.nan,
             "step": np.nan}
    if method in ("amis", "mamis", "mamis_p", "amis_mamis"):
        tuning = []  # a tuning run before the sampled one (AMIS -> MAMIS), whose trouble counts too
        if method == "amis":
            res = amis_mod.amis(rng, logp, mode, cov, n_iterations=st["n_iterations"],
                                n_per_iteration=st["n_per_iteration"], covariance=spec["covariance"],
                                norm_transform=np.exp)
        elif method == "mamis":
            sizes = amis_mod.mamis_sample_sizes(st["n_iterations"], st["base"], st["slope"])
            res = amis_mod.mamis(rng, logp, mode, cov, sizes, covariance=spec["covariance"], norm_transform=np.exp)
        elif method == "mamis_p":
            # the prior is centred on q_0 = N(mode, (-H)^-1), the paper's "Gaussian approximation to the posterior"
            sizes = amis_mod.mamis_sample_sizes(st["n_iterations"], st["base"], st["slope"])
            res = amis_mod.mamis_p(rng, logp, mode, cov, sizes, covariance=spec["covariance"], norm_transform=np.exp,
                                   prior_strength=st.get("prior_strength"), data_count=st.get("data_count", "ess"))
        else:
            sizes = amis_mod.mamis_sample_sizes(st["n_iterations"], st["base"], st["slope"])
            res, tun = amis_mod.amis_then_mamis(rng, logp, mode, cov, n_tuning_samples=st["n_tuning_samples"],
                                                n_per_iteration_amis=st["n_per_iteration_amis"],
                                                mamis_sizes=sizes, norm_transform=np.exp)
            extra.update(tuning_cost=float(tun.n_cubic[-1]), tuning_wall=float(tun.wall_time[-1]))
            tuning.append(tun)
        extra["bookkeeping_fraction"] = res.bookkeeping_fraction
        extra.update(trouble.combine(res, *tuning))
        return res.n_cubic.astype(float), res.estimate_norm, res.wall_time, extra, None
    start = mode + linalg.cholesky(cov, name="start covariance", count=False) @ rng.standard_normal(mode.size)
    if method == "mh":
        shape = {"i": np.eye(mode.size), "d": np.diag(np.diag(cov)), "h": cov}[spec["matrix"]]
        out = random_walk.run_chain(rng, start, logp, shape, n_burn=st["n_tune"], n_draws=st["n_draws"],
                                    target_accept=0.25, adapt_covariance=False)
        costs = out.stats["n_cubic"]
        burn_cubic = out.warmup["n_cubic"] - out.warmup["n_cubic_init"]
        extra.update(tuning_cost=float(burn_cubic) + 1.0, tuning_wall=float(out.warmup["wall_time"]),
                     accept=float(np.mean(out.stats["accepted"])), step=float(out.params["proposal_scale"]))
    elif method == "slice":
        out = slice_mod.run_chain(rng, start, logp, slice_mod.XIONG_WIDTH, n_draws=st["n_draws"])
        costs = out.stats["n_cubic"]
        extra.update(tuning_cost=float(out.warmup["n_cubic_init"]), accept=1.0, step=slice_mod.XIONG_WIDTH)
    else:
        vg = log_posterior_value_and_grad(model, prior)
        mass = hmc.mass_matrix(_MASS[spec["matrix"]], cov)
        # Xiong et al.'s settings, passed explicitly (the library's defaults are Stan's since issue 24):
        # HMC with dual averaging of the step size only, H&G's slice NUTS with a fixed step, NUTSDA
        if method == "hmc":
            out = hmc.run_chain(rng, start, vg, mass, n_tune=st["n_tune"], n_draws=st["n_draws"],
                                adaptation="step_size")
        elif method == "nuts":
            out = nuts.run_chain(rng, start, vg, mass, n_draws=st["n_draws"], n_adapt=0,
                                      step_size=nuts.XIONG_STEP_SIZE, variant="slice")
        else:
            out = nuts.run_chain(rng, start, vg, mass, n_draws=st["n_draws"], n_adapt=st["n_adapt"],
                                      step_size=None, variant="slice", adaptation="step_size")
        costs = sampler_cost(method, None, out.stats["n_steps"])
        extra.update(tuning_cost=float(sampler_cost(method, None, hmc.warmup_gradients(out))),
                     tuning_wall=float(out.warmup["wall_time"]), accept=float(np.mean(out.stats["acceptance_rate"])),
                     step=float(out.params["step_size"]))
    c, e, w = _mcmc_run(out.draws, costs, extra["tuning_cost"], out.stats["wall_time"], extra["tuning_wall"],
                        max_points)
    extra.update(trouble.chain_totals(out))
    return c, e, w, extra, out


def _one_classification(rng, X, y, kernel, cfg, setup_ds, spec, st, max_points):
    tgt = classification_target(X, y, kernel, cfg, spec["approx"], spec["n_imp"])
    mode = setup_ds["mode"].sel(approx=spec["approx"]).values
    cov = setup_ds["cov"].sel(approx=spec["approx"]).values
    extra = {"tuning_cost": 0.0, "tuning_wall": 0.0, "bookkeeping_fraction": np.nan, "accept": np.nan,
             "step": np.nan}
    if spec["method"] == "pm_amis":
        res = amis_mod.pm_amis(rng, tgt, mode, cov, n_iterations=st["n_iterations"],
                               n_per_iteration=st["n_per_iteration"], norm_transform=np.exp)
        extra["bookkeeping_fraction"] = res.bookkeeping_fraction
        extra.update(trouble.combine(res))
        return res.n_cubic.astype(float), res.estimate_norm, res.wall_time, extra, None
    start = mode + linalg.cholesky(cov, name="start covariance", count=False) @ rng.standard_normal(mode.size)
    out = pseudo_marginal.run_chain(rng, tgt, start, n_adapt=st["n_tune"], n_burn=0, n_draws=st["n_draws"],
                                       proposal_cov=cov, adapt_on=spec["approx"], adapt_covariance=False)
    tune = float(out.params["adapt_n_cubic"]) + float(out.warmup["n_cubic_init"])
    extra.update(tuning_cost=tune, tuning_wall=float(out.params["adapt_wall_time"]),
                 accept=float(np.mean(out.stats["accepted"])), step=float(out.params["proposal_scale"]))
    c, e, w = _mcmc_run(out.draws, out.stats["n_cubic"], tune, out.stats["wall_time"], extra["tuning_wall"],
                        max_points)
    extra.update(trouble.chain_totals(out))
    return c, e, w, extra, out


def run_block(ds: xr.Dataset, setup_ds: xr.Dataset, *, sampler: str, kernel: str, block: int, cfg: dict,
              settings: dict, seed: int) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
    """Replicates ``block_replicates(block, ...)`` of ``sampler``.

    Returns the running-estimate curves, dims (replicate, point), NaN-padded,
    and, for the MCMC samplers, their chains in the ArviZ layout (one chain
    per replicate: groups ``posterior`` with ``psi`` (chain, draw, param)
    and ``sample_stats``; empty for the importance samplers, whose output is
    weighted samples, not chains).
    """
    spec = parse_sampler(sampler)
    X, y, info = load_data(ds, settings.get("n_max"), seed)
    fam = family(sampler)
    st = settings[spec["method"]][kernel]
    reps = block_replicates(block, settings["n_replicates"], settings["replicates_per_job"])
    max_points = int(settings["max_points"])
    rows = []
    for r in reps:
        rng = rng_mod.stream(seed, "amis", info["dataset"], kernel, sampler, r)
        with blas_single_thread():
            if spec["task"] == "regression":
                model, prior = regression_model(X, y, kernel, cfg)
                mode = setup_ds["mode"].sel(approx="exact").values
                cov = setup_ds["cov"].sel(approx="exact").values
                rows.append(_one_regression(rng, model, prior, mode, cov, spec, st, max_points))
            else:
                rows.append(_one_classification(rng, X, y, kernel, cfg, setup_ds, spec, st, max_points))
    P = max(len(r[0]) for r in rows)

    def pad(i):
        A = np.full((len(rows), P), np.nan)
        for j, row in enumerate(rows):
            A[j, : len(row[i])] = row[i]
        return A

    data = {"cost": (("replicate", "point"), pad(0)), "estimate": (("replicate", "point"), pad(1)),
            "wall": (("replicate", "point"), pad(2))}
    for key in rows[0][3]:
        data[key] = (("replicate",), np.array([row[3][key] for row in rows], dtype=float))
    curves = xr.Dataset(data, coords={"replicate": list(reps)},
                        attrs={**info, "kernel": kernel, "sampler": sampler, "family": fam})
    chains = [row[4] for row in rows]
    groups = {}
    if all(c is not None for c in chains):
        groups = io.to_inference_groups(chains, var_name="psi", dims=("param",),
                                        stats=["lp", "acceptance_rate", "n_cubic", "wall_time"]
                                        + [k for k in ("n_steps", "diverging", "tree_depth", "accepted", "n_likelihood")
                                           if all(k in c.stats for c in chains)],
                                        attrs={"sampler": sampler, "kernel": kernel, "dataset": info["dataset"]})
        groups["posterior"] = groups["posterior"].assign_coords(chain=list(reps))
        groups["sample_stats"] = groups["sample_stats"].assign_coords(chain=list(reps))
        # the trouble of every replicate (draws, warm-up, adaptive phase) is in the curves' per-replicate
        # variables; the first chain's copies in these attributes (warmup_*, tuned_adapt_*) would count twice
        attrs = groups["sample_stats"].attrs
        for name in [a for a in attrs if a.endswith(trouble.TROUBLE_STATS)]:
            del attrs[name]
    return curves, groups


def bookkeeping_timings(res, log_target, rng_factory, mean0, cov0, *, n_iterations: int, n_per_iteration: int,
                        repeats: int, target_subset: int) -> dict[str, np.ndarray]:
    """``repeats`` independent CPU timings of the two phases of the AMIS run ``res`` (issue 14 item 6).

    One run's split of CPU time flips a 10 % threshold between identical runs
    (other jobs' cache and memory traffic, frequency changes), so each phase is
    timed again, alternately, ``repeats`` times:

    * bookkeeping: the run replayed from a fresh ``rng_factory()`` (the same
      stream, hence the same samples, mixtures, weights and moment matches)
      with a target that returns the stored ``res.log_target`` values -- every
      step of Alg. 1 except the marginal likelihoods, timed by ``run_amis``
      itself (``bookkeeping_cpu_time``);
    * target: ``log_target`` evaluated at ``target_subset`` of the run's
      samples (evenly spaced over the run), scaled to all of them.

    Returns per repeat ``bookkeeping_cpu``, ``target_cpu`` (seconds) and
    ``share`` = bookkeeping / (bookkeeping + target).
    """
    N = res.samples.shape[0]
    idx = np.unique(np.linspace(0, N - 1, min(int(target_subset), N)).round().astype(int))
    bk, tg = np.empty(repeats), np.empty(repeats)
    for r in range(repeats):
        stored = iter(res.log_target)
        rep = amis_mod.amis(rng_factory(), lambda theta, rng: next(stored), mean0, cov0, n_iterations=n_iterations,
                            n_per_iteration=n_per_iteration, norm_transform=np.exp)
        if r == 0 and not np.array_equal(rep.samples, res.samples):
            raise RuntimeError("the bookkeeping replay drew other samples than the run it times")
        bk[r] = rep.bookkeeping_cpu_time
        tic = time.process_time()
        for x in res.samples[idx]:
            log_target(x)
        tg[r] = (time.process_time() - tic) * N / idx.size
    return {"bookkeeping_cpu": bk, "target_cpu": tg, "share": bk / (bk + tg)}


def reference(ds: xr.Dataset, setup_ds: xr.Dataset, *, kernel: str, cfg: dict, settings: dict, seed: int) -> xr.Dataset:
    """A long AMIS run: the reference E[||theta||], its ESS, and AMIS's bookkeeping share of CPU time.

    The share is measured once during the run (``bookkeeping_fraction`` wall,
    ``bookkeeping_cpu_fraction`` CPU: reported) and ``settings["timing"]
    ["repeats"]`` more times by ``bookkeeping_timings`` (per repeat
    ``timing_share``: what the bookkeeping claim is decided on).
    """
    X, y, info = load_data(ds, settings.get("n_max"), seed)
    model, prior = regression_model(X, y, kernel, cfg)
    st = settings["reference"][kernel]
    tm = settings.get("timing", {"repeats": 0, "target_subset": 0})

    def stream():
        return rng_mod.stream(seed, "amis", "reference", info["dataset"], kernel)

    mode, cov = setup_ds["mode"].sel(approx="exact").values, setup_ds["cov"].sel(approx="exact").values
    logp = log_posterior(model, prior)
    with blas_single_thread():
        res = amis_mod.amis(stream(), logp, mode, cov, n_iterations=st["n_iterations"],
                            n_per_iteration=st["n_per_iteration"], norm_transform=np.exp)
        rep = bookkeeping_timings(res, logp, stream, mode, cov, n_iterations=st["n_iterations"],
                                  n_per_iteration=st["n_per_iteration"], repeats=int(tm["repeats"]),
                                  target_subset=int(tm["target_subset"]))
    return xr.Dataset(
        {"estimate": (("iteration",), res.estimate_norm), "cost": (("iteration",), res.n_cubic.astype(float)),
         "ess": (("iteration",), res.ess),
         "timing_bookkeeping_cpu": (("repeat",), rep["bookkeeping_cpu"]),
         "timing_target_cpu": (("repeat",), rep["target_cpu"]), "timing_share": (("repeat",), rep["share"])},
        attrs={**info, "kernel": kernel, "reference": float(res.estimate_norm[-1]), "final_ess": float(res.ess[-1]),
               "n_iterations": st["n_iterations"], "n_per_iteration": st["n_per_iteration"],
               "target_seconds": res.target_time, "bookkeeping_seconds": res.bookkeeping_time,
               "bookkeeping_fraction": res.bookkeeping_fraction,
               "bookkeeping_cpu_fraction": res.bookkeeping_cpu_time / (res.bookkeeping_cpu_time + res.target_cpu_time),
               "timing_target_subset": int(tm["target_subset"]), **trouble.combine(res)},
    )


def classification_reference(ds: xr.Dataset, setup_ds: xr.Dataset, *, kernel: str, cfg: dict, settings: dict,
                             seed: int) -> xr.Dataset:
    """A long PM-AMIS run (EP, ``n_imp`` importance samples): the reference E[||theta||] and its ESS.

    Pseudo-marginal, so it targets the exact posterior (the unbiased EP
    importance-sampling estimate of p(y | theta) weights every sample), unlike
    the approximate LA/EP marginal.  q_0 = N(m, (-H)^{-1}) from the EP marginal
    (``setup``); full-covariance moment matching, as the compared PM-AMIS runs.
    The reference is the self-normalised estimate over all T x N_t samples.
    """
    X, y, info = load_data(ds, settings.get("n_max"), seed)
    st = settings["classification_reference"][kernel]
    approx = "ep"
    tgt = classification_target(X, y, kernel, cfg, approx, st["n_imp"])
    rng = rng_mod.stream(seed, "amis", "classification_reference", info["dataset"], kernel)
    with blas_single_thread():
        res = amis_mod.pm_amis(rng, tgt, setup_ds["mode"].sel(approx=approx).values,
                               setup_ds["cov"].sel(approx=approx).values, n_iterations=st["n_iterations"],
                               n_per_iteration=st["n_per_iteration"], norm_transform=np.exp)
    n_est = int(res.n_target_evals)
    return xr.Dataset(
        {"estimate": (("iteration",), res.estimate_norm), "cost": (("iteration",), res.n_cubic.astype(float)),
         "ess": (("iteration",), res.ess)},
        attrs={**info, "kernel": kernel, "method": "pm_amis", "approx": approx, "n_imp": int(st["n_imp"]),
               "reference": float(res.estimate_norm[-1]), "final_ess": float(res.ess[-1]),
               "n_iterations": int(st["n_iterations"]), "n_per_iteration": int(st["n_per_iteration"]),
               "n_estimates": n_est, "target_seconds": res.target_time,
               "target_cpu_seconds_per_estimate": res.target_cpu_time / max(n_est, 1),
               **trouble.combine(res)},
    )
