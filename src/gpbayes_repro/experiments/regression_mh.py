"""First end-to-end slice: exact-marginal random-walk MH for GP regression.

Stages (each a Snakemake rule calling one function here):

1. ``fit_ml``      type-II ML (MAP under the configured priors is *not*
                   used: the ML estimate is what the figure marks) and the
                   Laplace-style proposal covariance (-H)^{-1} of the log
                   posterior at the posterior mode (Xiong et al. Sec. 4.3:
                   MH with proposal alpha (-H)^{-1});
2. ``run_chain``   one chain, started from the ML estimate plus a draw of
                   N(0, (-H)^{-1}) so that chains are over-dispersed
                   relative to the posterior, scale tuned to the target
                   acceptance during burn-in, then frozen;
3. ``merge_chains`` / ``diagnostics`` / ``claims``.

The model is the AMIS paper's: y = f + e, f ~ GP(0, sigma exp(-sum_r
(x_r-x'_r)^2/tau_r^2)), e ~ N(0, lambda I); psi = (log tau_1..d, log sigma,
log lambda).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .. import builders, claims
from gpbayes import diagnostics, linalg, priors
from gpbayes_repro import io
from gpbayes.mcmc import random_walk
from gpbayes.mcmc import runner
from gpbayes.mcmc.runner import Progress
from gpbayes.finite_differences import hessian_from_gradients
from gpbayes.posterior import log_posterior, log_posterior_value_and_grad
from gpbayes.regression import GPRegression, fit_type2_ml

__all__ = ["build_model", "build_prior", "fit_ml", "run_chain", "run_chains", "stop_rule", "merge_chains",
           "diagnostics_table", "evaluate_claims"]


def build_model(ds: xr.Dataset, exp_cfg: dict) -> GPRegression:
    if ds.attrs.get("task") not in (None, "regression"):
        raise ValueError(f"data set {ds.attrs.get('name')!r} is a {ds.attrs.get('task')} task, "
                         "regression_mh needs a regression data set")
    X = np.asarray(ds["X"].values, dtype=float)
    y = np.asarray(ds["y"].values, dtype=float)
    if exp_cfg.get("standardise_target", True):
        y = (y - y.mean()) / y.std()
    kernel = builders.kernel_from_spec(exp_cfg["kernel"], X.shape[1])
    # the gradient of the code the recorded results were made with, to the bit (issue 24 made "fused" the default)
    return GPRegression(X, y, kernel, gradient="per_parameter")


def build_prior(model: GPRegression, exp_cfg: dict) -> priors.IndependentPrior:
    p = exp_cfg["priors"]
    return builders.kernel_prior(model.kernel, p["scale"], p.get("amplitude"), extra=[p["noise_variance"]])


def fit_ml(ds: xr.Dataset, exp_cfg: dict, n_restarts: int, rng: np.random.Generator) -> xr.Dataset:
    """Type-II ML estimate, posterior mode and proposal covariance, as a Dataset."""
    model = build_model(ds, exp_cfg)
    prior = build_prior(model, exp_cfg)
    ml = fit_type2_ml(model, rng, n_restarts=n_restarts)
    # posterior mode, started from the ML estimate, for the proposal shape
    mode = fit_type2_ml(model, rng, n_restarts=1, init=ml.psi, log_prior=prior)

    value_and_grad = log_posterior_value_and_grad(model, prior)
    H = hessian_from_gradients(lambda psi: value_and_grad(psi)[1], mode.psi)
    cov = linalg.inverse_of_negative_definite(H)
    names = model.param_names
    return xr.Dataset(
        {
            "psi_ml": (("param",), ml.psi),
            "psi_map": (("param",), mode.psi),
            "log_marginal_ml": ((), ml.log_marginal),
            "restart_objectives": (("restart",), ml.all_objectives),
            "proposal_cov": (("param", "param2"), cov),
        },
        coords={"param": names, "param2": names},
        attrs={"dataset": str(ds.attrs.get("name", "")), "n": int(model.X.shape[0]),
               "converged": int(ml.converged)},
    )


def run_chain(ds: xr.Dataset, ml: xr.Dataset, exp_cfg: dict, settings: dict,
              rng: np.random.Generator, chain: int) -> dict[str, xr.Dataset]:
    """One MH chain in the ArviZ layout (chain dimension of size 1)."""
    model = build_model(ds, exp_cfg)
    prior = build_prior(model, exp_cfg)
    target = log_posterior(model, prior)
    cov = ml["proposal_cov"].values
    start = _start(ml, rng)
    chain_out = random_walk.run_chain(rng, start, target, cov, n_burn=settings["n_burn"],
                                      n_draws=settings["n_draws"], target_accept=exp_cfg["target_accept"],
                                      callback=Progress(f"regression_mh chain {chain}"))
    return _groups(chain_out, model, chain)


def stop_rule(exp_cfg: dict, settings: dict) -> runner.StopRule | None:
    """The foundation chains' stop rule, or None (fixed length) when ``exp_cfg["until_converged"]`` is null.

    Converged (the claims' own thresholds, ``exp_cfg["claims"]``): rank-normalised split
    R-hat < ``max_rhat`` (Vehtari et al. 2021) and bulk ESS > ``min_ess`` on every
    hyperparameter, checked every ``check_every`` kept draws from ``min_draws`` on; budget:
    ``settings["n_draws"]`` kept draws per chain (the scale's chain length).
    """
    uc = exp_cfg.get("until_converged")
    if not uc:
        return None
    c = exp_cfg["claims"]
    return runner.StopRule(rhat=float(c["max_rhat"]), ess_bulk=float(c["min_ess"]),
                           check_every=int(uc["check_every"]), min_draws=int(uc.get("min_draws", 2000)),
                           max_draws=int(settings["n_draws"]))


def _start(ml: xr.Dataset, rng: np.random.Generator) -> np.ndarray:
    cov = ml["proposal_cov"].values
    return ml["psi_ml"].values + linalg.cholesky(cov, name="proposal covariance", count=False) @ rng.standard_normal(cov.shape[0])


def _groups(chain_out, model, chain: int) -> dict[str, xr.Dataset]:
    # one exact marginal (one likelihood evaluation) per MH iteration
    chain_out.stats["n_likelihood"] = np.ones_like(chain_out.stats["n_cubic"])
    groups = io.to_inference_groups([chain_out], var_name="psi", dims=("param",),
                                    coords={"param": np.array(model.param_names)},
                                    stats=["lp", "accepted", "acceptance_rate", "n_cubic", "n_likelihood",
                                           "wall_time", "proposal_lp"])
    w = chain_out.warmup
    groups["posterior"].attrs.update(
        proposal_scale=chain_out.params["proposal_scale"], burn_acceptance=w["n_accepted"] / max(w["n_iterations"], 1),
        burn_n_cubic=w["n_cubic"] - w["n_cubic_init"], burn_wall_time=w["wall_time"], chain_index=chain,
        stopped=str(chain_out.stopped),
    )
    return groups


def run_chains(ds: xr.Dataset, ml: xr.Dataset, exp_cfg: dict, settings: dict,
               rngs: list[np.random.Generator], stop: runner.StopRule | None) -> list[dict[str, xr.Dataset]]:
    """All chains of one data set in one job, each as :func:`run_chain` would give it.

    ``stop=None``: :func:`run_chain` per chain (``settings["n_draws"]`` draws each).
    With a :class:`~gpbayes.mcmc.runner.StopRule` the chains advance together in blocks
    of ``stop.check_every`` draws until the rule holds across them or the budget
    ``stop.max_draws`` is spent (``gpbayes.mcmc.runner.run_specs``); a chain's first N
    draws are those of a fixed-length run of N draws (each chain draws only from its own
    generator), and every chain records why it stopped (attrs ``stopped``).
    """
    if stop is None:
        return [run_chain(ds, ml, exp_cfg, settings, g, c) for c, g in enumerate(rngs)]
    model = build_model(ds, exp_cfg)
    target = log_posterior(model, build_prior(model, exp_cfg))
    cov = ml["proposal_cov"].values
    specs = [random_walk.chain_spec(g, _start(ml, g), target, cov, n_burn=settings["n_burn"],
                                    target_accept=exp_cfg["target_accept"]) for g in rngs]
    outs = runner.run_specs(rngs, specs, stop=stop,
                            callback=Progress(f"regression_mh {len(rngs)} chains", n_chains=len(rngs)))
    out = [_groups(o, model, c) for c, o in enumerate(outs)]
    for g in out:
        g["posterior"].attrs.update(max_draws=int(stop.max_draws), check_every=int(stop.check_every))
    return out


def merge_chains(parts: list[dict[str, xr.Dataset]]) -> dict[str, xr.Dataset]:
    return io.concat_chains(parts)


def diagnostics_table(groups: dict[str, xr.Dataset], ml: xr.Dataset) -> xr.Dataset:
    """Per parameter: posterior mean/sd, ML value, ESS, CODA ESS, R-hat; run totals.

    ``rhat`` is Gelman & Rubin's classic PSRF; ``rank_rhat`` the
    rank-normalised split R-hat of Vehtari et al. (2021), for which they
    recommend the threshold 1.01 that the slice's claim uses.
    """
    psi = groups["posterior"]["psi"]
    ss = groups["sample_stats"]
    rows = {k: [] for k in ("mean", "sd", "ml", "ess", "ess_coda", "rhat", "rank_rhat")}
    for p in psi["param"].values:
        x = psi.sel(param=p).values
        rows["mean"].append(float(x.mean()))
        rows["sd"].append(float(x.std()))
        rows["ml"].append(float(ml["psi_ml"].sel(param=p)))
        rows["ess"].append(float(diagnostics.ess(x)))
        rows["ess_coda"].append(float(diagnostics.ess_coda(x)))
        rows["rhat"].append(float(diagnostics.rhat(x)))
        rows["rank_rhat"].append(float(diagnostics.split_rhat(x, rank_normalize=True)))
    total_time = float(ss["wall_time"].sum())
    out = xr.Dataset({k: (("param",), np.array(v)) for k, v in rows.items()},
                     coords={"param": psi["param"].values})
    out["ess_per_second"] = out["ess"] / total_time
    out.attrs.update(
        acceptance=float(ss["accepted"].mean()),
        n_chains=int(psi.sizes["chain"]), n_draws=int(psi.sizes["draw"]),
        wall_time_s=total_time, cubic_per_iteration=float(ss["n_cubic"].mean()),
        stopped=str(groups["posterior"].attrs.get("stopped", "length")),
        max_draws=int(groups["posterior"].attrs.get("max_draws", psi.sizes["draw"])),
    )
    every = int(groups["posterior"].attrs.get("check_every", 0))
    if every and psi.sizes["chain"] > 1 and psi.sizes["draw"] >= every:
        # the stop rule's path: max rank R-hat over hyperparameters after every check_every draws
        x = psi.transpose("chain", "draw", "param").values
        ns = list(range(every, x.shape[1] + 1, every))
        out.attrs["rhat_check_draws"] = np.array(ns)
        out.attrs["rhat_at_checks"] = np.array([max(diagnostics.split_rhat(x[:, :n, j], rank_normalize=True)
                                                    for j in range(x.shape[2])) for n in ns])
    return out


def evaluate_claims(table: xr.Dataset, exp_cfg: dict, scale: str, dataset: str) -> list[dict]:
    """The slice's claims (see gpbayes_repro.claims for the record format)."""
    c = exp_cfg["claims"]
    min_ess = float(table["ess"].min())
    max_rhat = float(table["rank_rhat"].max())
    acc = float(table.attrs["acceptance"])
    worst = str(table["param"].values[int(table["ess"].argmin())])
    return [
        {
            "id": f"{claims.slug(dataset)}-ess",
            "statement": f"ESS > {c['min_ess']:g} for every hyperparameter ({dataset}, {scale} scale)",
            "measured": {"min_ess": min_ess, "worst_parameter": worst},
            "paper": None,
            "passed": min_ess > c["min_ess"],
        },
        _rhat_claim(table, exp_cfg, scale, dataset, max_rhat),
        {
            "id": f"{claims.slug(dataset)}-acceptance",
            "statement": f"post-burn-in acceptance within 0.15-0.35 of the tuned target {exp_cfg['target_accept']:g}",
            "measured": {"acceptance": acc},
            "paper": None,
            "passed": 0.15 <= acc <= 0.35,
        },
    ]


#: where the foundation's R-hat claim comes from (docs/reproduction/foundation.md, "Chain length")
RHAT_SOURCE = ("docs/reproduction/foundation.md, 'Chain length': '4 x (3000 + 20000) iterations left the "
               "rank-normalised split R-hat at 1.023 (its claim's threshold, 1.01, unchanged); 4 x (3000 + 40000) "
               "give max rank R-hat 1.0051 ... The default (and paper) scale now use 40000 kept draws'")


def _rhat_claim(table: xr.Dataset, exp_cfg: dict, scale: str, dataset: str, max_rhat: float) -> dict:
    """The R-hat claim: a claim about the chains' own convergence.

    With ``exp_cfg["until_converged"]`` the chains ran until the stop rule held (R-hat
    below the threshold and ESS above ``min_ess`` on every hyperparameter) or the
    scale's draws were spent: PASS when they stopped converged, FAIL when the budget
    ran out (issue 26 section 3: a point value at the threshold is not a verdict).
    Without it (fixed length) the old point test of R-hat after ``n_draws``.
    """
    c = exp_cfg["claims"]
    n_chains, n_draws = int(table.attrs["n_chains"]), int(table.attrs["n_draws"])
    stopped = str(table.attrs.get("stopped", "length"))
    measured = {"max_rank_rhat": max_rhat, "max_classic_rhat": float(table["rhat"].max()),
                "min_ess": float(table["ess"].min()), "draws_per_chain": n_draws, "stopped": stopped}
    if "rhat_at_checks" in table.attrs:
        path = dict(zip((int(n) for n in np.atleast_1d(table.attrs["rhat_check_draws"])),
                        (round(float(r), 5) for r in np.atleast_1d(table.attrs["rhat_at_checks"]))))
        if path:
            measured["max_rank_rhat_at_checks"] = path
            measured["lowest_max_rank_rhat_at_a_check"] = min(path.values())
    uc = exp_cfg.get("until_converged")
    if not uc:
        ok = max_rhat < c["max_rhat"]
        return {"id": f"{claims.slug(dataset)}-rhat",
                "statement": f"rank-normalised split R-hat < {c['max_rhat']:g} for every hyperparameter "
                             f"({dataset}, {scale} scale)",
                "measured": measured, "paper": None, "passed": ok}
    ok = stopped == "converged"
    rec = {
        "id": f"{claims.slug(dataset)}-rhat",
        "statement": (f"random-walk MH reaches rank-normalised split R-hat < {c['max_rhat']:g} and bulk ESS > "
                      f"{c['min_ess']:g} on every hyperparameter within the {scale} scale's budget of "
                      f"{n_chains} x {int(table.attrs.get('max_draws', n_draws))} kept draws "
                      f"(checked every {int(uc['check_every'])} draws; {dataset})"),
        "quote": {"text": RHAT_SOURCE, "where": "project claim (foundation slice), not a paper's sentence"},
        "rationale": ("Vehtari et al. (2021) recommend rank R-hat < 1.01; the old claim tested R-hat once after a "
                      "fixed 40,000 draws, a point value at the threshold that flipped between CPUs (AMD EPYC "
                      "1.0109 FAIL, Intel 1.007 PASS; issue 26 section 3). The chains now run until the stop "
                      "rule holds, within the scale's draws: FAIL only if the budget runs out first"),
        "encoding_change": ("was 'rank R-hat < 1.01 after 4 x 40,000 draws' (a point value); now 'reaches R-hat "
                            "< 1.01 and ESS > 100 within 4 x 40,000 draws'; old and new verdicts in the closing "
                            "note"),
        "measured": {**measured, "draws_needed": n_draws if ok else None},
        "paper": None,
        "passed": ok,
    }
    if not ok:
        path = measured.get("max_rank_rhat_at_checks") or {}
        low = f"; lowest max R-hat at a check {min(path.values()):.4g}" if path else ""
        rec["reason"] = (f"stop rule not met within the budget ({stopped}): max rank R-hat {max_rhat:.4g} after "
                         f"{n_draws} draws{low}")
    return rec
