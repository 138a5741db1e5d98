"""Murray & Adams (2010), Sec. 5 and Figure 3: six representations on four data sets.

Data sets (names used in configs, files and the figure):

``ionosphere``
    logistic likelihood, zero-mean GP, SE-ARD kernel (all covariates) with
    signal variance; 200 training points (a random subset of the 351) at
    paper scale.  The vendored copy has 33 covariates: UCI attribute 2 is
    constant zero and absent (the paper says 34 dimensions).
``synthetic``
    regression, 200 inputs uniform in the 10-D unit cube, unit signal
    variance, lengthscales drawn from U(0, sqrt(10)), Gaussian noise of
    variance 0.09 (known; the site and Taylor noise are both 0.09 I, so
    surr-site = surr-taylor and post-site = post-taylor).  At reduced scales
    the first n of the same 200 points.
``mining``
    Cox process on the coal-mining disasters (191 events, 1851-03-15 to
    1962-03-22) in 112 bins of one year (1851-1963); inputs are bin centres
    in decades since 1851; Poisson likelihood with a GP log-rate and a
    sampled mean offset.
``redwoods_standin``
    Redwoods (195 trees, 25 x 25 bins of the unit square; Ripley 1977) is
    not available offline.  STAND-IN: counts simulated from a log-Gaussian
    Cox process with known parameters on a G x G grid of the unit square
    (G = 25 at paper scale), SE kernel with lengthscale 0.15 and sigma_f 1.5
    (strongly clustered, like the redwood seedlings), mean count per bin
    195 / 625 (so most bins are empty, which is the property the paper's
    discussion turns on), redrawn until the total is within 5% of
    195 G^2 / 625.  Same model as mining (2-D inputs).

Priors.  The paper states none.  Ours: every log hyperparameter uniform on
(log 0.1, log 10), i.e. lengthscales and sigma_f log-uniform on (0.1, 10),
with the inputs in the units above.  That box is the default ``theta_Lprior``
argument of the generic update functions in the port of Murray's released
code (a default for any theta), not a prior the paper gives for Ionosphere or
any other data set.  The Cox-process offset m ~ N(log(mean count per bin), 1)
(ours).  Each slice bracket is as wide as its prior (log 100 = 4.6 for the
log-uniform ones, 4 s.d. for the offset).  The square root of R is
``cfg["root"]`` (``hyper_slice``; default "prior").

Runs (M&A Sec. 5): 10 chains per method, 1000 burn-in + 5000 kept iterations
(mining: 20000 kept, "we re-ran each chain for 20,000 iterations"); each
iteration is a slice sweep over the hyperparameters and 10 elliptical slice
updates of f.  All methods of a data set start chain c from the same draw
(psi from the prior, f ~ N(0, Sigma_psi)); each chain has its own random
stream keyed by (data set, method, chain), so results do not depend on how
chains are grouped into jobs.

Efficiency (M&A Fig. 3): the effective sample size (R-CODA effectiveSize,
``diagnostics.ess_coda``) of the complete-data log-likelihood
log p(y, f | psi) over the kept iterations of one chain, divided by the
chain's likelihood evaluations, covariance constructions and seconds over
the same iterations; mean and standard error over chains; each data set's
bars divided by the surr-site mean.
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np
import xarray as xr

from .. import data as gdata
from .. import builders, claims, trouble
from ..lazy import lazy_module
from gpbayes import diagnostics, linalg, priors
from gpbayes_repro import io
from gpbayes import rng as rngmod
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Gaussian, Logistic, Poisson
from gpbayes.mcmc import hyper_slice as hs
from gpbayes.mcmc.runner import Progress
from gpbayes.representations import LatentGaussianModel
from ..indices import block_chains as _block_chains

# the claims' interval estimators need scipy.stats (0.5 CPU-s of imports); chain jobs never call them
intervals = lazy_module("gpbayes_repro.intervals")

__all__ = [
    "DATASETS",
    "METRICS",
    "ionosphere_data",
    "synthetic_data",
    "mining_data",
    "redwoods_standin_data",
    "problem_data",
    "build_model",
    "initial_point",
    "run_block",
    "chain_efficiency",
    "efficiency_rows",
    "fig3_table",
    "fig3_figure",
    "fig3_claims",
    "unstandardised_inputs",
    "released_target_table",
]

DATASETS = ("ionosphere", "synthetic", "mining", "redwoods_standin")
LABELS = {"ionosphere": "ionosphere", "synthetic": "synthetic", "mining": "mining",
          "redwoods_standin": "redwoods\n(stand-in)"}
#: efficiency metrics of Fig. 3 (panel order): effective samples per ...
METRICS = {"per_likelihood": "likelihood evaluation", "per_covariance": "covariance construction",
           "per_second": "second"}
_COST = {"per_likelihood": "n_likelihood_evals", "per_covariance": "n_covariance", "per_second": "wall_time"}
REFERENCE = "surr-site"
#: M&A Fig. 3, the surr-site values printed under each group (effective samples per unit cost)
PAPER_SURR_SITE = {
    "per_likelihood": {"ionosphere": 1.6e-4, "synthetic": 3.3e-4, "mining": 4.3e-5, "redwoods_standin": 4.8e-4},
    "per_covariance": {"ionosphere": 2.9e-4, "synthetic": 1.1e-3, "mining": 7.4e-4, "redwoods_standin": 3.7e-3},
    "per_second": {"ionosphere": 7.7e-3, "synthetic": 5.4e-2, "mining": 1.2e-1, "redwoods_standin": 1.5e-2},
}


# ---------------------------------------------------------------------------
# data sets
# ---------------------------------------------------------------------------
def ionosphere_data(ds: xr.Dataset, n: int, rng: np.random.Generator) -> xr.Dataset:
    """``n`` rows drawn at random (without replacement) from the prepared Ionosphere."""
    N = ds.sizes["n"]
    if not 2 <= n <= N:
        raise ValueError(f"ionosphere: n must be in [2, {N}], got {n}")
    keep = np.sort(rng.choice(N, n, replace=False))
    out = xr.Dataset({"X": (("n", "feature"), ds["X"].values[keep]), "y": (("n",), ds["y"].values[keep])},
                     coords={"feature": ds["feature"].values})
    out.attrs.update(name="ionosphere", task="classification", stand_in=int(ds.attrs.get("stand_in", 0)),
                     source=str(ds.attrs.get("source", "")), subset=f"random {n} of {N} rows")
    return out


def unstandardised_inputs(ds: xr.Dataset) -> xr.Dataset:
    """The data set with its covariates back in their recorded units: X * X_scale + X_mean.

    For Ionosphere these are the UCI radar values in [-1, 1] (rounded to 3
    decimals in the vendored copy), the scale the paper probably used; the
    workflow uses the standardised inputs of ``gpbayes_repro.data``.  Apply it
    to the prepared data set (which holds ``X_mean`` and ``X_scale``) before
    :func:`ionosphere_data` draws its subset (the rows drawn do not depend on X).
    """
    if "X_mean" not in ds or "X_scale" not in ds:
        raise ValueError("unstandardised_inputs needs X_mean and X_scale (the prepared data set)")
    out = ds.copy()
    out["X"] = ds["X"] * ds["X_scale"] + ds["X_mean"]
    out.attrs["inputs"] = "unstandardised (X * X_scale + X_mean)"
    return out


def synthetic_data(n: int, rng: np.random.Generator, *, n_full: int = 200, d: int = 10,
                   noise_variance: float = 0.09, lengthscale_max: float = math.sqrt(10.0)) -> xr.Dataset:
    """M&A's synthetic regression problem; the first ``n`` of ``n_full`` simulated points.

    Lengthscales ~ U(0, lengthscale_max) (one per dimension), sigma_f = 1,
    X ~ U(0, 1)^d, f ~ GP, y = f + N(0, noise_variance).
    """
    if not 2 <= n <= n_full:
        raise ValueError(f"synthetic: n must be in [2, {n_full}], got {n}")
    ell = rng.uniform(0.0, lengthscale_max, size=d)
    X = rng.uniform(size=(n_full, d))
    kernel = SquaredExponential(d, ard=True, parameterisation="ma")
    K = kernel(np.r_[np.log(ell), 0.0], X)
    L = linalg.cholesky(K, name="synthetic GP covariance", count=False)
    f = L @ rng.standard_normal(n_full)
    y = f + math.sqrt(noise_variance) * rng.standard_normal(n_full)
    out = xr.Dataset({"X": (("n", "feature"), X[:n]), "y": (("n",), y[:n]), "f": (("n",), f[:n]),
                      "true_lengthscale": (("feature",), ell)},
                     coords={"feature": [f"x{i}" for i in range(d)]})
    out.attrs.update(name="synthetic", task="regression", stand_in=0, noise_variance=float(noise_variance),
                     source="simulated as M&A Sec. 5 (10-D unit cube, l_d ~ U(0, sqrt(10)), noise 0.09)",
                     subset=f"first {n} of {n_full} simulated points")
    return out


def mining_data(ds: xr.Dataset, n_bins: int = 112, years_per_unit: float = 10.0) -> xr.Dataset:
    """Coal-mining disasters binned into ``n_bins`` equal bins (112 x 365 days in the paper)."""
    start, end = float(ds.attrs["window_start"]), float(ds.attrs["window_end"])
    counts, edges = gdata.bin_events(ds["y"].values, start, end, n_bins)
    centres = 0.5 * (edges[:-1] + edges[1:])
    X = ((centres - start) / years_per_unit)[:, None]
    out = xr.Dataset({"X": (("n", "feature"), X), "y": (("n",), counts.astype(np.float64))},
                     coords={"feature": ["time"]})
    out.attrs.update(name="mining", task="counts", stand_in=int(ds.attrs.get("stand_in", 0)),
                     source=str(ds.attrs.get("source", "")),
                     binning=f"{int(counts.sum())} events in {n_bins} bins of {(end - start) / n_bins:.3f} years "
                             f"({start:g}-{end:g}); x = bin centre in units of {years_per_unit:g} years since {start:g}",
                     n_zero_bins=int(np.sum(counts == 0)))
    return out


def redwoods_standin_data(grid: int, rng: np.random.Generator, *, lengthscale: float = 0.15,
                          amplitude: float = 1.5, points_per_bin: float = 195.0 / 625.0,
                          tolerance: float = 0.05, max_tries: int = 1000) -> xr.Dataset:
    """STAND-IN for Redwoods: LGCP counts on a ``grid`` x ``grid`` partition of the unit square.

    log-rate f + m0, f ~ GP(0, amplitude^2 exp(-|x - x'|^2 / (2 lengthscale^2))),
    m0 = log(points_per_bin) - amplitude^2 / 2 (so E count per bin =
    points_per_bin); redrawn until the total is within ``tolerance`` of
    points_per_bin * grid^2 (195 at grid = 25).
    """
    c = (np.arange(grid) + 0.5) / grid
    X = np.array([(a, b) for a in c for b in c])
    kernel = SquaredExponential(2, parameterisation="ma", nugget=1e-6)
    L = linalg.cholesky(kernel(np.log([lengthscale, amplitude]), X), name="stand-in LGCP covariance", count=False)
    m0 = math.log(points_per_bin) - 0.5 * amplitude**2
    target = points_per_bin * grid * grid
    for attempt in range(1, max_tries + 1):
        f = L @ rng.standard_normal(X.shape[0])
        y = rng.poisson(np.exp(f + m0)).astype(np.float64)
        if abs(y.sum() - target) <= tolerance * target:
            break
    else:  # pragma: no cover - the tolerance is loose enough
        raise RuntimeError(f"no stand-in draw within {tolerance:.0%} of {target:.0f} points in {max_tries} tries")
    out = xr.Dataset({"X": (("n", "feature"), X), "y": (("n",), y), "f": (("n",), f)},
                     coords={"feature": ["x1", "x2"]})
    out.attrs.update(
        name="redwoods_standin", task="counts", stand_in=1,
        stand_in_note=("STAND-IN for the Redwoods point pattern (195 trees, 25 x 25 bins; Ripley 1977), which is "
                       "not available offline: counts simulated from a log-Gaussian Cox process on the unit square "
                       f"(SE kernel, lengthscale {lengthscale}, sigma_f {amplitude}, {points_per_bin:.4g} expected "
                       f"points per bin) on a {grid} x {grid} grid, kept when the total is within {tolerance:.0%} "
                       f"of {target:.0f}"),
        source="simulated (gpbayes_repro.experiments.slice_ma.redwoods_standin_data)",
        true_lengthscale=lengthscale, true_amplitude=amplitude, true_offset=m0, attempts=attempt,
        n_zero_bins=int(np.sum(y == 0)),
    )
    return out


def problem_data(name: str, cfg: dict, settings: dict, seed: int, source: xr.Dataset | None = None) -> xr.Dataset:
    """The data set ``name`` at the configured scale (``source``: the prepared raw data, if any)."""
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; choose one of {DATASETS}")
    s = settings[name]
    if name == "ionosphere":
        return ionosphere_data(source, int(s["n"]), rngmod.stream(seed, "slice_ma", "ionosphere", "subset"))
    if name == "synthetic":
        c = cfg["synthetic"]
        return synthetic_data(int(s["n"]), rngmod.stream(seed, "slice_ma", "synthetic", "simulate"),
                              n_full=int(c["n_full"]), d=int(c["d"]), noise_variance=float(c["noise_variance"]),
                              lengthscale_max=float(c["lengthscale_max"]))
    if name == "mining":
        c = cfg["mining"]
        return mining_data(source, int(c["n_bins"]), float(c["years_per_unit"]))
    if name == "redwoods_standin":
        c = cfg["redwoods_standin"]
        grid = int(s["grid"])
        return redwoods_standin_data(grid, rngmod.stream(seed, "slice_ma", "redwoods_standin", "simulate", grid),
                                     lengthscale=float(c["lengthscale"]), amplitude=float(c["amplitude"]),
                                     points_per_bin=float(c["points_per_bin"]), tolerance=float(c["tolerance"]))


# ---------------------------------------------------------------------------
# model and chains
# ---------------------------------------------------------------------------
def build_model(ds: xr.Dataset, cfg: dict) -> LatentGaussianModel:
    """Likelihood, SE-ARD kernel (M&A eq. 2) and priors for one data set."""
    X, y = ds["X"].values, ds["y"].values
    task = ds.attrs["task"]
    d = X.shape[1]
    kernel = SquaredExponential(d, ard=True, parameterisation="ma", nugget=float(cfg["nugget"]))
    comps = [builders.prior(cfg["priors"]["lengthscale"])] * d + [builders.prior(cfg["priors"]["amplitude"])]
    offset = task == "counts"
    if task == "classification":
        lik = Logistic()
    elif task == "regression":
        lik = Gaussian(float(ds.attrs["noise_variance"]))
    elif task == "counts":
        lik = Poisson()
        # m ~ N(log mean count, sd^2): LogNormal's density on psi is the Gaussian density of psi = m itself
        comps.append(priors.LogNormal(math.log(max(float(np.mean(y)), 1e-3)), float(cfg["priors"]["offset_sd"])))
    else:
        raise ValueError(f"data set {ds.attrs.get('name')!r}: unknown task {task!r}")
    return LatentGaussianModel(kernel, X, lik, y, priors.IndependentPrior(tuple(comps)), sample_offset=offset,
                         max_noise_ratio=float(cfg["max_noise_ratio"]))


def initial_point(model: LatentGaussianModel, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """psi from the prior, f ~ N(0, Sigma_psi)."""
    psi = model.prior.sample_psi(rng)
    L = linalg.cholesky(model.covariance(psi), name="initial GP covariance", count=False)
    return psi, L @ rng.standard_normal(model.n)


def run_block(ds: xr.Dataset, *, method: str, block: int, cfg: dict, settings: dict,
              seed: int, draw: int | None = None) -> dict[str, xr.Dataset]:
    """Chains ``block`` of one (data set, method) as ArviZ-layout groups."""
    name = str(ds.attrs["name"])
    s = settings[name]
    model = build_model(ds, cfg)
    chains = _block_chains(block, settings["n_chains"], settings["chains_per_job"])
    root = str(cfg.get("root", hs.DEFAULT_ROOT))
    target = str(cfg.get("target", hs.DEFAULT_TARGET))
    results = []
    for c in chains:
        psi0, f0, gen = _chain_start(model, name, method, c, seed, target, draw)
        t0 = time.perf_counter()
        out = hs.run_chain(gen, model, psi0, f0, method, n_burn=int(s["n_burn"]), n_draws=int(s["n_draws"]),
                           n_latent_updates=int(cfg["n_latent_updates"]), root=root, target=target,
                           callback=Progress(f"slice_ma {name} {method} chain {c}"
                                             + ("" if target == hs.DEFAULT_TARGET else f" ({target})")))
        results.append((out, time.perf_counter() - t0))
    return _block_groups(results, model, ds, method, chains, cfg, s, root, target)


def _chain_start(model, name: str, method: str, c: int, seed: int, target: str, draw: int | None = None):
    """Chain ``c``'s initial point (shared by every method of the data set) and its own generator.

    ``draw``: a further data draw of the synthetic generator (claim 2 over draws): streams of its own.
    """
    d = () if draw is None else ("draw", int(draw))
    psi0, f0 = initial_point(model, rngmod.stream(seed, "slice_ma", name, *d, "init", c))
    # the diagnostic target (released code) gets streams of its own; the default keys are unchanged
    key = ("slice_ma", name, *d, method, "chain", c) + (() if target == hs.DEFAULT_TARGET else (target,))
    return psi0, f0, rngmod.stream(seed, *key)


def _block_groups(results, model, ds, method, chains, cfg, s, root, target) -> dict[str, xr.Dataset]:
    name = str(ds.attrs["name"])
    post = {"psi": np.stack([r.draws for r, _ in results]),
            "complete_ll": np.stack([r.stats["lp"] for r, _ in results])}
    stats = {"log_likelihood": np.stack([r.extra["log_likelihood"] for r, _ in results])}
    # the stored names of these counters (M&A's cost units), from the runner's ArviZ names
    for old, new in (("n_likelihood_evals", "n_likelihood"), ("n_covariance", "n_covariance"),
                     ("n_cubic", "n_cubic"), ("n_density_evals", "n_density_evals"),
                     ("n_shrinkages", "n_shrinkages"), ("wall_time", "wall_time")):
        stats[old] = np.stack([r.stats[new] for r, _ in results])
    # ArviZ names: lp = log p(y, f, psi) (complete-data log-likelihood + log prior); slice samplers always move
    stats["lp"] = post["complete_ll"] + np.array([[model.log_prior(t) for t in r.draws] for r, _ in results])
    stats["accepted"] = np.ones_like(stats["wall_time"], dtype=bool)
    for k in trouble.TROUBLE_STATS:  # jitter, non-converged site fits, failed estimates, per draw
        stats[k] = np.stack([trouble.per_draw(r)[k] for r, _ in results])
    attrs = {"dataset": name, "method": method, "n": int(model.n), "d": int(ds["X"].shape[1]),
             "first_chain": int(chains[0]), "n_burn": int(s["n_burn"]), "stand_in": int(ds.attrs.get("stand_in", 0)),
             "n_latent_updates": int(cfg["n_latent_updates"])}
    # recorded only when not the default, so that default chain files stay as they were
    if root != hs.DEFAULT_ROOT:
        attrs["root"] = root
    if target != hs.DEFAULT_TARGET:
        attrs["target"] = target
    groups = io.make_inference_groups(post, stats, extra_dims={"psi": ("param",)},
                                      coords={"param": np.array(model.param_names)}, attrs=attrs)
    groups["sample_stats"]["burn_wall_time"] = ("chain", np.array([r.warmup["wall_time"] for r, _ in results]))
    groups["sample_stats"]["total_wall_time"] = ("chain", np.array([t for _, t in results]))
    groups["sample_stats"] = groups["sample_stats"].assign(trouble.warmup_per_chain([r for r, _ in results]))
    return groups


def extension_stop(settings: dict, name: str, ext_cfg: dict):
    """The stop rule of an extended (data set, method) group (issue 26 section 3).

    Converged as the claims' gate (``claims.convergence_gate``): rank split R-hat < 1.05 and
    bulk ESS > 100 on every hyperparameter and on the complete-data log-likelihood, checked
    every ``check_every`` x n_draws kept draws from the scale's n_draws on (so the
    extended chains keep, bit for bit, the fixed-length chains as their first n_draws);
    budget ``max_factor`` x n_draws kept draws per chain.
    """
    from gpbayes.mcmc import runner

    n = int(settings[name]["n_draws"])
    return runner.StopRule(rhat=claims.MAX_RHAT, ess_bulk=claims.MIN_ESS,
                           check_every=max(1, int(round(float(ext_cfg["check_every"]) * n))),
                           min_draws=n, max_draws=int(round(float(ext_cfg["max_factor"]) * n)))


def run_until_converged(ds: xr.Dataset, *, method: str, cfg: dict, settings: dict, seed: int,
                        stop) -> dict[str, xr.Dataset]:
    """Every chain of one (data set, method), run together until ``stop`` holds or its budget is spent.

    The chains are :func:`run_block`'s (same initial points, same generators, same
    kernel): a chain's first ``n_draws`` kept draws are those of the fixed-length run,
    bit for bit (``gpbayes.mcmc.runner.run_specs``: each chain draws only from its own
    generator).  The rule is checked on psi and the complete-data log-likelihood (the
    quantities the claims' gate reads).  One group with chains 0..n_chains-1 (attrs
    ``stopped``, ``max_draws``).
    """
    import dataclasses

    from gpbayes.mcmc import runner

    name = str(ds.attrs["name"])
    s = settings[name]
    model = build_model(ds, cfg)
    root = str(cfg.get("root", hs.DEFAULT_ROOT))
    target = str(cfg.get("target", hs.DEFAULT_TARGET))
    chains = range(int(settings["n_chains"]))
    gens, specs = [], []
    for c in chains:
        psi0, f0, gen = _chain_start(model, name, method, c, seed, target)
        spec = hs.chain_spec(model, psi0, f0, method, n_burn=int(s["n_burn"]),
                             n_latent_updates=int(cfg["n_latent_updates"]), root=root, target=target)
        # the stop rule reads positions: psi and the complete-data log-likelihood (split off below)
        spec = dataclasses.replace(spec, position=lambda st, lp=spec.lp: np.r_[st.psi, lp(st)])
        gens.append(gen)
        specs.append(spec)
    t0 = time.perf_counter()
    outs = runner.run_specs(gens, specs, stop=stop,
                            callback=Progress(f"slice_ma {name} {method} until converged", n_chains=len(gens)))
    wall = (time.perf_counter() - t0) / len(outs)
    p = len(model.param_names)
    results = [(dataclasses.replace(o, draws=o.draws[:, :p]), wall) for o in outs]
    groups = _block_groups(results, model, ds, method, chains, cfg, s, root, target)
    groups["posterior"].attrs.update(stopped=str(outs[0].stopped), max_draws=int(stop.max_draws),
                                     check_every=int(stop.check_every))
    return groups


# ---------------------------------------------------------------------------
# efficiency, Figure 3, claims
# ---------------------------------------------------------------------------
def chain_efficiency(groups: dict[str, xr.Dataset]) -> xr.Dataset:
    """Per chain: ESS of the complete-data log-likelihood, the three costs, and ESS per cost."""
    cll = groups["posterior"]["complete_ll"].values  # (chain, draw)
    psi = groups["posterior"]["psi"]
    ss = groups["sample_stats"]
    ess = np.array([diagnostics.ess_coda(cll[c][None, :]) for c in range(cll.shape[0])])
    # for reading the figure: which hyperparameters limit the mixing
    ess_psi = np.array([[diagnostics.ess_coda(psi.values[c, :, j][None, :]) for j in range(psi.shape[2])]
                          for c in range(psi.shape[0])])
    amp = list(psi["param"].values).index("sigma_f")
    out = {"ess": ("chain", ess), "ess_psi_median": ("chain", np.median(ess_psi, axis=1)),
           "ess_psi_min": ("chain", ess_psi.min(axis=1)), "ess_log_sigma_f": ("chain", ess_psi[:, amp])}
    for metric, key in _COST.items():
        cost = ss[key].values.sum(axis=1).astype(float)
        out[key] = ("chain", cost)
        out[metric] = ("chain", ess / cost)
    res = xr.Dataset(out, coords={"chain": groups["posterior"]["chain"].values + int(ss.attrs.get("first_chain", 0))})
    res.attrs.update({k: groups["posterior"].attrs[k] for k in ("dataset", "method", "n")
                      if k in groups["posterior"].attrs})
    return res


def convergence_rows(chain_groups: list[dict]):
    """One row per (data set, method): rank split R-hat (max) and bulk ESS (min) over the hyperparameters and
    the complete-data log-likelihood, all chains of the pair pooled (``gpbayes_repro.claims.convergence``)."""
    import pandas as pd

    pooled: dict = {}
    for g in chain_groups:
        post = g["posterior"]
        key = (post.attrs["dataset"], post.attrs["method"])
        x = np.concatenate([post["psi"].values, post["complete_ll"].values[:, :, None]], axis=2)
        pooled.setdefault(key, []).append(x)
    rows = []
    for (ds, m), parts in pooled.items():
        draws = np.concatenate(parts, axis=0)
        conv = claims.convergence(draws) if draws.shape[0] > 1 else {"max_rank_rhat": np.nan, "min_bulk_ess": np.nan}
        rows.append({"dataset": ds, "method": m, **conv})
    return pd.DataFrame(rows)


def efficiency_rows(efficiencies: list[xr.Dataset]):
    """One row per chain: data set, method, chain, ESS, the three costs and ESS per cost."""
    import pandas as pd

    rows = []
    for e in efficiencies:
        for i in range(e.sizes["chain"]):
            row = {"dataset": e.attrs["dataset"], "method": e.attrs["method"], "chain": int(e["chain"].values[i])}
            row.update({k: float(e[k].values[i]) for k in e.data_vars})
            rows.append(row)
    return pd.DataFrame(rows)


def fig3_table(efficiencies: list[xr.Dataset], methods_order=hs.METHODS):
    """One row per (dataset, method): mean and s.e. over chains of each metric, absolute and / surr-site.

    ``efficiencies``: ``chain_efficiency`` outputs (one or more per (dataset,
    method); blocks of the same pair are pooled).
    """
    import pandas as pd

    pooled: dict = {}
    for e in efficiencies:
        key = (e.attrs["dataset"], e.attrs["method"])
        pooled.setdefault(key, []).append(e)
    rows = []
    for (dataset, method), parts in pooled.items():
        e = xr.concat(parts, dim="chain")
        row = {"dataset": dataset, "method": method, "n": int(e.attrs.get("n", 0)), "n_chains": e.sizes["chain"],
               "ess_mean": float(e["ess"].mean())}
        for k in ("ess_psi_median", "ess_psi_min", "ess_log_sigma_f"):
            if k in e:
                row[f"{k}_mean"] = float(e[k].mean())
        for metric, key in _COST.items():
            v = e[metric].values
            row[f"{metric}_mean"] = float(v.mean())
            row[f"{metric}_se"] = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
            row[f"{key}_per_chain"] = float(e[key].mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    for metric in METRICS:
        ref = table[table["method"] == REFERENCE].set_index("dataset")[f"{metric}_mean"]
        scale = table["dataset"].map(ref)
        table[f"{metric}_rel"] = table[f"{metric}_mean"] / scale
        table[f"{metric}_rel_se"] = table[f"{metric}_se"] / scale
        table[f"{metric}_surr_site"] = scale
        table[f"{metric}_surr_site_paper"] = table["dataset"].map(PAPER_SURR_SITE[metric])
    order_d = {d: i for i, d in enumerate(DATASETS)}
    order_m = {m: i for i, m in enumerate(methods_order)}
    table = table.sort_values(["dataset", "method"], key=lambda s: s.map(order_d if s.name == "dataset" else order_m))
    return table.reset_index(drop=True)


def fig3_figure(table, path, *, scale: str = "") -> None:
    """M&A Fig. 3: three panels of grouped bars, each group rescaled so surr-site = 1."""
    from .. import plots

    plt = plots.plt
    colors = dict(zip(hs.METHODS, ["#444444", "#999999", "#1f77b4", "#d62728", "#aec7e8", "#ff9896"]))
    datasets = [d for d in DATASETS if d in set(table["dataset"])]
    width = 0.8 / len(hs.METHODS)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3), sharey=False)
    for ax, (metric, label) in zip(axes, METRICS.items()):
        top = 0.0
        for i, d in enumerate(datasets):
            sub = table[table["dataset"] == d].set_index("method")
            for j, m in enumerate(hs.METHODS):
                if m not in sub.index:
                    continue  # method not applied to this data set (M&A: "Bars are missing ...")
                h, e = sub.loc[m, f"{metric}_rel"], sub.loc[m, f"{metric}_rel_se"]
                ax.bar(i - 0.4 + (j + 0.5) * width, h, width, yerr=None if np.isnan(e) else e, color=colors[m],
                       error_kw={"elinewidth": 0.8, "capsize": 1.5})
                top = max(top, h + (0 if np.isnan(e) else e))
            ref = sub.loc[REFERENCE, f"{metric}_mean"] if REFERENCE in sub.index else float("nan")
            ax.text(i, -0.04, f"x{ref:.1e}", transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8)
        ax.set_xticks(range(len(datasets)))
        ax.set_xticklabels([LABELS[d] for d in datasets], fontsize=8)
        ax.tick_params(axis="x", pad=14)
        ax.set_ylim(0, max(1.2, 1.08 * top))
        ax.axhline(1.0, color="k", lw=0.5, ls=":")
        ax.set_title(f"Effective samples per {label}", fontsize=10)
    present = [m for m in hs.METHODS if m in set(table["method"])]
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[m]) for m in present]
    fig.legend(handles, present, fontsize=8, ncol=len(present), loc="upper center", bbox_to_anchor=(0.5, 0.95),
               frameon=False)
    n_ch = int(table["n_chains"].min())
    fig.suptitle(f"Murray & Adams (2010) Fig. 3 - ESS of the complete-data log-likelihood per unit cost, rescaled "
                 f"so surr-site = 1 (absolute surr-site value under each group); mean +- s.e. over {n_ch} chains"
                 + (f"; scale: {scale}" if scale else ""), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    plots.save_figure(fig, path)


#: shown on the claims page with the Ionosphere claim (the finding of issue 15 section 3; README, Murray & Adams)
RELEASED_TARGET_NOTE = (
    "This claim is measured on the correct target (eq. 11). Murray's released update_theta_aux_surr.m normalises "
    "N(g; f, S) with '- sum(log(pp.aux_var.*ones(size(pp.ff))))', i.e. log|S| where the Gaussian has 1/2 log|S|; "
    "with S = S(theta) from the site fits (eq. 12) it samples p(theta, f | y) prod_i S_ii(theta)^-1/2, NOT the "
    "posterior. On that target (the library's diagnostic hyper_slice target='released-code'; opt-in workflow "
    "table results/slice/released_target.csv) sigma_f sits near 0.8 instead of ~7 and surr-site leads "
    "prior-white, the paper's ordering; on the correct target it does not. None of the choices the paper leaves "
    "open, changed one at a time on the correct target (sigma_f prior range, slice bracket and stepping out, "
    "square root of R, raw vs standardised inputs; Ionosphere n = 100, 4 chains each), put surr-site ahead of "
    "prior-white (ratio 0.17-0.74; three of the six 95% intervals lie wholly below 1, none above; surr-site's "
    "chains are the least converged), while post-site is ahead of prior-white in five of six. The released-code "
    "target puts surr-site ahead only of prior-white on the correct target: on the same tilted target prior-white "
    "mixes as well (default scale: 0.75x [0.35, 1.69]). benchmarks/bench_ma_sensitivity.py, README (Murray & Adams)."
)


def _value(table, dataset, method, metric="per_covariance") -> float:
    row = table[(table["dataset"] == dataset) & (table["method"] == method)]
    return float(row[f"{metric}_mean"].iloc[0]) if len(row) else float("nan")


def _combine(verdicts) -> str:
    """An "every case" claim: FAIL if any case fails, PASS if all pass, else INCONCLUSIVE."""
    verdicts = list(verdicts)
    if "FAIL" in verdicts:
        return "FAIL"
    return "PASS" if verdicts and all(v == "PASS" for v in verdicts) else "INCONCLUSIVE"


#: the paper's sentences the four claims encode (Murray & Adams 2010, Sec. 6 "Discussion")
QUOTES = {
    "ionosphere-site-beats-baselines": "On the Ionosphere classification problem both of the -site methods worked "
                                       "much better than the two baselines.",
    "synthetic-surr-post-close": "On the synthetic test the post- and surr- methods perform very similarly. We had "
                                 "expected the existing post- method to have an advantage of perhaps up to 2-3x, but "
                                 "that was not realized on this particular dataset.",
    "fixed-worst-or-near-worst": "An important message from our results is that fixing the latent variables and "
                                 "updating hyperparameters according to the conditional posterior - as commonly used "
                                 "by GP practitioners - can work exceedingly poorly.",
    "point-pattern-site-beats-taylor": "While surr-taylor works better, the best results here come from using "
                                       "approximations to the site-posterior (12).",
}


def _pick_data_set(passes: list, per_d: dict, conv, chains):
    """Claim 3 ("on some data set"): which passing data set its PASS rests on.

    Every data set's pairs were decided at the Bonferroni level over data sets, so a PASS
    may rest on any of them: the first (in DATASETS order) whose gated chains (the other
    methods) are converged; if none is, the one whose unconverged groups need the least
    extra work to reach the gate's ESS, estimated deterministically as sum over them of
    (100 / bulk ESS) x covariance constructions per chain (no clock enters, so the same
    seed picks the same data set on any machine).  None when no data set passes.
    """
    if not passes:
        return None
    if conv is None:
        return passes[0]

    def need(d):
        total = 0.0
        for m in per_d[d][1]:
            row = conv[(conv["dataset"] == d) & (conv["method"] == m)]
            if not len(row):
                continue
            r, e = float(row["max_rank_rhat"].iloc[0]), float(row["min_bulk_ess"].iloc[0])
            if claims.convergence_gate(r, e) is None:
                continue
            cost = 1.0
            if chains is not None and "n_covariance" in chains:
                sel = chains[(chains["dataset"] == d) & (chains["method"] == m)]["n_covariance"]
                cost = float(sel.mean()) if len(sel) else 1.0
            total += claims.MIN_ESS / max(e, 1.0) * cost if math.isfinite(e) else math.inf
        return total

    ready = [d for d in passes if need(d) == 0.0]
    return ready[0] if ready else min(passes, key=need)


def _iv(quantity, est_lo_hi, threshold, side, method):
    est, lo, hi = est_lo_hi
    f = claims.finite_or_none
    return {"quantity": quantity, "estimate": f(est), "lo": f(lo), "hi": f(hi), "threshold": threshold,
            "side": side, "method": method}


def fig3_claims(table, zero_bins: dict, claims_cfg: dict, chains=None, seed: int = 0,
                convergence=None) -> list[dict]:
    """The four claims of M&A Sec. 6 on effective samples per covariance construction (other metrics reported).

    ``zero_bins``: {data set: number of zero-count bins} for the binned point patterns.
    ``chains`` (``efficiency_per_chain.csv``): per-chain efficiencies.  Every ratio a claim
    compares is a ratio of geometric means over chains with a 95 % Welch t interval on
    the log scale (``gpbayes_repro.intervals.log_ratio``; its coverage at 3-4 chains is in
    ``gpbayes_repro.coverage``); a claim over several pairs is decided pairwise
    (``intervals.decide_all_pairs``: intersection-union for the verdict that needs every
    pair, Bonferroni for the one that needs a single pair; a claim that holds "on some
    data set" or "for some method" Bonferroni-corrects the choice).  Thresholds are the
    config's (declared in issue 15, unchanged).  Without ``chains`` (a single chain per
    method) the verdict is INCONCLUSIVE: nothing about the spread can be said.

    ``convergence`` (:func:`convergence_rows`): the pooled chains' R-hat / bulk ESS per (data set,
    method).  The gate applies to the chains whose unconverged (overstated) ESS would favour the
    verdict being issued (``claims.directional_gate``; issue 26 section 3): claim 1's PASS needs the
    -site methods converged, its FAIL the baseline that beats them; claim 2 both methods for either
    verdict; claim 3's PASS the other methods of the data set where fixed is poor, its FAIL the fixed
    chains; claim 4's PASS the winning -site method, its FAIL the -taylor methods.  Split rank R-hat
    <= 1.05 and bulk ESS >= 100 (the paper states no threshold).
    """
    metric = "per_covariance"
    alpha = 0.05
    out = []
    conv = convergence if convergence is not None and len(convergence) else None

    def col(d, m):
        if chains is None:
            return np.array([_value(table, d, m, metric)])
        return chains[(chains["dataset"] == d) & (chains["method"] == m)][metric].to_numpy(float)

    def gate_of(pairs):
        """(R-hat, ESS) arrays of the (data set, method) pairs, and a record of them."""
        if conv is None:
            return None, {}
        sel = np.zeros(len(conv), dtype=bool)
        for d, m in pairs:
            sel |= ((conv["dataset"] == d) & (conv["method"] == m)).to_numpy()
        sub = conv[sel]
        rec = {f"{r.dataset}/{r.method}": {"max_rank_rhat": claims.finite_or_none(r.max_rank_rhat),
                                            "min_bulk_ess": claims.finite_or_none(r.min_bulk_ess)}
               for r in sub.itertuples()}
        return ((sub["max_rank_rhat"].to_numpy(float), sub["min_bulk_ess"].to_numpy(float)) if len(sub) else None), rec

    def finish(rec, verdict, gates, why_open):
        seen = {}
        rested = {v: {f"{d}/{m}" for d, m in (pairs or ())} for v, pairs in gates.items()}
        for v, pairs in gates.items():
            if pairs is None:  # nothing this verdict could rest on (e.g. no data set passes)
                continue
            g, r = gate_of(pairs)
            seen.update(r)
            gates[v] = g
        final, why = claims.directional_gate(verdict, gates)
        rec["measured"]["convergence_of_gated_chains"] = seen or None
        if final != verdict:
            rec["measured"]["interval_verdict"] = verdict
            # the groups the issued verdict rests on that fail the gate: what an extension must run longer
            rec["measured"]["gate_needs"] = sorted(k for k, v in seen.items() if k in rested[verdict] and (
                claims.convergence_gate(v["max_rank_rhat"] if v["max_rank_rhat"] is not None else np.nan,
                                        v["min_bulk_ess"] if v["min_bulk_ess"] is not None else np.nan)))
        rec["verdict"] = final
        if final == "INCONCLUSIVE":
            rec["reason"] = why or why_open
        rec["passed"] = final == "PASS"
        out.append(rec)

    method = intervals.METHOD_TEXT["log_ratio"]
    # 1. Ionosphere: every -site method >= f x every baseline (the pairs; PASS by IUT, FAIL by Bonferroni)
    f_site = float(claims_cfg["site_factor"])
    ratios = {}
    for m in METRICS:
        base = max(_value(table, "ionosphere", "fixed", m), _value(table, "ionosphere", "prior-white", m))
        for s_ in ("surr-site", "post-site"):
            ratios[f"{s_}_over_best_baseline_{m}"] = _value(table, "ionosphere", s_, m) / base
    pairs = {f"{s_} / {b}": (col("ionosphere", s_), col("ionosphere", b))
             for s_ in ("surr-site", "post-site") for b in ("fixed", "prior-white")}
    v, bind, plain, bonf = intervals.decide_all_pairs(pairs, f_site, "above")
    ivs = [_iv(k, plain[k], f_site, "above", method) for k in pairs]
    rec = {"id": "ionosphere-site-beats-baselines",
           "statement": f"Ionosphere: surr-site and post-site each reach at least {f_site:g}x the effective "
                        "samples per covariance construction of fixed and of prior-white",
           "quote": {"text": QUOTES["ionosphere-site-beats-baselines"], "where": "Murray & Adams 2010, Sec. 6"},
           "rationale": (f"'much better' = at least {f_site:g}x (threshold declared in issue 15, unchanged); 'both "
                         "-site methods ... than the two baselines' = all four pairs: PASS needs every pair's 95% "
                         "interval above (intersection-union), FAIL one pair's Bonferroni (97.5% x 4) interval below"),
           "measured": {**ratios, "intervals": ivs,
                        "bonferroni_intervals": [_iv(k, bonf[k], f_site, "above", method) for k in pairs],
                        # the replicate count of the final state's projection (issue 32): chains per method
                        "n_chains_per_method": int(min(len(a) for p_ in pairs.values() for a in p_))},
           "paper": {"description": "both -site methods much better than fixed and prior-white",
                     "why_it_may_differ": (
                         "Murray's released update_theta_aux_surr.m counts log|S| twice, so it samples "
                         "p(theta, f | y) prod_i S_ii^-1/2; on that target our surr-site leads on Ionosphere "
                         "(sigma_f ~0.8 instead of ~7; 3-8x prior-white), on the correct one (ours) it does "
                         "not: benchmarks/bench_ma_released_target.py, docs (Murray & Adams)"),
                     "note": RELEASED_TARGET_NOTE},
           "interval": _iv(bind, (bonf if v == "FAIL" else plain)[bind], f_site, "above",
                           method + ("; Bonferroni over the 4 pairs" if v == "FAIL" else ""))}
    fail_base = bind.split(" / ")[1]
    finish(rec, v, {"PASS": [("ionosphere", "surr-site"), ("ionosphere", "post-site")],
                    "FAIL": [("ionosphere", fail_base)]},
           "a pair's 95% interval straddles the threshold: these chains cannot tell on which side it lies")
    # 2. synthetic: post / surr within a factor f_sp (equivalence; both methods gated for either verdict)
    f_sp = float(claims_cfg["surr_post_factor"])
    sp = {f"post_over_surr_{m}": _value(table, "synthetic", "post-site", m) / _value(table, "synthetic", "surr-site", m)
          for m in METRICS}
    elh = intervals.log_ratio(col("synthetic", "post-site"), col("synthetic", "surr-site"))
    v = claims.decide(elh[1], elh[2], [1.0 / f_sp, f_sp], "between")
    rec = {"id": "synthetic-surr-post-close",
           "statement": f"Synthetic regression: surr- and post- are within a factor {f_sp:g} of each other in "
                        "effective samples per covariance construction",
           "quote": {"text": QUOTES["synthetic-surr-post-close"], "where": "Murray & Adams 2010, Sec. 6"},
           "rationale": (f"'very similarly' = within the {f_sp:g}x advantage the authors say they expected and did "
                         "not see: an equivalence statement, PASS when the 95% interval lies inside "
                         f"[1/{f_sp:g}, {f_sp:g}], FAIL when wholly outside"),
           "measured": sp,
           "paper": {"description": "post- and surr- perform very similarly; 2-3x expected, not seen",
                     "why_it_may_differ": (
                         "the ratio depends on the synthetic data draw (the paper: 'not realized on this "
                         "particular dataset'): with the same methods and chains, other draws of the paper's "
                         "generator (workflow seed 1, 2, 3) gave 1.02, 1.36, 0.81, all within 3x; the "
                         "default seed's draw at the paper's n = 200 gave 6.5x (docs, Murray & Adams)")},
           "interval": _iv("post-site / surr-site", elh, [1.0 / f_sp, f_sp], "between", method)}
    both = [("synthetic", "post-site"), ("synthetic", "surr-site")]
    finish(rec, v, {"PASS": both, "FAIL": both},
           "the 95% interval straddles an end of the equivalence range: these chains cannot tell")
    # 3. fixed can work exceedingly poorly: on SOME data set fixed <= f_w x every other method
    f_w = float(claims_cfg["near_worst_factor"])
    dsets = [d for d in sorted(set(table["dataset"]), key=DATASETS.index)
             if "fixed" in set(table[table["dataset"] == d]["method"]) and (table["dataset"] == d).sum() > 1]
    fw, per_d, ivs = {}, {}, []
    level_d = 1 - alpha / max(len(dsets), 1)  # Bonferroni over the choice of data set
    for d in dsets:
        sub = table[table["dataset"] == d].set_index("method")[f"{metric}_mean"]
        others = [m for m in sub.index if m != "fixed"]
        fw[f"{d}_fixed_over_worst_other"] = float(sub["fixed"] / sub.drop("fixed").min())
        fw[f"{d}_fixed_rank_from_bottom"] = int((sub < sub["fixed"]).sum()) + 1
        vd, bd, pl, bo = intervals.decide_all_pairs({f"{d}: fixed / {m}": (col(d, "fixed"), col(d, m)) for m in others},
                                                    f_w, "below", level=level_d)
        per_d[d] = (vd, others)
        ivs.append(_iv(bd, (bo if vd == "FAIL" else pl)[bd], f_w, "below",
                       method + f"; {100 * level_d:.4g}% (Bonferroni over {len(dsets)} data sets)"))
    passes = [d for d, (vd, _) in per_d.items() if vd == "PASS"]
    v = "PASS" if passes else ("FAIL" if per_d and all(vd == "FAIL" for vd, _ in per_d.values()) else "INCONCLUSIVE")
    fw["intervals"] = ivs
    fw["data_sets_where_fixed_is_poor"] = passes
    shown = ivs[dsets.index(passes[0])] if passes else (ivs[0] if ivs else None)
    rec = {"id": "fixed-worst-or-near-worst",
           "statement": f"fixed works poorly on at least one data set: its effective samples per covariance "
                        f"construction at most {f_w:g}x those of every other method there",
           "quote": {"text": QUOTES["fixed-worst-or-near-worst"], "where": "Murray & Adams 2010, Sec. 6"},
           "rationale": ("'can work exceedingly poorly' is existential (it can, on some problem): on some data set "
                         f"fixed <= {f_w:g}x every other method (threshold declared in issue 15, unchanged); PASS "
                         "when one data set's pairs all lie below at the Bonferroni level over data sets, FAIL when "
                         "every data set has a pair wholly above"),
           "encoding_change": ("was 'on every data set' (issue 15), which reads 'can work' as 'always works'; the "
                               "quantifier is now the sentence's (issue 26 section 2); the old and new verdicts are "
                               "both given in the closing note and the verdict table"),
           "measured": fw, "paper": {"description": "fixing f 'can work exceedingly poorly'"},
           "interval": shown}
    chosen = _pick_data_set(passes, per_d, conv, chains)
    if chosen is not None:
        fw["data_set_gated"] = chosen
        rec["interval"] = ivs[dsets.index(chosen)]
    finish(rec, v, {"PASS": [(chosen, m) for m in per_d[chosen][1]] if passes else None,
                    "FAIL": [(d, "fixed") for d in dsets]},
           "no data set decides it: their intervals straddle the threshold")
    # 4. the point pattern with the most zero bins: the best -site method beats every -taylor method
    pp = {k: v_ for k, v_ in zero_bins.items() if k in set(table["dataset"])}
    most = max(pp, key=pp.get)
    st = {f"{d}_zero_bins": int(z) for d, z in pp.items()}
    st["dataset_with_most_zero_bins"] = most
    for m in METRICS:
        for kind in ("surr", "post"):
            st[f"{most}_{kind}_site_over_taylor_{m}"] = (_value(table, most, f"{kind}-site", m)
                                                        / _value(table, most, f"{kind}-taylor", m))
    taylors = ("surr-taylor", "post-taylor")
    per_s, ivs = {}, []
    for s_ in ("surr-site", "post-site"):  # Bonferroni over the choice of the -site method (2)
        vs_, bs_, pl, bo = intervals.decide_all_pairs({f"{most}: {s_} / {t}": (col(most, s_), col(most, t))
                                                       for t in taylors}, 1.0, "above", level=1 - alpha / 2)
        per_s[s_] = vs_
        ivs.append(_iv(bs_, (bo if vs_ == "FAIL" else pl)[bs_], 1.0, "above", method + "; 97.5% (Bonferroni "
                       "over the 2 -site methods)"))
    winners = [s_ for s_, vs_ in per_s.items() if vs_ == "PASS"]
    v = "PASS" if winners else ("FAIL" if all(vs_ == "FAIL" for vs_ in per_s.values()) else "INCONCLUSIVE")
    st["intervals"] = ivs
    rec = {"id": "point-pattern-site-beats-taylor",
           "statement": "On the binned point pattern with the most zero-count bins, the best -site representation "
                        "beats both -taylor ones in effective samples per covariance construction",
           "quote": {"text": QUOTES["point-pattern-site-beats-taylor"],
                     "where": "Murray & Adams 2010, Sec. 6 (the redwood data)"},
           "rationale": ("'the best results come from the site-posterior approximations' = some -site method beats "
                         "surr-taylor and post-taylor: PASS when one -site method's two pairs lie above 1 at 97.5% "
                         "(Bonferroni over which -site method), FAIL when each -site method has a pair below"),
           "encoding_change": ("was 'surr-site > surr-taylor and post-site > post-taylor' (both pairwise wins), more "
                               "than the sentence says; the old and new verdicts are both given in the closing note "
                               "and the verdict table"),
           "measured": st,
           "paper": {"description": "redwoods: post-taylor ~ prior-white, surr-taylor better, best from -site"},
           "interval": ivs[["surr-site", "post-site"].index(winners[0])] if winners else ivs[0]}
    finish(rec, v, {"PASS": [(most, winners[0])] if winners else None, "FAIL": [(most, t) for t in taylors]},
           "the -site vs -taylor intervals straddle 1: these chains cannot tell")
    if chains is None:
        for rec in out:
            rec["verdict"], rec["passed"] = "INCONCLUSIVE", False
            rec["reason"] = "one chain per method: no interval (the spread over chains is unknown)"
    return out


# ---------------------------------------------------------------------------
# diagnostic: the target of the released code (hyper_slice target="released-code")
# ---------------------------------------------------------------------------
def released_target_table(correct: list[dict], released: list[dict], seed: int = 0, n_boot: int = 4000):
    """Fig. 3's Ionosphere methods on the correct target and on the released code's target, side by side.

    ``correct``, ``released``: chain groups (``run_block`` outputs) of the
    Ionosphere methods on the posterior (Fig. 3's chains) and with
    ``cfg["target"] = "released-code"`` (``hyper_slice``: p(theta, f | y)
    prod_i S_ii(theta)^-1/2, what Murray's released surrogate-data code samples;
    NOT the posterior).  One row per (target, method): sigma_f's posterior
    (all chains pooled: mean, s.d., 5/50/95 % quantiles; log sigma_f's mean,
    s.d. and rank split R-hat), Fig. 3's efficiency (ESS of the complete-data
    log-likelihood per covariance construction, mean and s.e. over chains) and
    its ratio to prior-white on the same target and to prior-white on the
    correct target (the comparison the paper's figure makes if its surr-site
    ran the released code), each with a 95 % percentile bootstrap interval
    over chains (``claims.bootstrap_ratio``).
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    pooled: dict = {}
    for target, groups in (("posterior", correct), ("released-code", released)):
        for g in groups:
            post = g["posterior"]
            if post.attrs.get("dataset") != "ionosphere":
                continue
            got = post.attrs.get("target", "posterior")
            if got != target:
                raise ValueError(f"a chain file of target {got!r} was given as {target!r}")
            pooled.setdefault((target, post.attrs["method"]), []).append(g)
    per_cov = {k: np.concatenate([chain_efficiency(g)["per_covariance"].values for g in v]) for k, v in pooled.items()}
    rows = []
    for (target, method), groups in pooled.items():
        psi = np.concatenate([g["posterior"]["psi"].sel(param="sigma_f").values for g in groups], axis=0)
        sf = np.exp(psi)
        v = per_cov[(target, method)]
        row = {"target": target, "method": method, "n": int(groups[0]["posterior"].attrs.get("n", 0)),
               "n_chains": int(psi.shape[0]), "n_draws": int(psi.shape[1]),
               "sigma_f_mean": float(sf.mean()), "sigma_f_sd": float(sf.std()),
               "sigma_f_q05": float(np.quantile(sf, 0.05)), "sigma_f_q50": float(np.quantile(sf, 0.5)),
               "sigma_f_q95": float(np.quantile(sf, 0.95)), "log_sigma_f_mean": float(psi.mean()),
               "log_sigma_f_sd": float(psi.std()),
               "log_sigma_f_rank_rhat": (float(diagnostics.split_rhat(psi, rank_normalize=True))
                                         if psi.shape[0] > 1 else float("nan")),
               "per_covariance_mean": float(v.mean()),
               "per_covariance_se": float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")}
        for label, ref in (("same_target", (target, "prior-white")), ("posterior", ("posterior", "prior-white"))):
            est = lo = hi = float("nan")
            if ref in per_cov:
                est, lo, hi = claims.bootstrap_ratio(v, per_cov[ref], rng, n_boot=n_boot)
            row[f"over_prior_white_{label}"], row[f"over_prior_white_{label}_lo"] = est, lo
            row[f"over_prior_white_{label}_hi"] = hi
        rows.append(row)
    table = pd.DataFrame(rows)
    order_m = {m: i for i, m in enumerate(hs.METHODS)}
    order_t = {"posterior": 0, "released-code": 1}
    table = table.sort_values(["target", "method"],
                              key=lambda s: s.map(order_t if s.name == "target" else order_m))
    return table.reset_index(drop=True)


# ---------------------------------------------------------------------------
# lengthen only the chains the gate needs (issue 26 section 3): plan, re-decide, confirm
# ---------------------------------------------------------------------------
def gate_plan(records: list[dict]) -> dict:
    """The groups to run longer: those a claim's interval verdict rests on that fail the gate.

    ``records``: :func:`fig3_claims` on the fixed-length chains (look 1).  Returns
    ``{"extend": ["data set/method", ...], "groups": [[data set, method], ...], "claims": {id:
    {"interval_verdict", "gate_needs"}}}``;
    an empty ``extend`` when every verdict the intervals give is already on converged chains.
    """
    out = {"extend": set(), "claims": {}}
    for rec in records:
        m = rec["measured"]
        need = m.get("gate_needs") or []
        if m.get("interval_verdict") and need:
            out["claims"][rec["id"]] = {"interval_verdict": m["interval_verdict"], "gate_needs": list(need)}
            out["extend"].update(need)
    out["extend"] = sorted(out["extend"])
    out["groups"] = [g.split("/") for g in out["extend"]]
    return out


def with_extended(table, chains, convergence, extended: list[dict]):
    """Fig. 3's table, per-chain efficiencies and convergence rows with ``extended``'s groups replaced.

    ``extended``: :func:`run_until_converged` outputs.  The other groups' rows are unchanged;
    the replaced groups' ``{metric}_mean`` (and s.e.) are recomputed from their longer chains.
    """
    table, chains, convergence = table.copy(), chains.copy(), convergence.copy()
    import pandas as pd

    effs = efficiency_rows([chain_efficiency(g) for g in extended])
    conv = convergence_rows(extended)
    for (d, m), sub in effs.groupby(["dataset", "method"], sort=False):
        chains = pd.concat([chains[~((chains["dataset"] == d) & (chains["method"] == m))], sub], ignore_index=True)
        row = (table["dataset"] == d) & (table["method"] == m)
        for metric in METRICS:
            v = sub[metric].to_numpy(float)
            table.loc[row, f"{metric}_mean"] = float(v.mean())
            table.loc[row, f"{metric}_se"] = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
        table.loc[row, "n_chains"] = len(sub)
        convergence = pd.concat([convergence[~((convergence["dataset"] == d) & (convergence["method"] == m))],
                                 conv[(conv["dataset"] == d) & (conv["method"] == m)]], ignore_index=True)
    return table, chains, convergence


def confirm(look1: list[dict], look2: list[dict], plan: dict, extended_info: dict) -> list[dict]:
    """The claims' final records: a claim the plan extended keeps its look-1 verdict only if look 2 confirms it.

    A claim with no extension keeps its look-1 record.  A claim whose look-1 interval
    verdict V was blocked by the gate is re-decided on the extended chains (look 2); it
    is V when look 2 gives V with the gate met, otherwise INCONCLUSIVE.  The extension can
    confirm or withdraw a verdict, never reverse it, so a wrong final verdict needs a wrong
    look-1 interval verdict: the error rate is look 1's, with no correction over the looks
    (coverage row "gated extension, confirm-only"; ``gpbayes_repro.coverage``).
    ``extended_info``: {"data set/method": {"n_draws", "stopped"}} of the extended groups.
    """
    by2 = {r["id"]: r for r in look2}
    out = []
    for r1 in look1:
        p = plan["claims"].get(r1["id"])
        if p is None:
            out.append(r1)
            continue
        rec = copy.deepcopy(by2[r1["id"]])
        v1 = p["interval_verdict"]
        rec["measured"]["look1"] = {"interval_verdict": v1, "interval": r1.get("interval"),
                                    "gate_needs": p["gate_needs"],
                                    "convergence_of_gated_chains": r1["measured"].get("convergence_of_gated_chains")}
        rec["measured"]["extended_chains"] = {k: extended_info[k] for k in p["gate_needs"] if k in extended_info}
        rec["measured"]["design"] = ("two looks, confirm-only: look 1 on the fixed-length chains gave an interval verdict the "
                         "gate blocked; only the chains it rests on ran on until converged (stop rule: R-hat < "
                         "1.05, bulk ESS > 100, within a budget of draws); look 2 on them can confirm the look-1 "
                         "verdict or withdraw it (INCONCLUSIVE), never reverse it, so the error rate is look 1's")
        if rec["verdict"] != v1:
            got = rec["verdict"]
            rec["verdict"], rec["passed"] = "INCONCLUSIVE", False
            rec["reason"] = (f"look 1 (fixed-length chains) gave {v1}, blocked by the gate; on the extended chains "
                             f"the claim is {got}" + (f" ({by2[r1['id']].get('reason')})"
                                                      if by2[r1["id"]].get("reason") else "")
                             + ": not confirmed")
        out.append(rec)
    return out


def zero_bins_of(paths) -> dict:
    """{data set: number of zero-count bins} of the binned point patterns among the data files ``paths``."""
    out = {}
    for f in paths:
        attrs = xr.load_dataset(f).attrs
        if "n_zero_bins" in attrs:
            out[attrs["name"]] = int(attrs["n_zero_bins"])
    return out


# ---------------------------------------------------------------------------
# claim 2 over draws of the paper's synthetic generator (issue 26 section 4)
# ---------------------------------------------------------------------------
def synthetic_draw(cfg: dict, n: int, seed: int, draw: int) -> xr.Dataset:
    """Draw ``draw`` of M&A's synthetic generator (draw 0 is Fig. 3's data set; others have streams of their own)."""
    c = cfg["synthetic"]
    key = ("slice_ma", "synthetic", "simulate") + (() if int(draw) == 0 else ("draw", int(draw)))
    ds = synthetic_data(int(n), rngmod.stream(seed, *key), n_full=int(c["n_full"]), d=int(c["d"]),
                        noise_variance=float(c["noise_variance"]), lengthscale_max=float(c["lengthscale_max"]))
    ds.attrs["draw"] = int(draw)
    return ds


def draw_unit(surr: dict, post: dict) -> dict:
    """One data draw's unit for claim 2: log of post-site / surr-site geometric-mean ESS per covariance
    construction over the draw's chains, and the draw's convergence (both methods gated)."""
    es, ep = chain_efficiency(surr)["per_covariance"].values, chain_efficiency(post)["per_covariance"].values
    conv = convergence_rows([surr, post])
    return {"draw": int(surr["posterior"].attrs.get("draw", 0)),
            "log_ratio": float(np.mean(np.log(ep)) - np.mean(np.log(es))),
            "max_rank_rhat": float(conv["max_rank_rhat"].max()), "min_bulk_ess": float(conv["min_bulk_ess"].min())}


def sequential_over_draws(units: list[dict], look: int, max_looks: int, bounds, alpha: float = 0.05) -> dict:
    """Look ``look`` (0-based) of claim 2's sequential design over data draws.

    ``units``: :func:`draw_unit` of every draw so far.  The quantity is the generator's
    geometric-mean ratio post-site / surr-site (the mean over draws of the per-draw log
    ratio; a draw's within-draw chain noise is part of its spread): a t interval over
    draws at level 1 - alpha / max_looks (Bonferroni over the planned looks: whatever
    the stopping, the chance of a wrong verdict is at most alpha), decided against
    ``bounds`` (equivalence: PASS inside, FAIL wholly outside).  Both methods' chains on
    every draw are gated (either verdict).  ``stop``: decided, blocked by the gate (more
    draws cannot fix unconverged chains), or the last planned look.
    """
    from scipy import stats

    x = np.array([u["log_ratio"] for u in units], dtype=float)
    level = 1 - alpha / max(int(max_looks), 1)
    m = x.size
    est = float(np.exp(x.mean())) if m else math.nan
    lo = hi = math.nan
    if m >= 2 and np.all(np.isfinite(x)):
        h = float(stats.t.ppf(0.5 + level / 2, m - 1)) * float(x.std(ddof=1)) / math.sqrt(m)
        lo, hi = float(np.exp(x.mean() - h)), float(np.exp(x.mean() + h))
    verdict = claims.decide(lo, hi, list(bounds), "between")
    gate = ([u["max_rank_rhat"] for u in units], [u["min_bulk_ess"] for u in units])
    final, why = claims.directional_gate(verdict, {"PASS": gate, "FAIL": gate})
    stop = final != "INCONCLUSIVE" or why is not None or look + 1 >= max_looks
    return {"look": int(look), "max_looks": int(max_looks), "n_draws": int(m), "level": level, "estimate": est,
            "lo": lo, "hi": hi, "interval_verdict": verdict, "verdict": final, "gate": why, "stop": bool(stop),
            "units": units}


#: measured cost of one further synthetic draw at default sizes (n = 100, 3 chains x (200 + 1800) iterations of
#: surr-site and post-site: 37 + 42 CPU-s, AMD EPYC, the default run's benchmarks)
DRAW_CPU_S_DEFAULT = 79.0


def claim2_over_draws(records: list[dict], look: dict | None, claims_cfg: dict) -> list[dict]:
    """Claim 2 re-encoded over draws of the paper's synthetic generator (issue 26 section 4).

    M&A built the synthetic problem "to assess how much worse the surrogate data method is
    compared to an ideal reparameterization" and hedge their finding to "this particular
    dataset", a draw that cannot be recovered; what a reproduction can test is the
    generator's typical draw.  The spread of post/surr between draws (Fig. 3's draw 4.6x,
    workflow seeds 1-3: 1.02, 1.36, 0.81) exceeds the spread between chains of one draw, so
    more chains on one draw would only decide that draw.  ``look``: the stopping look of
    :func:`sequential_over_draws` (None: the scale plans no further draw; the claim stays
    INCONCLUSIVE with the cost that would decide it).  The within-draw interval of Fig. 3's
    draw stays in the record, for information.
    """
    f = float(claims_cfg["surr_post_factor"])
    out = []
    for rec in records:
        if rec["id"] != "synthetic-surr-post-close":
            out.append(rec)
            continue
        rec = copy.deepcopy(rec)
        rec["measured"]["fig3_draw_interval"] = rec.pop("interval")
        rec["measured"]["fig3_draw_verdict"] = rec.get("measured", {}).get("interval_verdict", rec["verdict"])
        rec["statement"] = (f"Synthetic regression (the paper's generator): post- and surr- are within a factor {f:g} "
                            "of each other in effective samples per covariance construction on a typical draw "
                            "(geometric mean over draws)")
        rec["rationale"] = (f"'very similarly' = within the {f:g}x advantage the authors expected and did not see "
                            f"(equivalence, [1/{f:g}, {f:g}]); the paper ran one draw of its generator to assess the method "
                            "and hedges to 'this particular dataset', which cannot be recovered, and the ratio "
                            "varies more between draws than between chains: so the claim is decided over draws "
                            "(draw 0 = Fig. 3's), a t interval over the per-draw log ratios, sequential in blocks "
                            "of draws with Bonferroni over the planned looks")
        rec["encoding_change"] = ("was decided on the chains of one draw (Fig. 3's); now over draws of the "
                                  "generator; old and new verdicts in the closing note")
        rec.pop("reason", None)
        if look is None:
            rec["verdict"], rec["passed"] = "INCONCLUSIVE", False
            rec["interval"] = None
            rec["reason"] = ("decided over draws of the generator, and this scale runs only Fig. 3's draw: "
                             f"about 12-16 further draws would decide it (one draw at default sizes, surr-site and "
                             f"post-site x 3 chains x 2,000 iterations: ~{DRAW_CPU_S_DEFAULT:.0f} CPU-s; the paper "
                             "scale runs the design)")
            out.append(rec)
            continue
        rec["measured"]["sequential"] = {k: look[k] for k in ("look", "max_looks", "n_draws", "level",
                                                              "interval_verdict", "gate")}
        rec["measured"]["per_draw_ratio"] = {str(u["draw"]): float(np.exp(u["log_ratio"])) for u in look["units"]}
        rec["interval"] = {"quantity": "post-site / surr-site, geometric mean over draws", "estimate":
                           claims.finite_or_none(look["estimate"]), "lo": claims.finite_or_none(look["lo"]),
                           "hi": claims.finite_or_none(look["hi"]), "threshold": [1.0 / f, f], "side": "between",
                           "method": (f"{100 * look['level']:.4g}% t interval over {look['n_draws']} data draws of "
                                      f"the mean per-draw log ratio (Bonferroni over {look['max_looks']} planned "
                                      "looks; coverage measured: gpbayes_repro.coverage)")}
        rec["verdict"] = look["verdict"]
        rec["passed"] = look["verdict"] == "PASS"
        if look["verdict"] == "INCONCLUSIVE":
            rec["reason"] = look["gate"] or (f"{look['n_draws']} draws, {look['max_looks']} looks spent: the interval "
                                             "straddles an end of the equivalence range")
        out.append(rec)
    return out
