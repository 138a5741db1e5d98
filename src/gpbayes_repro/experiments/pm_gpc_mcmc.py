"""Filippone & Girolami (2014), Secs. 4.2-4.4: sampling efficiency of PM vs AA/SURR.

Tables I-III (simulated data) and Figs. 3-4 (Breast, Pima, Abalone).

Schemes (names used in configs, files and tables):

* ``pm-<la|ep>-<N_imp>``: pseudo-marginal MH (F&G Alg. 1) on psi with the
  importance estimate of eq. 25 (Laplace or EP importance density);
* ``aa``, ``surr``: Gibbs samplers alternating an MH update of psi in the
  whitened (AA) or surrogate-data (SURR) representation and 10 elliptical
  slice updates of f (F&G Sec. 4.3).

Each chain starts from the prior ("The chains were initialized from the
prior", Sec. 4.2).  Tables I-III: PM proposals are one per (n, d, kernel),
tuned before the runs and shared by every PM scheme ("we tuned the chains
using preliminary runs for EP and N_imp = 64 to achieve about 25% acceptance
rate and used the same proposal for LA and other values of N_imp"); AA and
SURR tune their proposal scale during burn-in ("The proposal mechanism was
tuned during the burn-in phase").  Figs. 3-4: PM-LA(1) adapts on the
deterministic LA marginal during the first iterations (Sec. 4.4), then runs
frozen; AA/SURR adapt during the same number of burn-in iterations.

Every chain has its own random stream keyed by (experiment, setting, scheme,
chain index), so results do not depend on how chains are grouped into jobs.
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr

from .. import builders, claims, trouble
from ..lazy import lazy_module
from gpbayes import diagnostics, linalg, priors
from gpbayes_repro import io
from gpbayes.estimators.importance import PseudoMarginalTarget
from gpbayes.kernels import SquaredExponential
from gpbayes.likelihoods import Probit
from gpbayes.mcmc import latent_gibbs, pseudo_marginal, random_walk
from gpbayes.mcmc.pseudo_marginal import deterministic_log_posterior
from gpbayes.representations import LatentGaussianModel
from .pm_gpc import simulate_classification
from ..indices import block_chains

# the claims' interval estimators need scipy.stats (0.5 CPU-s of imports); chain jobs never call them
intervals = lazy_module("gpbayes_repro.intervals")
final_states = lazy_module("gpbayes_repro.final_states")  # scipy.stats: the claims only

__all__ = ["parse_scheme", "make_kernel", "make_prior", "simulate_table_data", "tune_pm_proposal",
           "run_chain", "summarise_setting", "table_claims", "ep_la_look", "check_looks", "table_rows",
           "fig34_summary"]


def parse_scheme(scheme: str) -> tuple[str, str | None, int | None]:
    """``'pm-ep-64'`` -> ('pm', 'ep', 64); ``'aa'`` -> ('aa', None, None)."""
    if scheme in ("aa", "surr"):
        return scheme, None, None
    parts = scheme.split("-")
    if len(parts) == 3 and parts[0] == "pm" and parts[1] in ("la", "ep") and parts[2].isdigit():
        return "pm", {"la": "laplace", "ep": "ep"}[parts[1]], int(parts[2])
    raise ValueError(f"unknown scheme {scheme!r}: use aa, surr or pm-<la|ep>-<N_imp>")


def make_kernel(d: int, kernel: str, nugget: float) -> SquaredExponential:
    if kernel not in ("isotropic", "ard"):
        raise ValueError(f"kernel must be 'isotropic' or 'ard', got {kernel!r}")
    return builders.se_kernel(d, kernel, "fg", nugget)


def make_prior(kernel: SquaredExponential, tau_prior: dict, sigma_prior: dict) -> priors.IndependentPrior:
    """tau_i ~ G(a, b/sqrt(d)) for each scale parameter, sigma ~ G(shape, rate)."""
    return builders.kernel_prior(kernel, tau_prior, sigma_prior)


def simulate_table_data(n: int, d: int, truth: dict, rng: np.random.Generator) -> xr.Dataset:
    """Sec. 4.2 data: unit hypercube, balanced classes, isotropic truth.

    The paper does not give the generating hyperparameters of Table I; we
    use sigma = truth['sigma'] and tau = truth['tau_at_d2'] * sqrt(d / 2) (the
    Fig. 2 values at d = 2, lengthscale grown with the typical distance in
    the cube), and fit both the isotropic and the ARD model to the same data.
    """
    tau = truth["tau_at_d2"] * np.sqrt(d / 2.0)
    X, y = simulate_classification(rng, n, d, tau, truth["sigma"])
    return xr.Dataset(
        {"X": (("n", "feature"), X), "y": (("n",), y)},
        attrs={"name": f"fg_sim_n{n}_d{d}", "task": "classification", "stand_in": 0,
               "source": "simulated from the GP-probit model (F&G Sec. 4.2)", "tau": tau,
               "sigma": truth["sigma"]},
    )


def _target(X, y, kernel, prior, approx, n_imp, ep_mode, ep_stopping="logz"):
    options = {"stopping": ep_stopping} if approx == "ep" else {}
    return PseudoMarginalTarget(X, y, kernel, Probit(), prior, approx=approx, n_imp=n_imp, ep_mode=ep_mode,
                                approx_options=options)


#: EP stopping rule of the Tables I-III runs (``pm_gpc.tables.ep_stopping``).  F&G Sec. 4: "in all the
#: experiments, in both LA and EP we imposed a convergence criterion on the change in squared norm of f
#: being less than n/10^4"; Table II counts the O(n^3) operations that rule costs, so the reproduction of
#: its counts (and of ESS per operation, Tables I and III) runs EP with the same rule
#: (``gpbayes.approx.ep``, ``stopping="fg2014"``).  Everything else uses the library's default, which
#: stops on the change of log Z_EP and is within 1e-4 of the converged value.
TABLES_EP_STOPPING = "fg2014"


def _tables_ep_stopping(pmg: dict) -> str:
    return str(pmg["tables"].get("ep_stopping", TABLES_EP_STOPPING))


def tune_pm_proposal(X, y, kernel, prior, *, n_tune: int, ep_mode: str,
                     rng: np.random.Generator, target_accept: float = 0.25,
                     ep_stopping: str = "logz") -> dict:
    """One proposal per setting, tuned by adaptive MH on the deterministic EP marginal.

    Deviation (README): F&G tuned on preliminary PM-EP(64) runs; we tune on
    the deterministic EP approximate marginal, which the N_imp = 64 estimate
    tracks closely (its log-variance is small, Fig. 2), at a fraction of the
    cost.  Starts from a prior draw.  Returns the frozen proposal covariance
    (scale^2 Sigma) and the tuning acceptance and cost.
    """
    target = _target(X, y, kernel, prior, "ep", 1, ep_mode, ep_stopping)
    _, det = deterministic_log_posterior(target, "ep")
    psi0 = prior.sample_psi(rng)
    p = psi0.size
    with linalg.count_ops() as ops:
        out = random_walk.run_chain(rng, psi0, det, np.eye(p) * 0.1, n_burn=n_tune, n_draws=max(n_tune // 4, 50),
                                    target_accept=target_accept)
    L = out.params["proposal_factor"]
    return {"proposal_cov": L @ L.T, "tune_acceptance": float(out.stats["accepted"].mean()),
            "tune_n_cubic": int(ops.cubic), "psi_end": out.draws[-1],
            **ops.trouble("tune_")}  # the tuning run's numerical trouble (the claims page's scan reads these)


def _per_kept_iteration(out: dict, keys_sum=("n_cubic", "wall_time", "n_jitter", "n_not_converged",
                                              "n_failed_estimates", "n_failed_cholesky"), repeat: int = 1) -> dict:
    """F&G Table III's "repeat each step 20 times": one kept iteration per ``repeat`` updates.

    Not the runner's ``thin``: the costs of the block are summed and its
    acceptance *averaged* (the paper's acceptance rate per update), where
    thinning keeps the kept step's own acceptance.
    """
    if repeat == 1:
        return out
    res = {}
    for k, v in out.items():
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] % repeat == 0 and v.shape[0] > 1:
            blocks = v.reshape(v.shape[0] // repeat, repeat, *v.shape[1:])
            if k in keys_sum:
                res[k] = blocks.sum(axis=1)
            elif k == "max_jitter":
                res[k] = blocks.max(axis=1)
            elif k in ("accepted", "acceptance_prob"):
                res[k] = blocks.mean(axis=1)
            else:
                res[k] = blocks[:, -1]
        else:
            res[k] = v
    return res


def run_chain(X, y, kernel, prior, scheme: str, *, n_adapt: int, n_burn: int, n_draws: int,
              proposal_cov: np.ndarray | None, ep_mode: str, rng: np.random.Generator,
              repeat: int = 1, n_latent_updates: int = 10, ep_stopping: str = "logz") -> dict:
    """One chain of one scheme, started from the prior; numpy arrays of kept draws.

    ``repeat`` > 1 repeats every update that many times per kept iteration
    (F&G Table III: "repeating each step of the Gibbs sampler 20 times").
    With ``proposal_cov`` given and ``n_adapt`` = 0, PM runs with that
    proposal frozen (Tables I-III); with ``n_adapt`` > 0 it adapts on the
    deterministic LA marginal first (Sec. 4.4, Figs. 3-4).  ``ep_stopping``
    is the EP stopping rule of PM-EP schemes (``gpbayes.approx.ep``).
    """
    kind, approx, n_imp = parse_scheme(scheme)
    psi0 = prior.sample_psi(rng)
    p = psi0.size
    t0 = time.perf_counter()
    if kind == "pm":
        target = _target(X, y, kernel, prior, approx, n_imp, ep_mode, ep_stopping)
        if n_adapt > 0:
            cov0 = proposal_cov if proposal_cov is not None else np.eye(p) * 0.1
            out = pseudo_marginal.run_chain(rng, target, psi0, n_adapt=n_adapt, n_burn=n_burn * repeat,
                               n_draws=n_draws * repeat, proposal_cov=cov0)
        else:
            out = pseudo_marginal.run_chain(rng, target, psi0, n_adapt=0, n_burn=n_burn * repeat,
                               n_draws=n_draws * repeat, proposal_cov=proposal_cov, initial_scale=1.0)
        psi = out.draws
        stats = {k: out.stats[k] for k in ("lp", "accepted", "acceptance_rate", "n_cubic", "wall_time")}
        stats.update(trouble.per_draw(out))
    else:
        model = LatentGaussianModel(kernel, X, Probit(), y, prior)
        K0 = model.covariance(psi0)
        f0 = linalg.cholesky(K0, name="K(psi0)") @ rng.standard_normal(len(y))
        out = latent_gibbs.run_chain(rng, model, psi0, f0, method=kind, n_burn=(n_adapt + n_burn) * repeat,
                                     n_draws=n_draws * repeat, proposal_cov=proposal_cov,
                                     n_latent_updates=n_latent_updates, keep_latent=False)
        psi = out.draws
        stats = {k: out.stats[k] for k in ("lp", "accepted", "acceptance_rate", "n_cubic", "n_failed_cholesky",
                                           "wall_time")}
        stats.update(trouble.per_draw(out))
    stats["psi"] = psi
    stats = _per_kept_iteration(stats, repeat=repeat)
    psi = stats.pop("psi")
    return {"psi": psi, "stats": stats, "total_wall_time": time.perf_counter() - t0,
            "warmup_trouble": {k: v[1] for k, v in trouble.warmup_per_chain([out]).items()}}


def chains_to_groups(results: list[dict], param_names: list[str], attrs: dict) -> dict[str, xr.Dataset]:
    """Stack chain results into ArviZ-layout groups."""
    post = {"psi": np.stack([r["psi"] for r in results])}
    keys = results[0]["stats"].keys()
    stats = {k: np.stack([np.asarray(r["stats"][k]) for r in results]) for k in keys}
    groups = io.make_inference_groups(post, stats, extra_dims={"psi": ("param",)},
                                      coords={"param": np.array(param_names)}, attrs=attrs)
    if all("warmup_trouble" in r for r in results):
        groups["sample_stats"] = groups["sample_stats"].assign(
            {k: ("chain", np.concatenate([r["warmup_trouble"][k] for r in results])) for k in results[0]["warmup_trouble"]})
    return groups


def summarise_setting(groups: dict[str, xr.Dataset], checkpoints) -> dict:
    """Table I/II/III row: min ESS across hyperparameters (mean and sd over
    chains, ESS per chain as F&G report "(std)" across chains), median over
    hyperparameters of the PSRF after k iterations, acceptance rate, O(n^3)
    operations per iteration, ESS per O(n^3) operation."""
    psi = groups["posterior"]["psi"].values  # (chain, draw, param)
    ss = groups["sample_stats"]
    n_chain, n_draw, p = psi.shape
    ess_chain = np.array([[diagnostics.ess(psi[c, :, j]) for j in range(p)] for c in range(n_chain)])
    min_ess = ess_chain.min(axis=1)  # per chain
    ops = ss["n_cubic"].values.astype(float)  # (chain, draw)
    ops_per_it = ops.mean(axis=1)
    row = {
        "ess": float(min_ess.mean()), "ess_sd": float(min_ess.std(ddof=1)) if n_chain > 1 else np.nan,
        "acceptance": float(100 * ss["accepted"].values.mean()),
        "acceptance_sd": float(100 * ss["accepted"].values.mean(axis=1).std(ddof=1)) if n_chain > 1 else np.nan,
        "ops_per_iteration": float(ops_per_it.mean()),
        "ops_sd": float(ops_per_it.std(ddof=1)) if n_chain > 1 else np.nan,
        "ess_per_op": float((min_ess / ops.sum(axis=1)).mean()),
        "wall_per_iteration": float(ss["wall_time"].values.mean()),
        "ess_per_second": float((min_ess / ss["wall_time"].values.sum(axis=1)).mean()),
        "n_chains": n_chain, "n_draws": n_draw,
    }
    if n_chain > 1 and n_draw >= 8:  # the convergence gate's quantities (gpbayes_repro.claims.convergence)
        row.update(claims.convergence(psi))
    if "n_failed_cholesky" in ss:
        row["failed_cholesky_per_iteration"] = float(ss["n_failed_cholesky"].values.mean())
    for k in checkpoints:
        if k <= n_draw and n_chain > 1:
            r = [diagnostics.rhat(psi[:, :k, j]) for j in range(p)]
            row[f"rhat_{k}"] = float(np.median(r))
        else:
            row[f"rhat_{k}"] = np.nan
    return row


#: F&G's own convergence monitor (Sec. 4.2: "convergence speed of the samplers was monitored using the PSRF"; the
#: usual PSRF < 1.1 rule): the gate of the Table I claims (issue 26 section 3: the paper's threshold where it has one)
PSRF_GATE = 1.1

#: the sentences the Table I claims encode (Filippone & Girolami 2014)
TABLE1_QUOTES = {
    "table1-pm-beats-aa-surr": ("Table I shows that the PM approach achieves faster convergence and higher sampling "
                                "efficiency compared to the AA scheme. The SURR method has comparable convergence "
                                "behavior and efficiency compared to the AA scheme.", "Sec. 4.3, Table I"),
    "table1-ep-ge-la": ("The results indicate that sampling efficiency when employing EP to approximate the posterior "
                        "distribution over f is higher than when employing the LA algorithm.", "Sec. 4.2, Table I"),
}


def _table1_decisions(table, level: float = 0.95, pm_level: float = 0.95) -> dict:
    """The two Table I claims on one table (ours, or the paper's own Table I with 10 chains per scheme).

    Claim "PM beats AA and SURR" (issue 32): per setting, "some PM scheme has a higher mean min-ESS than both
    AA and SURR" (``intervals.best_of_k_beats_best_summaries``: Welch intervals over chains of each PM scheme
    against each of AA and SURR, Bonferroni over the schemes, no selection on the noisy means), a win at
    1 - alpha / (m - k + 1) and a loss at 1 - alpha / k (k = floor(m / 2) + 1 wins needed of the m settings:
    Markov over false wins / losses); a win counts when the deciding PM scheme's chains pass the gate (R-hat
    <= PSRF_GATE), a loss when the AA and SURR chains do, else undecided (directional gate: an unconverged
    chain overstates its ESS); "most settings" by ``claims.decide_count``.
    Claim "EP higher than LA": the average over the settings of log(mean ESS of PM-EP / mean ESS of PM-LA), each
    a mean over N_imp, with its delta-method t interval at ``level`` (``intervals.fixed_effect_log_ratio``: the
    paper's settings are fixed, the chains random).  Gate where it can flip the verdict (issue 26 section 3): a
    PASS rests on the EP chain sets, so every EP set above the PSRF gate has its ESS replaced by 0 (the lower
    bound of what it could truly be: an unconverged chain overstates its ESS) and the interval recomputed; the
    PASS stands when that worst case still lies above 1.  A FAIL likewise with the LA sets above the gate.
    """
    from gpbayes_repro import intervals

    win = [0, 0]
    detail, why_pm = {}, []
    ep_la = []  # per setting: (EP scheme rows, LA scheme rows, chains per scheme)
    rh = lambda x: float(x["max_rank_rhat"]) if "max_rank_rhat" in x and np.isfinite(x["max_rank_rhat"]) else np.nan
    groups = [(key, g.set_index("scheme")) for key, g in table.groupby(["n", "d", "kernel"])]
    n_set = sum(any(s.startswith("pm-") for s in g.index) and any(s in ("aa", "surr") for s in g.index)
                for _, g in groups)
    # "more than half of the m settings": k wins needed; a wrong PASS needs k - t false wins among m - t settings,
    # at most (m - k + 1) a_w / 2 by Markov's inequality, a wrong FAIL k a_l / 2 (as the AMIS count claims did)
    k_need = int(np.floor(0.5 * n_set)) + 1
    alpha = 1 - pm_level  # the PM claim is not sequential: its own level, not the EP/LA look's
    a_win, a_loss = alpha / max(n_set - k_need + 1, 1), alpha / k_need
    summ = lambda r: (float(r["ess"]), float(r.get("ess_sd", np.nan)), int(r.get("n_chains", 1)))
    for key, g in groups:
        pm = g[[s.startswith("pm-") for s in g.index]]
        base = g[[s in ("aa", "surr") for s in g.index]]
        if pm.empty:
            continue
        tag = f"n{key[0]}_d{key[1]}_{key[2]}"
        if not base.empty:
            # issue 32: some PM scheme above both AA and SURR (no selection on the noisy means)
            v, best, ivs = intervals.best_of_k_beats_best_summaries(
                [summ(r) for _, r in pm.iterrows()], [summ(r) for _, r in base.iterrows()], a_win, a_loss)
            a = pm.iloc[best]
            gate_r = rh(a) if v == "PASS" else max(rh(r) for _, r in base.iterrows()) if v == "FAIL" else np.nan
            if v != "INCONCLUSIVE" and not (gate_r <= PSRF_GATE):
                why_pm.append(f"{tag}: {'won' if v == 'PASS' else 'lost'} on its intervals but the "
                              f"{'PM' if v == 'PASS' else 'AA/SURR'} chains have R-hat {gate_r:.3g} > {PSRF_GATE}")
                v = "INCONCLUSIVE"
            win[0] += v == "PASS"
            win[1] += v == "INCONCLUSIVE"
            # the deciding (or closest) PM scheme against the better-bound baseline, at the win level
            j = min(range(len(base)), key=lambda jj: ivs[best, jj][1] if np.isfinite(ivs[best, jj][1]) else -np.inf)
            detail[f"{tag}_best_pm_minus_best_aa_surr_ess"] = [claims.finite_or_none(x) for x in ivs[best, j]]
            detail[f"{tag}_deciding_pm_scheme"] = str(pm.index[best])
        la = pm[[s.startswith("pm-la") for s in pm.index]]
        ep = pm[[s.startswith("pm-ep") for s in pm.index]]
        if not (la.empty or ep.empty):
            nc = int(pm["n_chains"].min()) if "n_chains" in pm.columns else 1
            ep_la.append((tag, ep.assign(rhat=[rh(r) for _, r in ep.iterrows()]),
                          la.assign(rhat=[rh(r) for _, r in la.iterrows()]), nc))
    out = {"n_set": n_set, "pm": {"n_win": win[0], "n_undecided": win[1], "detail": detail, "gated": why_pm,
                                  "level_win_per_setting": 1 - a_win, "level_loss_per_setting": 1 - a_loss}}
    if n_set:
        out["pm"]["verdict"] = claims.decide_count(win[0], win[1], n_set, 0.5)
    if ep_la:
        out["ep"] = _ep_la_decision(ep_la, level)
    return out


def _ep_la_terms(ep_la, zero: str | None = None):
    """Per-setting means and s.d.s of the EP and LA sides (``fixed_effect_log_ratio``'s arguments).

    A side is the mean over its N_imp schemes of independent chains: var = sum(sd_i^2 / n) / S^2, passed as the
    s.d. whose sd^2 / n is that variance.  ``zero="ep"`` (``"la"``): that side's chain sets above the PSRF gate
    count with ESS 0 and s.d. 0 (the worst case for the verdict that rests on them).
    """
    t = {k: [] for k in ("ma", "sa", "na", "mb", "sb", "nb")}
    for _, ep, la, nc in ep_la:
        for side, name, x in (("a", "ep", ep), ("b", "la", la)):
            ess, sd = x["ess"].to_numpy(float), x["ess_sd"].to_numpy(float) if "ess_sd" in x else np.full(len(x), np.nan)
            if zero == name:
                bad = ~(x["rhat"].to_numpy(float) <= PSRF_GATE)
                ess, sd = np.where(bad, 0.0, ess), np.where(bad, 0.0, sd)
            t["m" + side].append(float(ess.mean()))
            t["s" + side].append(float(np.sqrt((sd**2).sum()) / len(x)))
            t["n" + side].append(nc)
    return t


def _ep_la_decision(ep_la, level: float) -> dict:
    """The EP/LA claim on the per-setting rows (see ``_table1_decisions``), with the worst-case gate."""
    t = _ep_la_terms(ep_la)
    est, lo, hi = intervals.fixed_effect_log_ratio(t["ma"], t["sa"], t["na"], t["mb"], t["sb"], t["nb"], level)
    log_est, se, _ = intervals.fixed_effect_log_ratio_se(t["ma"], t["sa"], t["na"], t["mb"], t["sb"], t["nb"])
    v = claims.decide(lo, hi, 1.0, "above")
    verdict, why, gate = v, None, None
    if v in ("PASS", "FAIL"):
        side = "ep" if v == "PASS" else "la"
        col = 1 if side == "ep" else 2
        bad = [f"{tag} {s} (R-hat {r:.3g})" for tag, *sets, _ in ep_la for s, r in sets[col - 1]["rhat"].items()
               if not (r <= PSRF_GATE)]
        if bad:
            w = _ep_la_terms(ep_la, zero=side)
            with np.errstate(divide="ignore", invalid="ignore"):
                west, wlo, whi = intervals.fixed_effect_log_ratio(w["ma"], w["sa"], w["na"], w["mb"], w["sb"],
                                                                  w["nb"], level)
            wv = claims.decide(wlo, whi, 1.0, "above")
            gate = {"chain_sets_above_gate": bad, "worst_case": [claims.finite_or_none(x) for x in (west, wlo, whi)],
                    "worst_case_verdict": wv}
            what = (f"{len(bad)} {side.upper()} chain set(s) above the PSRF gate {PSRF_GATE}: {'; '.join(bad)}; "
                    f"with their ESS set to 0 the interval is {west:.3g} [{wlo:.3g}, {whi:.3g}]")
            if wv == v:
                gate["note"] = what + f": the gate cannot flip the {v}"
            else:
                verdict = "INCONCLUSIVE"
                why = f"{v} would rest on chains that are not converged: " + what
    return {"estimate": est, "lo": lo, "hi": hi, "level": level, "interval_verdict": v, "verdict": verdict,
            "why": why, "gate": gate, "log_estimate": log_est, "log_se": se, "n_settings": len(ep_la),
            "n_chains_per_scheme": int(min(nc for *_, nc in ep_la)),
            "per_setting_ep_over_la": [claims.finite_or_none(a / b) for a, b in zip(t["ma"], t["mb"])]}


def ep_la_look(table, look: int, looks, level: float = 0.95, *, futility: bool = True) -> dict:
    """One look of the sequential design of claim ``table1-ep-ge-la`` (issue 26 section 4).

    ``looks``: the PM chains per scheme at each planned look (the last is the cap); ``table``: Table I rows of
    the PM schemes with ``looks[look]`` chains each.  The interval is at ``intervals.look_level(level,
    len(looks))`` (Bonferroni over the looks); the design continues (``action="continue"``) while the claim is
    undecided and the interval, at the current estimate with its s.e. falling as 1/sqrt(chains), would exclude
    1 at the cap; it stops when decided, at the cap, or for futility.  ``chains_to_decide``: the chains per
    scheme at which it would (the compute a reader needs to decide it, at the current estimate).
    ``futility=False`` runs an undecided design to its cap (``action="continue"`` where the futility rule
    would stop, recorded as ``futility_overridden``): the stop is non-binding, so each look's level keeps the
    error rate whatever the stopping rule (``intervals.look_level``).
    """
    looks = [int(k) for k in looks]
    if not 0 <= int(look) < len(looks):
        raise ValueError(f"look must be in 0..{len(looks) - 1}, got {look}")
    lv = intervals.look_level(level, len(looks))
    e = _table1_decisions(table, lv).get("ep")
    if e is None:
        raise ValueError("ep_la_look needs PM-EP and PM-LA rows of at least one setting")
    n_now = e["n_chains_per_scheme"]
    if n_now != looks[int(look)]:
        raise ValueError(f"look {look} plans {looks[int(look)]} chains per PM scheme, the table has {n_now}")
    need = final_states.project(e["log_estimate"], e["log_se"], 0.0, n_now, level=lv, power=0.5)
    action = intervals.sequential_action(e["verdict"], int(look), len(looks), bool(need <= looks[-1]))
    overridden = action == "futile" and not futility
    if overridden:
        action = "continue"  # the registered run to the cap (issue 32): a non-binding futility stop not taken
    if e["verdict"] == "INCONCLUSIVE" and e["interval_verdict"] != "INCONCLUSIVE":
        action = "gated" if action == "continue" else action  # more chains of the same length do not converge it
    rec = {"claim": "table1-ep-ge-la", "look": int(look), "looks": looks, "n_chains_per_scheme": n_now,
           "level": lv, "estimate": e["estimate"], "lo": e["lo"], "hi": e["hi"], "verdict": e["verdict"],
           "action": action, "chains_to_decide": claims.finite_or_none(need)}
    if overridden:
        rec["futility_overridden"] = "the futility rule would stop here; the scale runs the design to its cap"
    return rec


def table_claims(table, paper_ops, paper_table=None, ep_la_looks=None) -> list[dict]:
    """Claims 2 and 3 of the issue from the Table I/II rows.

    ``table``: pandas DataFrame with columns n, d, kernel, scheme, ess, ess_sd, n_chains,
    ops_per_iteration (and max_rank_rhat for the gate).  ``paper_ops``: DataFrame of F&G
    Table II.  ``paper_table``: F&G's own Table I (``workflow/resources/fg2014_table1.csv``:
    10 chains per scheme, R-hat after 10,000 iterations): the same encodings are run on it
    and recorded as each claim's ``paper_verdict`` (issue 26 section 2).  ``ep_la_looks``: the planned looks of
    the sequential design of ``table1-ep-ge-la`` (PM chains per scheme at each look, ``ep_la_look``); its
    interval is then at the per-look level of ``intervals.look_level`` (the paper's table is one fixed look).
    """
    out = []
    looks = [int(k) for k in ep_la_looks] if ep_la_looks else None
    ours = _table1_decisions(table, intervals.look_level(0.95, len(looks)) if looks else 0.95)
    theirs = None
    if paper_table is not None:
        pt = paper_table.assign(n_chains=10, max_rank_rhat=paper_table["rhat_10000"])
        theirs = _table1_decisions(pt)
    n_set = ours["n_set"]
    if n_set:
        pm = ours["pm"]
        rec = {"id": "table1-pm-beats-aa-surr",
               "statement": "Table I: some PM scheme reaches a higher min-ESS than both AA and SURR in most (more "
                            "than half of the) settings",
               "quote": {"text": TABLE1_QUOTES["table1-pm-beats-aa-surr"][0],
                         "where": "Filippone & Girolami 2014, " + TABLE1_QUOTES["table1-pm-beats-aa-surr"][1]},
               "rationale": ("'higher sampling efficiency compared to the AA scheme' (and SURR comparable to AA) = "
                             "some PM scheme's min-ESS above both AA's and SURR's; a setting counts when its "
                             "intervals over chains decide it and the chains that verdict rests on have R-hat <= "
                             f"{PSRF_GATE} (Gelman's PSRF convention); 'most' = more than half"),
               "paper": {"settings_won": 8, "settings": 8}, "verdict": pm["verdict"],
               "measured": {"settings_won": pm["n_win"], "settings_undecided": pm["n_undecided"], "settings": n_set,
                            **pm["detail"], "gated_settings": pm["gated"] or None},
               "interval": {"quantity": "settings won (decided)", "estimate": float(pm["n_win"]),
                            "lo": float(pm["n_win"]), "hi": float(pm["n_win"] + pm["n_undecided"]),
                            "threshold": n_set / 2, "side": "above",
                            "method": ("per setting: intervals.best_of_k_beats_best_summaries (Welch intervals of "
                                       "each PM scheme's mean min-ESS against AA's and SURR's, Bonferroni over the "
                                       f"schemes; a win at {pm['level_win_per_setting']:.4g}, a loss at "
                                       f"{pm['level_loss_per_setting']:.4g}: Markov over the settings), counted when "
                                       f"the chains the verdict rests on pass R-hat <= {PSRF_GATE}; 'most' decided "
                                       "by claims.decide_count")}}
        if theirs is not None:
            t = theirs["pm"]
            rec["paper_verdict"] = {"verdict": t["verdict"],
                                    "detail": f"{t['n_win']} of {theirs['n_set']} settings won, {t['n_undecided']} "
                                              "undecided (F&G Table I: 10 chains per scheme, R-hat at 10,000)"}
        if rec["verdict"] == "INCONCLUSIVE":
            rec["reason"] = ("the undecided settings (intervals containing 0, or won/lost on chains above the PSRF "
                             "gate) decide whether most are won")
        out.append(rec)
    if "ep" in ours:
        e = ours["ep"]
        rec = {"id": "table1-ep-ge-la",
               "statement": "Table I: on balance over the settings, PM-EP reaches a higher min-ESS than PM-LA "
                            "(average over settings of log(mean ESS of PM-EP / mean ESS of PM-LA), means over N_imp)",
               "quote": {"text": TABLE1_QUOTES["table1-ep-ge-la"][0],
                         "where": "Filippone & Girolami 2014, " + TABLE1_QUOTES["table1-ep-ge-la"][1]},
               "rationale": ("the sentence summarises the table as a whole, not setting by setting: the geometric "
                             "mean over the settings of the EP/LA ratio of mean min-ESS must exceed 1 (superiority, "
                             "as 'higher' says); the settings are the paper's fixed design, so only the chains' Monte "
                             "Carlo error enters the interval. Gate (the paper's PSRF < 1.1, where it can flip the "
                             "verdict): a PASS rests on the EP chains, so EP chain sets above 1.1 count with ESS 0, "
                             "the lower bound of their true ESS, and the PASS must survive that worst case (a FAIL "
                             "likewise with the LA sets)"),
               "encoding_change": ("was 'PM-EP >= PM-LA on a per-setting Welch interval in more than 4 of 8 "
                                   "settings', which the paper's own Table I does not pass (3 of 8): it asked each "
                                   "setting to be decided on its own, which the sentence does not say. Gate: was "
                                   "'every EP chain set at PSRF <= 1.1', which withheld the PASS on the paper's own "
                                   "Table I for one set of 24 (n=200, d=10, isotropic, PM-EP(64): 1.12) whose ESS "
                                   "cannot flip the verdict (with it set to 0 the interval stays above 1); paper's "
                                   "own verdict INCONCLUSIVE -> PASS, ours unchanged (its interval contains 1)"),
               "paper": {"description": "EP's sampling efficiency higher than LA's (Table I)"},
               "verdict": e["verdict"],
               "measured": {"ep_over_la_geometric_mean": claims.finite_or_none(e["estimate"]),
                            "per_setting_ep_over_la": e["per_setting_ep_over_la"], "settings": e["n_settings"],
                            "interval_verdict": e["interval_verdict"], "gate": e["gate"],
                            "chains_per_pm_scheme": e["n_chains_per_scheme"]},
               "interval": {"quantity": "geometric mean over settings of mean ESS(PM-EP) / mean ESS(PM-LA)",
                            "estimate": claims.finite_or_none(e["estimate"]), "lo": claims.finite_or_none(e["lo"]),
                            "hi": claims.finite_or_none(e["hi"]), "threshold": 1.0, "side": "above",
                            "level": e["level"],
                            "method": intervals.METHOD_TEXT["fixed_effect_log_ratio"]
                            + ("; " + intervals.METHOD_TEXT["sequential"] if looks else "")}}
        if looks:
            n_now = e["n_chains_per_scheme"]
            need = final_states.project(e["log_estimate"], e["log_se"], 0.0, n_now, level=e["level"], power=0.5)
            rec["measured"]["sequential"] = {"looks_chains_per_pm_scheme": looks,
                                 "look": looks.index(n_now) if n_now in looks else None,
                                 "chains_to_decide_at_current_estimate": claims.finite_or_none(need)}
        if theirs is not None and "ep" in theirs:
            t = theirs["ep"]
            gate_text = t["why"] or (t["gate"] or {}).get("note")
            rec["paper_verdict"] = {"verdict": t["verdict"],
                                    "detail": f"{t['estimate']:.3f} [{t['lo']:.3f}, {t['hi']:.3f}] on F&G's Table I "
                                              f"(10 chains per scheme): {t['interval_verdict']} on the interval"
                                              + (f"; {gate_text} (the table's R-hat at 10,000 iterations, median "
                                                 "over hyperparameters)" if gate_text else "")}
        if rec["verdict"] == "INCONCLUSIVE":
            rec["reason"] = e["why"] or "the interval of the average EP/LA ratio contains 1"
        out.append(rec)
    # claim 3: O(n^3) per iteration of the paper's order
    ours = {}
    for scheme_group, pat in (("pm-la", "pm-la-"), ("pm-ep", "pm-ep-"), ("aa", "aa"), ("surr", "surr")):
        rows = table[table["scheme"].str.startswith(pat)]
        if len(rows):
            ours[scheme_group] = float(rows["ops_per_iteration"].mean())
    paper = {s: float(paper_ops[paper_ops["scheme"] == s]["ops_per_iteration"].mean())
             for s in ours if (paper_ops["scheme"] == s).any()}
    if ours:
        within = all(0.5 * paper[s] <= ours[s] <= 2.0 * paper[s] for s in ours if s in paper)
        held, n_set, broken = ops_order(table)
        p_held, p_n, p_broken = ops_order(paper_ops)
        out.append({
            "id": "table2-ops-order",
            "statement": "Table II: in every setting EP costs more O(n^3) operations per iteration than LA, and "
                         "every PM scheme more than AA and SURR (counted operations: exact, no interval)",
            "measured": {**{f"{k}_ops_per_iteration": v for k, v in ours.items()},
                         "settings_in_order": held, "n_settings": n_set, "settings_out_of_order": broken,
                         # the encoding before issue 32, reported: our means within 2x of the paper's per scheme
                         "within_factor_2_of_paper": bool(within)},
            "paper": {f"{k}_ops_per_iteration": v for k, v in paper.items()},
            "passed": bool(n_set > 0 and held == n_set),
            "paper_verdict": {"verdict": "PASS" if p_n and p_held == p_n else "FAIL",
                              "detail": f"F&G's Table II: the order holds in {p_held} of {p_n} settings"
                                        + (f" (not in {', '.join(p_broken)})" if p_broken else "")},
            "encoding_change": ("was 'each scheme's mean within a factor 2 of the paper's' (kept in "
                                "measured.within_factor_2_of_paper); now the order the sentence states, per setting"),
        })
    return out


def ops_order(rows) -> tuple[int, int, list[str]]:
    """F&G Sec. 4.3 on Table II, "EP is more expensive than the LA algorithm, and ... the PM approaches require
    more O(n^3) operations compared to AA and SURR": per setting (n, d, kernel), mean ops per iteration of the
    PM-EP schemes > the PM-LA schemes' > max(AA, SURR).  Returns (settings where it holds, settings, the others).
    """
    keys = [k for k in ("n", "d", "kernel") if k in rows]
    held, broken, n = 0, [], 0
    for key, g in (rows.groupby(keys) if keys else [("all", rows)]):
        def mean_of(prefix):
            r = g[g["scheme"].astype(str).str.startswith(prefix)]["ops_per_iteration"]
            return float(r.mean()) if len(r) else float("nan")
        la, ep, aa, su = mean_of("pm-la"), mean_of("pm-ep"), mean_of("aa"), mean_of("surr")
        if not all(np.isfinite([la, ep])) or not (np.isfinite(aa) or np.isfinite(su)):
            continue
        n += 1
        if ep > la > np.nanmax([aa, su]):
            held += 1
        else:
            broken.append("/".join(str(x) for x in (key if isinstance(key, tuple) else (key,))))
    return held, n, broken


def fig34_summary(groups: dict[str, xr.Dataset], checkpoints, max_lag: int = 60) -> xr.Dataset:
    """Trace (thinned x10), autocorrelation and PSRF evolution of log tau."""
    psi = groups["posterior"]["psi"]
    log_tau = psi.isel(param=0).values  # (chain, draw); isotropic kernel: one tau
    acf = diagnostics.autocorrelation(log_tau)[:, : max_lag + 1].mean(axis=0)  # mean over chains
    ks = [k for k in checkpoints if k <= log_tau.shape[1]]
    ev = diagnostics.psrf_evolution(log_tau, ks, method="coda")  # (K, 2): median, 97.5%
    conv = claims.convergence(psi.values) if log_tau.shape[0] > 1 else {"max_rank_rhat": np.nan,
                                                                        "min_bulk_ess": np.nan}
    return xr.Dataset(
        {
            "max_rank_rhat": ((), conv["max_rank_rhat"]),
            "min_bulk_ess": ((), conv["min_bulk_ess"]),
            "trace": (("chain", "thinned_draw"), log_tau[:, ::10]),
            "acf": (("lag",), acf),
            "psrf_median": (("iteration",), ev[:, 0]),
            "psrf_975": (("iteration",), ev[:, 1]),
        },
        coords={"lag": np.arange(max_lag + 1), "iteration": ks,
                "thinned_draw": np.arange(0, log_tau.shape[1], 10)},
    )


# ---------------------------------------------------------------------------
# workflow-level functions (one per rule; the scripts only do I/O)
# ---------------------------------------------------------------------------
def setting_model(ds: xr.Dataset, kernel_kind: str, pmg: dict, prior_cfg: dict):
    X, y = ds["X"].values, ds["y"].values
    kernel = make_kernel(X.shape[1], kernel_kind, pmg["nugget"])
    prior = make_prior(kernel, prior_cfg["tau_prior"], prior_cfg["sigma_prior"])
    return X, y, kernel, prior


def table_proposal(ds: xr.Dataset, kernel_kind: str, pmg: dict, settings: dict,
                   rng: np.random.Generator) -> xr.Dataset:
    X, y, kernel, prior = setting_model(ds, kernel_kind, pmg, pmg["tables"])
    tune = tune_pm_proposal(X, y, kernel, prior, n_tune=settings["n_tune"], ep_mode=pmg["ep_mode"], rng=rng,
                            ep_stopping=_tables_ep_stopping(pmg))
    names = kernel.param_names
    return xr.Dataset({"proposal_cov": (("param", "param2"), tune["proposal_cov"])},
                      coords={"param": names, "param2": names},
                      attrs={"tune_acceptance": tune["tune_acceptance"], "tune_n_cubic": tune["tune_n_cubic"],
                             "kernel": kernel_kind,
                             **{f"tune_{k}": tune[f"tune_{k}"] for k in trouble.TROUBLE_STATS}})


def table_block(ds: xr.Dataset, proposal: xr.Dataset, *, table: int, kernel_kind: str, scheme: str,
                block: int, pmg: dict, settings: dict, seed: int) -> dict[str, xr.Dataset]:
    """Chains ``block`` of one (setting, scheme) for Table I (table=1) or III (table=3)."""
    from gpbayes import rng as rngmod

    X, y, kernel, prior = setting_model(ds, kernel_kind, pmg, pmg["tables"])
    if int(table) == 1:
        run, repeat = settings, 1
    else:
        run, repeat = settings["table3"], int(pmg["tables"]["table3_repeat"])
    cov = proposal["proposal_cov"].values
    # Table I's PM schemes run up to the cap of the sequential design of claim table1-ep-ge-la (ep_la_looks);
    # a block's chains depend only on its index, whichever look asked for it
    n_total = run["n_chains"]
    if int(table) == 1 and scheme.startswith("pm-") and settings.get("ep_la_looks"):
        n_total = check_looks(settings["ep_la_looks"], settings["chains_per_job"])[-1]
    results = []
    for c in block_chains(block, n_total, settings["chains_per_job"]):
        gen = rngmod.stream(seed, "pm_gpc", f"table{table}", ds.attrs["name"], kernel_kind, scheme, "chain", c)
        is_pm = scheme.startswith("pm-")
        results.append(run_chain(X, y, kernel, prior, scheme, n_adapt=0, n_burn=run["n_burn"],
                                 n_draws=run["n_draws"], proposal_cov=cov if is_pm else None,
                                 ep_mode=pmg["ep_mode"], rng=gen, repeat=repeat,
                                 ep_stopping=_tables_ep_stopping(pmg)))
    attrs = {"table": int(table), "n": int(X.shape[0]), "d": int(X.shape[1]), "kernel": kernel_kind,
             "scheme": scheme, "repeat": repeat,
             "first_chain": int(block_chains(block, n_total, settings["chains_per_job"])[0])}
    return chains_to_groups(results, kernel.param_names, attrs)


def balanced_subset(ds: xr.Dataset, max_n: int, rng: np.random.Generator) -> xr.Dataset:
    """A random subset with (as nearly as possible) equal class counts; max_n = 0 keeps all."""
    y = ds["y"].values
    if max_n <= 0 or max_n >= y.size:
        return ds
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    k_pos = min(pos.size, max_n // 2)
    k_neg = min(neg.size, max_n - k_pos)
    keep = np.sort(np.concatenate([rng.choice(pos, k_pos, replace=False), rng.choice(neg, k_neg, replace=False)]))
    sub = ds.isel(n=keep)
    sub.attrs = dict(ds.attrs)
    sub.attrs["subset"] = f"balanced random subset of {keep.size} of {y.size} rows (reduced scale)"
    return sub


def real_block(ds: xr.Dataset, *, scheme: str, block: int, pmg: dict, settings: dict,
               seed: int) -> dict[str, xr.Dataset]:
    """Chains ``block`` of one scheme on a real data set (Figs. 3-4; isotropic kernel)."""
    from gpbayes import rng as rngmod

    X, y, kernel, prior = setting_model(ds, "isotropic", pmg, pmg["real"])
    results = []
    for c in block_chains(block, settings["n_chains"], settings["chains_per_job"]):
        gen = rngmod.stream(seed, "pm_gpc", "real", ds.attrs["name"], scheme, "chain", c)
        # Sec. 4.4: "12000 iterations of which 2000 adaptive": PM adapts on the
        # deterministic LA marginal, AA/SURR tune during the same burn-in
        results.append(run_chain(X, y, kernel, prior, scheme, n_adapt=settings["n_adapt"], n_burn=0,
                                 n_draws=settings["n_draws"], proposal_cov=None, ep_mode=pmg["ep_mode"],
                                 rng=gen))
    attrs = {"dataset": str(ds.attrs["name"]), "n": int(X.shape[0]), "d": int(X.shape[1]), "scheme": scheme,
             "stand_in": int(ds.attrs.get("stand_in", 0))}
    return chains_to_groups(results, kernel.param_names, attrs)


def table_rows(groups_list: list, checkpoints):
    """One table row (``summarise_setting``) per (n, d, kernel, scheme) of chain blocks (a pandas DataFrame)."""
    import pandas as pd

    by_key: dict = {}
    for g in groups_list:
        a = g["posterior"].attrs
        by_key.setdefault((int(a["n"]), int(a["d"]), str(a["kernel"]), str(a["scheme"])), []).append(g)
    out = []
    for (n, d, kernel, scheme), parts in sorted(by_key.items()):
        merged = io.concat_chains(sorted(parts, key=lambda g: int(g["posterior"].attrs.get("first_chain", 0))))
        out.append({"n": n, "d": d, "kernel": kernel, "scheme": scheme, **summarise_setting(merged, checkpoints)})
    return pd.DataFrame(out)


def check_looks(looks, per_job: int, what: str = "ep_la_looks") -> list[int]:
    """The planned looks of a sequential design: increasing counts, each before the last a multiple of
    ``per_job`` (so a block's chains never depend on the look that asked for it)."""
    looks = [int(k) for k in looks]
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 1:
        raise ValueError(f"{what} must be increasing positive counts, got {looks}")
    bad = [k for k in looks[:-1] if k % int(per_job)]
    if bad:
        raise ValueError(f"{what}: every look before the last must be a multiple of chains_per_job = {per_job}, "
                         f"got {bad}")
    return looks


def tables_from_chains(t1_groups: list, t3_groups: list, settings: dict):
    """Tables I, II, III as pandas DataFrames (ours), one row per (n, d, kernel, scheme)."""
    t1 = table_rows(t1_groups, settings["checkpoints"])
    t3 = table_rows(t3_groups, settings["table3"]["checkpoints"])
    t2 = t1.copy()
    t2["scheme"] = t2["scheme"].str.replace(r"^pm-(la|ep)-\d+$", r"pm-\1", regex=True)
    t2 = t2.groupby(["n", "d", "scheme", "kernel"], as_index=False).agg(
        ops_per_iteration=("ops_per_iteration", "mean"), ops_sd=("ops_per_iteration", "std"))
    return t1, t2, t3


def beside_paper(ours, paper, keys, cols):
    """Our table joined to the paper's, columns suffixed _ours / _paper."""
    merged = ours[keys + cols].merge(paper[keys + [c for c in cols if c in paper.columns]],
                                     on=keys, how="left", suffixes=("_ours", "_paper"))
    return merged


def iterations_to_converge(iterations, psrf, threshold: float = 1.1) -> float:
    """First checkpoint from which the PSRF stays below ``threshold`` (inf if never)."""
    iterations, psrf = np.asarray(iterations), np.asarray(psrf)
    below = psrf < threshold
    for i in range(len(below)):
        if below[i:].all():
            return float(iterations[i])
    return float("inf")


def fig34_claims(summaries: list[xr.Dataset]) -> list[dict]:
    """F&G Sec. 4.4: "The PM approach achieves impressive efficiency and convergence speed compared to the AA
    and SURR parameterizations" -- on every real data set PM converges (median PSRF < 1.1) in fewer iterations
    than AA and SURR, and is at least as efficient: its min bulk ESS over the same kept iterations is at least
    the better of AA's and SURR's (issue 32: the efficiency half of the sentence, dropped before; point values,
    the summaries hold pooled ESS only).  Where the summaries carry no ESS only the speed half is read."""
    measured, ok = {}, True
    eff_ok, eff_seen, eff_fail = True, False, []
    for s in summaries:
        name = s.attrs.get("dataset", "?")
        its = {}
        for sch in s["scheme"].values:
            d = s.sel(scheme=sch)
            its[str(sch)] = iterations_to_converge(d["iteration"].values, d["psrf_median"].values)
            # JSON has no infinity: a chain set that never settles below 1.1 is recorded as null
            measured[f"{name}_{sch}_iterations_to_psrf_1.1"] = its[str(sch)] if np.isfinite(its[str(sch)]) else None
            if "max_rank_rhat" in d:  # the whole chains' convergence (reported; the claim itself is about speed)
                measured[f"{name}_{sch}_final_rank_rhat"] = claims.finite_or_none(float(d["max_rank_rhat"]))
                measured[f"{name}_{sch}_final_bulk_ess"] = claims.finite_or_none(float(d["min_bulk_ess"]))
        pm = min(v for k, v in its.items() if k.startswith("pm-"))
        base = min(v for k, v in its.items() if k in ("aa", "surr"))
        # strictly fewer, or both converged at the first checkpoint (a tie at the resolution)
        first = float(s["iteration"].values[0])
        ok &= (pm < base) or (pm == base == first)
        ess = {k: measured.get(f"{name}_{k}_final_bulk_ess") for k in its}
        pm_e = [v for k, v in ess.items() if k.startswith("pm-") and v is not None]
        base_e = [v for k, v in ess.items() if k in ("aa", "surr") and v is not None]
        if pm_e and base_e:
            eff_seen = True
            ratio = max(pm_e) / max(base_e)
            measured[f"{name}_pm_over_best_baseline_bulk_ess"] = ratio
            if ratio < 1.0:
                eff_ok = False
                eff_fail.append(f"{name}: PM's bulk ESS {max(pm_e):.4g} < {max(base_e):.4g}")
    passed = bool(ok and eff_ok)
    rec = {
        "id": "fig34-pm-converges-faster",
        "statement": "Figs. 3-4: on Breast, Pima and Abalone PM (LA, N_imp=1) reaches median PSRF < 1.1 "
                     "(and stays) in fewer iterations than AA and SURR (ties at the first checkpoint count)"
                     + (" and its min bulk ESS over the same kept iterations is at least the better of AA's and "
                        "SURR's (efficiency)" if eff_seen else ""),
        "measured": {**measured, "speed_half_passed": bool(ok), "efficiency_half_passed": bool(eff_ok) if eff_seen
                     else None, "efficiency_losses": eff_fail},
        "paper": None, "passed": passed,
        "encoding_change": ("efficiency added (issue 32): was convergence speed only, the sentence's 'impressive "
                            "efficiency' untested; the old rule's verdict is measured.speed_half_passed"),
    }
    return [rec]
