"""Coverage of the claims' interval methods, measured by simulation with a known answer.

Each scenario draws replicates shaped like a claim's inputs at the counts a scale
uses, builds the interval the claim uses, and counts how often it contains the
true value.  ``python -m gpbayes_repro.coverage [--n-sim N] [--out CSV]`` prints
the table the README's Verdicts section quotes; ``tests/test_intervals.py`` runs
a fast version of every row and requires >= 93 % at nominal 95 %.

Scenarios (``SCENARIOS``):

* ``log_ratio`` over 3 and 4 chains per method (Murray & Adams Fig. 3 claims,
  default 3-4 chains per method; Gadd et al. 4 chains): per-chain efficiencies
  log-normal (s.d. of the log 0.2 and 0.5: the spread of the default run's
  per-chain ESS per covariance construction lies between), gamma (shape 4 and 12,
  right-skewed on the raw scale), and ESS estimates of real AR(1) chains
  (rho 0.9, 1,000 draws, ``gpbayes.diagnostics.ess``) whose true geometric-mean
  ratio comes from a pilot of 2,000 chains a side (s.e. of its log < 0.005).
* the percentile bootstrap of a ratio of means (``claims.bootstrap_ratio``, what the
  claims used before) on the same log-normal inputs, for comparison.
* ``welch`` over 3 chains per scheme (F&G Table I settings at default scale).
* ``fixed_effect_log_ratio`` over F&G's 8 settings, 3 schemes a side, 3 and 10 chains each.
* ``paired_t`` over 45 paired differences (F&G capacity at default: 5 data sets x
  3 sizes x 3 splits), skewed (centred log-normal) and heavy-tailed (t, 3 d.f.); a
  strongly skewed stress row (skewness 3.7) is reported, not required.
* ``paired_proportions`` on 800 and 200 test points (Hensman et al.'s held-out sets),
  accuracy 0.9 and 0.75, correlated classifiers.
* the AMIS claims' percentile bootstrap of a ratio of IQRs over 12 and 8 replicates
  (normal replicates): it over-covers (99 %+), i.e. it is valid but wide; the F
  interval of an s.d. ratio is shown beside it as the calibrated alternative.
* the F&G sequential designs (``pm_gpc_mcmc.ep_la_look``, ``pm_gpc_capacity.capacity_look``): the interval
  of the look at which the design stopped (decided, cap or futility), each look at the Bonferroni level over
  the planned looks, default and paper looks.
* issue 32 section 4 (appended, so the rows above keep their seeds): Hensman et al. claim 2's
  ``intervals.banerjee_t`` over 800 / 1,010 test points and 4 / 2 chains with the Monte Carlo s.e.
  1-3 x the test-set s.e. (the normal interval before and a Welch-Satterthwaite t beside it); F&G
  Fig. 2's percentile bootstrap of band-width ratios over 200 (500) repetitions; F&G Table I's
  best-of-6 selection at the boundary (the claim's rule, and ``intervals.best_of_k_beats_best``
  proposed), per setting and over 8 settings; the F&G rows with gamma ESS of CV 0.5 and 0.85 (F&G's
  own Table I reaches 0.8); the AMIS sequential rows at the config's looks (12, 24) / (8, 16) and
  the decide scale's (12, 24, 36, 48) / (8, 16, 24, 32).
* ``ratio_vs_extreme``: the error rate of a wrong verdict at the boundary
  (true ratio = threshold against the better of two baselines), which must stay
  <= 2.5 % each way (reported as 1 - error, comparable with a 97.5 % one-sided level).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import special

from gpbayes_repro import final_states, intervals

__all__ = ["SCENARIOS", "Scenario", "run", "table", "merge", "main"]


@dataclass(frozen=True)
class Scenario:
    """One row of the coverage table: ``simulate(rng)`` returns (lo, hi, truth) for one simulated data set."""

    method: str
    count: str
    inputs: str
    used_by: str
    simulate: Callable[[np.random.Generator], tuple[float, float, float]]
    nominal: float = 0.95
    #: False for rows reported for context (a stress shape, counts no claim uses, the replaced method)
    required: bool = True
    #: simulated data sets in the fast test (tests/test_intervals.py) when a row is slow; None: its default
    test_n_sim: int | None = None


def _lognormal(sigma: float, n_a: int, n_b: int, ratio: float = 2.0):
    def sim(rng):
        a = np.exp(math.log(ratio) + sigma * rng.standard_normal(n_a))
        b = np.exp(sigma * rng.standard_normal(n_b))
        _, lo, hi = intervals.log_ratio(a, b)
        return lo, hi, ratio
    return sim


def _gamma(shape: float, n: int, ratio: float = 2.0):
    # geometric mean of Gamma(k, s) = s exp(digamma(k)); equal shapes: the ratio of scales
    def sim(rng):
        a = rng.gamma(shape, ratio, n)
        b = rng.gamma(shape, 1.0, n)
        _, lo, hi = intervals.log_ratio(a, b)
        return lo, hi, ratio
    return sim


def _ar1_ess(rng, rho: float, n_draws: int, size: int) -> np.ndarray:
    from gpbayes import diagnostics

    e = rng.standard_normal((size, n_draws))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0] / math.sqrt(1 - rho**2)
    for t in range(1, n_draws):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return np.array([diagnostics.ess(x[i][None, :], method="bulk") for i in range(size)]) / n_draws


_AR1_TRUTH: dict = {}


def _ar1(n: int, rho_a: float = 0.8, rho_b: float = 0.9, n_draws: int = 1000):
    def truth():
        key = (rho_a, rho_b, n_draws)
        if key not in _AR1_TRUTH:
            pilot = np.random.default_rng(12345)
            la = np.log(_ar1_ess(pilot, rho_a, n_draws, 2000)).mean()
            lb = np.log(_ar1_ess(pilot, rho_b, n_draws, 2000)).mean()
            _AR1_TRUTH[key] = float(np.exp(la - lb))
        return _AR1_TRUTH[key]

    def sim(rng):
        a, b = _ar1_ess(rng, rho_a, n_draws, n), _ar1_ess(rng, rho_b, n_draws, n)
        _, lo, hi = intervals.log_ratio(a, b)
        return lo, hi, truth()
    return sim


def _bootstrap(sigma: float, n: int, ratio: float = 2.0):
    from gpbayes_repro.claims import bootstrap_ratio

    def sim(rng):
        a = np.exp(math.log(ratio) + sigma * rng.standard_normal(n))
        b = np.exp(sigma * rng.standard_normal(n))
        _, lo, hi = bootstrap_ratio(a, b, rng, n_boot=999)
        return lo, hi, ratio  # equal s.d. of the logs: the ratio of means is the ratio of medians
    return sim


def _ess(rng, mean, cv: float, size, dist: str):
    """Per-chain ESS with the given mean and coefficient of variation: ``"normal"`` (mean (1 + cv z), can go
    negative above CV ~0.4) or ``"gamma"`` (shape 1 / cv^2: positive and right-skewed, as ESS over chains is)."""
    if dist == "normal":
        return mean * (1 + cv * rng.standard_normal(size))
    if dist == "gamma":
        return rng.gamma(1 / cv**2, np.asarray(mean) * cv**2, size)
    raise ValueError(f"dist must be 'normal' or 'gamma', got {dist!r}")


def _welch(cv: float, n: int, dist: str = "normal", cv_b: float | None = None):
    from gpbayes_repro.claims import welch_interval

    cv_b = cv if cv_b is None else cv_b

    def sim(rng):
        a = _ess(rng, 300.0, cv, n, dist)
        b = _ess(rng, 150.0, cv_b, n, dist)
        _, lo, hi = welch_interval(a.mean(), a.std(ddof=1), n, b.mean(), b.std(ddof=1), n)
        return lo, hi, 150.0
    return sim


def _fixed_effect(n: int, cv: float, n_settings: int = 8, n_schemes: int = 3, dist: str = "normal"):
    true_a = np.exp(np.linspace(4, 6.5, n_settings))
    true_b = true_a * np.exp(np.linspace(-0.1, 0.5, n_settings))

    def sim(rng):
        ma, sa, mb, sb = [], [], [], []
        for s in range(n_settings):
            # every scheme's chains: mean over n chains; the side's value: the mean over its schemes
            xa = _ess(rng, true_a[s], cv, (n_schemes, n), dist)
            xb = _ess(rng, true_b[s], cv, (n_schemes, n), dist)
            ma.append(xa.mean())
            mb.append(xb.mean())
            sa.append(math.sqrt(np.sum(xa.var(axis=1, ddof=1)) / n_schemes**2))  # sd with sd^2/n = var(mean)
            sb.append(math.sqrt(np.sum(xb.var(axis=1, ddof=1)) / n_schemes**2))
        _, lo, hi = intervals.fixed_effect_log_ratio(mb, sb, [n] * n_settings, ma, sa, [n] * n_settings)
        return lo, hi, float(np.exp(np.mean(np.log(true_b / true_a))))
    return sim


def _paired(kind: str, n: int, sigma: float = 0.5):
    def sim(rng):
        if kind == "lognormal":
            d = np.exp(sigma * rng.standard_normal(n)) - math.exp(sigma**2 / 2)
        else:
            d = rng.standard_t(3, n)
        _, lo, hi = intervals.paired_t(0.01 * d + 0.002)
        return lo, hi, 0.002
    return sim


def _proportions(n: int, p: float, agree: float = 0.9):
    # b right with prob p; a agrees with b with prob `agree`, otherwise flips; p_a - p_b known
    def sim(rng):
        b = rng.random(n) < p
        flip = rng.random(n) >= agree
        a = np.where(flip, ~b, b)
        truth = (1 - agree) * (1 - p) - (1 - agree) * p
        _, lo, hi = intervals.paired_proportions(a, b)
        return lo, hi, truth
    return sim


def _extreme(n: int, sigma: float, side: str):
    # true num = threshold x the better baseline (the boundary): a wrong verdict is PASS for "above" with
    # the truth on the boundary... both wrong verdicts (PASS and FAIL) are counted against a one-sided 2.5 %
    def sim(rng):
        b1 = np.exp(sigma * rng.standard_normal(n))
        b2 = np.exp(math.log(0.5) + sigma * rng.standard_normal(n))
        ref = 1.0 if side == "above" else 0.5
        a = np.exp(math.log(2.0 * ref) + sigma * rng.standard_normal(n))
        v, *_ = intervals.decide_all_pairs({"b1": (a, b1), "b2": (a, b2)}, 2.0, side)
        # report as an interval that "covers" iff the verdict is not PASS (PASS at the boundary is an error)
        return (0.0, 1.0, 0.5) if v != "PASS" else (0.0, 1.0, 2.0)
    return sim


def _iqr(x, axis=-1):
    q75, q25 = np.percentile(x, [75, 25], axis=axis)
    return q75 - q25


def _iqr_bootstrap(n: int, sd_ratio: float = 0.5, n_boot: int = 999):
    # the AMIS claims: IQR over replicates of an estimate, ratio of two samplers, percentile bootstrap
    # resampling each sampler's replicates on its own (experiments.amis.analysis); normal replicates, truth
    # the ratio of the population IQRs = the s.d. ratio
    def sim(rng):
        a = sd_ratio * rng.standard_normal(n)
        b = rng.standard_normal(n)
        ia = _iqr(a[rng.integers(0, n, (n_boot, n))])
        ib = _iqr(b[rng.integers(0, n, (n_boot, n))])
        with np.errstate(divide="ignore", invalid="ignore"):
            r = ia / ib
        lo, hi = np.nanquantile(r, [0.025, 0.975])
        return float(lo), float(hi), sd_ratio
    return sim


def _iqr_log_t(n: int, sd_ratio: float = 0.5):
    # the same ratio from the log of the sample s.d. (a normal-theory interval: log s has s.e. ~ 1/sqrt(2(n-1)))
    def sim(rng):
        a = sd_ratio * rng.standard_normal(n)
        b = rng.standard_normal(n)
        d = math.log(a.std(ddof=1)) - math.log(b.std(ddof=1))
        # exact: (s_a / s_b)^2 / ratio^2 ~ F(n-1, n-1)
        from scipy import stats as st

        f_lo, f_hi = st.f.ppf([0.025, 0.975], n - 1, n - 1)
        return float(np.exp(d) / math.sqrt(f_hi)), float(np.exp(d) / math.sqrt(f_lo)), sd_ratio
    return sim


# --- fg-seq: the F&G sequential designs (Bonferroni over looks, non-binding futility), as the claims run them ---
def _seq_fixed_effect(looks, cv: float, log_ratio: float = 0.1, n_settings: int = 8, n_schemes: int = 3,
                      dist: str = "normal"):
    # claim table1-ep-ge-la (pm_gpc_mcmc.ep_la_look): the fixed-effect interval at each look's Bonferroni level,
    # stop when decided, at the cap, or when the projection says the cap cannot decide; the interval of the look
    # that stopped must cover the true average log ratio
    true_b = np.exp(np.linspace(4, 6.5, n_settings))
    true_a = true_b * np.exp(log_ratio + np.linspace(-0.3, 0.3, n_settings))
    lv = intervals.look_level(0.95, len(looks))

    def sim(rng):
        xa = _ess(rng, true_a[:, None, None], cv, (n_settings, n_schemes, looks[-1]), dist)
        xb = _ess(rng, true_b[:, None, None], cv, (n_settings, n_schemes, looks[-1]), dist)
        for k, n in enumerate(looks):
            args = []
            for x in (xa[:, :, :n], xb[:, :, :n]):
                args += [x.mean(axis=(1, 2)), np.sqrt(x.var(axis=2, ddof=1).sum(axis=1)) / n_schemes, [n] * n_settings]
            _, lo, hi = intervals.fixed_effect_log_ratio(*args, level=lv)
            est, se, _ = intervals.fixed_effect_log_ratio_se(*args)
            from gpbayes_repro.claims import decide

            need = final_states.project(est, se, 0.0, n, level=lv, power=0.5)
            if intervals.sequential_action(decide(lo, hi, 1.0, "above"), k, len(looks), need <= looks[-1]) != "continue":
                break
        return lo, hi, float(np.exp(np.mean(np.log(true_a / true_b))))
    return sim


def _seq_paired(looks, cells: int, mean: float = 0.003, scale: float = 0.01):
    # the capacity claim (pm_gpc_capacity.capacity_look) for one comparison: paired t over (data set, size, split)
    # with t(3) differences, splits added per look, Bonferroni level, futility projection
    lv = intervals.look_level(0.95, len(looks))

    def sim(rng):
        d = mean + scale * rng.standard_t(3, cells * looks[-1])
        for k, n in enumerate(looks):
            x = d[: cells * n]
            m, lo, hi = intervals.paired_t(x, lv)
            from gpbayes_repro.claims import decide

            need = final_states.project(m, float(x.std(ddof=1) / math.sqrt(x.size)), 0.0, x.size, level=lv,
                                        power=0.5) / cells
            if intervals.sequential_action(decide(lo, hi, 0.0, "above"), k, len(looks), need <= looks[-1]) != "continue":
                break
        return lo, hi, mean
    return sim


# --- ma-seq: the union rules of M&A claims 3 and 4 ---
def _union_fixed_poor(n: int, sigma: float, n_datasets: int = 4, f: float = 1.5, alpha: float = 0.05):
    # M&A claim 3 ("on SOME data set fixed <= f x every other method"): per data set the pairs (fixed,
    # other) by decide_all_pairs at 1 - alpha / n_datasets, PASS if any data set passes.  Least favourable
    # truth: on every data set fixed = f x its worst other, so every data set is a chance of a wrong PASS.
    # Only the boundary pair is simulated: the other pairs of a data set (fixed far below f x them) pass
    # the intersection-union test with probability ~1, and leaving them out can only raise the rate of a
    # wrong PASS (conservative; and 4x faster).  Reported as an interval that "covers" iff not PASS.
    level = 1 - alpha / n_datasets

    def sim(rng):
        wrong = False
        for _ in range(n_datasets):
            fixed = np.exp(sigma * rng.standard_normal(n))
            worst_other = np.exp(-math.log(f) + sigma * rng.standard_normal(n))
            v, *_ = intervals.decide_all_pairs({"worst": (fixed, worst_other)}, f, "below", level=level)
            wrong = wrong or v == "PASS"
        return (0.0, 1.0, 2.0) if wrong else (0.0, 1.0, 0.5)
    return sim


def _union_site_beats_taylor(n: int, sigma: float, alpha: float = 0.05):
    # M&A claim 4 ("SOME -site method beats both -taylor ones"): per -site method its two pairs by
    # decide_all_pairs at 1 - alpha / 2 (threshold 1, side above), PASS if either passes.  Least
    # favourable truth: both -site methods exactly as good as the better -taylor one (boundary), the
    # other -taylor far worse; the -taylor chains are shared by the two -site methods (as in the claim).
    def sim(rng):
        t_good = np.exp(sigma * rng.standard_normal(n))
        t_bad = np.exp(math.log(0.1) + sigma * rng.standard_normal(n))
        wrong = False
        for _ in range(2):
            site = np.exp(sigma * rng.standard_normal(n))
            v, *_ = intervals.decide_all_pairs({"good": (site, t_good), "bad": (site, t_bad)}, 1.0, "above",
                                               level=1 - alpha / 2)
            wrong = wrong or v == "PASS"
        return (0.0, 1.0, 2.0) if wrong else (0.0, 1.0, 0.5)
    return sim


def _confirm_only(n: int, sigma: float, p_blocked: float = 0.5, rho: float = 0.7, shrink: float = 0.6):
    # M&A claims 1 and 3 with lengthened chains (slice_ma.confirm): look 1 decides on the fixed-length chains;
    # with probability p_blocked the gate blocks the verdict and the chains run on: look 2's per-chain log
    # efficiencies are correlated with look 1's (rho: they share the first draws) and less spread (shrink:
    # longer chains); the final verdict is look 1's only if look 2 confirms it.  Truth on the boundary
    # (A = 2 x B, side above): 1 - P(wrong PASS).
    def sim(rng):
        za, zb = rng.standard_normal(n), rng.standard_normal(n)
        a1, b1 = np.exp(math.log(2.0) + sigma * za), np.exp(sigma * zb)
        v1, *_ = intervals.decide_all_pairs({"p": (a1, b1)}, 2.0, "above")
        final = v1
        if v1 != "INCONCLUSIVE" and rng.random() < p_blocked:
            mix = lambda z: shrink * sigma * (rho * z + math.sqrt(1 - rho**2) * rng.standard_normal(n))
            v2, *_ = intervals.decide_all_pairs({"p": (np.exp(math.log(2.0) + mix(za)), np.exp(mix(zb)))}, 2.0,
                                                "above")
            final = v1 if v2 == v1 else "INCONCLUSIVE"
        return (0.0, 1.0, 2.0) if final == "PASS" else (0.0, 1.0, 0.5)
    return sim


def _sequential_draws(kind: str, sd_between: float = 0.77, per_look: int = 4, max_looks: int = 4):
    # M&A claim 2 over draws of the synthetic generator (slice_ma.sequential_over_draws): Fig. 3's draw, then
    # looks adding per_look draws, each look's t interval at 1 - 0.05 / max_looks, stop when decided.  Truth
    # on the upper end of the equivalence range (generator geometric mean = 3): a PASS is wrong.  Per-draw log
    # ratios: normal, or t with 3 d.f. (heavy-tailed draws), with the between-draw s.d. of Fig. 3's draw and
    # workflow seeds 1-3 (0.77 on the log scale).  1 - P(wrong PASS).
    from gpbayes_repro.experiments.slice_ma import sequential_over_draws

    def unit(rng):
        z = rng.standard_normal() if kind == "normal" else rng.standard_t(3) / math.sqrt(3.0)
        return {"draw": 0, "log_ratio": math.log(3.0) + sd_between * z, "max_rank_rhat": 1.0, "min_bulk_ess": 1e3}

    def sim(rng):
        units = [unit(rng)]
        for look in range(max_looks):
            units += [unit(rng) for _ in range(per_look)]
            res = sequential_over_draws(units, look, max_looks, (1 / 3, 3.0))
            if res["stop"]:
                break
        return (0.0, 1.0, 2.0) if res["verdict"] == "PASS" else (0.0, 1.0, 0.5)
    return sim


# --- amis-seq: generators of the Xiong et al. (AMIS) rows ---
#: Johnson S_U shape (a, b) fitted (scipy.stats.johnsonsu.fit) to the default run's replicates (0748516, 154 of 222
#: blocks): every (data set, kernel, sampler)'s estimates at the middle and the last grid cost, standardised by
#: their own median and IQR, pooled (1,248 values: skewness 0.9, excess kurtosis 4.3)
_AMIS_SHAPE = (-0.2792339194756779, 1.3886079029451164)


def _amis_draw(rng, shape: str, size):
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "t3":
        return rng.standard_t(3, size)
    if shape == "run":
        from scipy import stats as st

        return st.johnsonsu.rvs(*_AMIS_SHAPE, size=size, random_state=rng)
    raise ValueError(f"shape must be 'normal', 't3' or 'run', got {shape!r}")


def _amis_iqr_ratio(n_a: int, n_b: int, shape: str, ratio: float = 0.5):
    # two samplers' replicates of one shape, scales ratio : 1 -- the population IQR ratio is the scale ratio
    def sim(rng):
        a = 3.0 + ratio * _amis_draw(rng, shape, n_a)
        b = 3.0 + _amis_draw(rng, shape, n_b)
        _, lo, hi = intervals.iqr_ratio(a, b)
        return lo, hi, ratio
    return sim


def _amis_sequential(counts, shape: str, side: str, threshold: float = 1.0):
    # one comparison decided over the looks (Bonferroni: each look at 1 - 0.05 / J), truth on the boundary
    # (ratio = threshold): a PASS ("below": hi <= thr; "above": lo >= thr) is the wrong verdict; reported
    # as an interval that "covers" iff no look gave PASS (nominal 1 - 0.025)
    def sim(rng):
        a = threshold * _amis_draw(rng, shape, counts[-1])
        b = _amis_draw(rng, shape, counts[-1])
        return _wrong_pass_over_looks(counts, lambda n, lvl: intervals.iqr_ratio(a[:n], b[:n], lvl)[1:], threshold,
                                      side)
    return sim


def _wrong_pass_over_looks(counts, interval, threshold: float, side: str):
    """One sequential decision over the looks ``counts`` (each at 1 - 0.05 / J, Bonferroni), the truth on the
    threshold: ``interval(n, level)`` gives (lo, hi) on the first n replicates.  A PASS at any look is the wrong
    verdict, a FAIL stops; returned as an "interval" (0, 1) with truth 2 (a wrong PASS: not covered) or 0.5."""
    from gpbayes_repro.claims import decide

    J = len(counts)
    for n in counts:
        lo, hi = interval(n, 1 - 0.05 / J)
        v = decide(lo, hi, threshold, side)
        if v == "PASS":
            return 0.0, 1.0, 2.0
        if v == "FAIL":
            break
    return 0.0, 1.0, 0.5


def _amis_fraction(counts, m: int, k: int, shape: str):
    # a fraction claim ("at least k of m cases won") with k - 1 clear wins (IQR ratio 0.05) and m - k + 1 cases on
    # the boundary (ratio 1): the truth is "not reached", a PASS is wrong.  Per case a win is declared on the
    # interval at 1 - 0.05 / (J (m - k + 1)), a loss at 1 - 0.05 / (J k), a decided case keeps its verdict
    # (experiments.amis.analysis._count_levels); vectorised over cases with the same pivot as intervals.iqr_ratio
    J = len(counts)
    a_w, a_l = 0.05 / (J * (m - k + 1)), 0.05 / (J * k)

    def sim(rng):
        ratio = np.r_[np.full(k - 1, 0.05), np.ones(m - k + 1)]
        a = ratio[:, None] * _amis_draw(rng, shape, (m, counts[-1]))
        b = _amis_draw(rng, shape, (m, counts[-1]))
        verdict = np.zeros(m)  # 1 win, -1 loss, 0 undecided
        for n in counts:
            r = np.log(_iqr(a[:, :n]) / _iqr(b[:, :n]))
            q = intervals.iqr_ratio_pivot_quantiles(n, n, [a_w / 2, 1 - a_w / 2, a_l / 2, 1 - a_l / 2])
            win = (r - q[0] <= 0.0) & (verdict == 0)      # hi of the win interval <= 1
            loss = (r - q[3] > 0.0) & (verdict == 0) & ~win  # lo of the loss interval > 1
            verdict[win], verdict[loss] = 1, -1
            if np.sum(verdict == 1) >= k or np.sum(verdict >= 0) < k:
                break
        return (0.0, 1.0, 2.0) if np.sum(verdict == 1) >= k else (0.0, 1.0, 0.5)
    return sim


#: the replicate shapes of the pooled rows' cases, in turn: the papers' cases differ in shape
_POOLED_SHAPES = ("run", "normal", "t3")


def _pooled_case_ratios(m: int, threshold: float, spread: float = 0.7) -> np.ndarray:
    """m per-case IQR ratios whose geometric mean is exactly ``threshold``: log ratios spread evenly over
    +- ``spread`` around log threshold (the cases disagree, as the papers' do)."""
    return threshold * np.exp(np.linspace(-spread, spread, m) if m > 1 else np.zeros(1))


def _amis_pooled(n_a: int, n_b: int, m: int, threshold: float = 1.0):
    # claims 3, 4b, 4c (issue 32): the geometric mean over m cases of IQR ratios, its pivot interval
    # (intervals.iqr_ratio_geometric_mean); each case's replicates of its own shape, the truth the geometric mean
    def sim(rng):
        ratios = _pooled_case_ratios(m, threshold)
        pairs = [(3.0 + r * _amis_draw(rng, _POOLED_SHAPES[i % 3], n_a), 3.0 + _amis_draw(rng, _POOLED_SHAPES[i % 3], n_b))
                 for i, r in enumerate(ratios)]
        _, lo, hi, _ = intervals.iqr_ratio_geometric_mean(pairs)
        return lo, hi, threshold
    return sim


def _amis_pooled_sequential(counts, m: int, threshold: float):
    # the pooled claims over the looks (each at 1 - 0.05 / J), truth on the threshold (side below: a PASS is wrong),
    # reported as an interval that covers iff no look gave PASS (nominal 1 - 0.025); a FAIL stops the claim
    def sim(rng):
        ratios = _pooled_case_ratios(m, threshold)
        a = [r * _amis_draw(rng, _POOLED_SHAPES[i % 3], counts[-1]) for i, r in enumerate(ratios)]
        b = [_amis_draw(rng, _POOLED_SHAPES[i % 3], counts[-1]) for i in range(m)]
        return _wrong_pass_over_looks(
            counts, lambda n, lvl: intervals.iqr_ratio_geometric_mean([(x[:n], y[:n]) for x, y in zip(a, b)], lvl)[1:3],
            threshold, "below")
    return sim


def _nmse_chains(rng, n: int, beta: float, s: float, along: float, heavy: bool, k: int = 5):
    """One Gadd et al. Table 1 cell: (NMSE of the pooled chains, its delete-one values, the true NMSE).

    Geometry relative to the truth t (||t|| = 1): the posterior predictive misses it by
    beta along u; chain i's binned density deviates from the posterior predictive by s x
    (along z0 u + sqrt(1 - along^2) sum_j z_j w_j / sqrt(k)), w_j orthonormal and orthogonal
    to u; z standard normal, or t with 3 d.f. scaled to unit variance (``heavy``).
    NMSE = 100 ||density - t||^2: the estimand 100 beta^2, the estimate that of the mean."""
    z = rng.standard_t(3, (n, k + 1)) / math.sqrt(3.0) if heavy else rng.standard_normal((n, k + 1))
    dev = s * np.column_stack([along * z[:, 0], math.sqrt(1 - along**2) * z[:, 1:] / math.sqrt(k)])
    err = dev + np.r_[beta, np.zeros(k)]
    full = 100.0 * float(np.sum(err.mean(axis=0) ** 2))
    loo = np.array([100.0 * float(np.sum(np.delete(err, i, axis=0).mean(axis=0) ** 2)) for i in range(n)])
    return full, loo, 100.0 * beta**2


def _jackknife_cell(n: int, beta: float, s: float, along: float, heavy: bool = False):
    def sim(rng):
        full, loo, truth = _nmse_chains(rng, n, beta, s, along, heavy)
        _, lo, hi = intervals.jackknife_t(full, [loo])
        return lo, hi, truth
    return sim


def _jackknife_step(n: int, n_feat: int = 6, heavy: bool = False):
    """Gadd claim 2's step: mean over 6 features of NMSE in case b minus case a (independent chains);
    case a like the default run's Case 1 (beta 0.36, s 0.09), case b like Cases 2-3 (beta 0.6, s 0.07)."""
    def sim(rng):
        sides = []
        for beta, s, along in ((0.36, 0.09, 0.43), (0.6, 0.07, 0.3)):
            cells = [_nmse_chains(rng, n, beta, s, along, heavy) for _ in range(n_feat)]
            sides.append((np.mean([c[0] for c in cells]), np.mean([c[1] for c in cells], axis=0), cells[0][2]))
        (fa, la, ta), (fb, lb, tb) = sides
        _, lo, hi = intervals.jackknife_t(fb - fa, [lb - fa, fb - la])
        return lo, hi, tb - ta
    return sim


def _bootstrap_cell(n: int, beta: float, s: float, along: float, n_boot: int = 400):
    """The replaced method on the same cell: chains resampled with replacement, NMSE recomputed, percentiles."""
    def sim(rng):
        z = rng.standard_normal((n, 6))
        dev = s * np.column_stack([along * z[:, 0], math.sqrt(1 - along**2) * z[:, 1:] / math.sqrt(5)])
        err = dev + np.r_[beta, np.zeros(5)]
        idx = rng.integers(0, n, size=(n_boot, n))
        reps = 100.0 * np.sum(err[idx].mean(axis=1) ** 2, axis=1)
        lo, hi = np.quantile(reps, [0.025, 0.975])
        return float(lo), float(hi), 100.0 * beta**2
    return sim


# --- issue 32 s.4: Hensman claim 2, F&G Fig. 2, F&G Table I's best-of-6 selection ---
def _hensman_lpd(n_chains: int, mc_over_test: float, method: str = "banerjee", n_test: int = 800,
                 chain_err: str = "normal", point_sd: float = 0.013):
    """Hensman et al. claim 2: d = mean over ``n_test`` held-out points of LPD(sampler) - LPD(Gaussian) plus the
    sampler's Monte Carlo error, the mean of ``n_chains`` independent chain errors.  Per-point differences t
    (3 d.f.) with s.d. ``point_sd`` (test-set s.e. 0.013 / sqrt(800) = 4.6e-4, the default run's 4.56e-4); chain
    errors normal or t (3 d.f.), their s.e. ``mc_over_test`` x the test-set s.e. (the default run: 6.95e-4 /
    4.56e-4 = 1.5).  ``method``: "banerjee" (intervals.banerjee_t, d.f. n_test - 1 and n_chains - 1: the claim's),
    "satterthwaite" (intervals.satterthwaite_t, the Welch-Satterthwaite t: not used, liberal) or "normal"
    (d +- 1.96 x hypot(se_test, se_mc), the method before).  Truth 0."""
    se_test = point_sd / math.sqrt(n_test)
    tau = mc_over_test * se_test * math.sqrt(n_chains)  # per-chain s.d. of the Monte Carlo error

    def unit_t3(rng, size):
        return rng.standard_t(3, size) / math.sqrt(3.0)

    def sim(rng):
        x = point_sd * unit_t3(rng, n_test)
        e = tau * (rng.standard_normal(n_chains) if chain_err == "normal" else unit_t3(rng, n_chains))
        d = float(x.mean() + e.mean())
        st, sm = float(x.std(ddof=1) / math.sqrt(n_test)), float(e.std(ddof=1) / math.sqrt(n_chains))
        if method == "normal":
            h = 1.96 * math.hypot(st, sm)
            return d - h, d + h, 0.0
        iv = intervals.banerjee_t if method == "banerjee" else intervals.satterthwaite_t
        _, lo, hi = iv(d, (st, sm), (n_test - 1, n_chains - 1))
        return lo, hi, 0.0
    return sim


#: F&G Fig. 2 (pm_gpc.fig2_band_widths): per (approximation, N_imp) cell the PM estimate at each of 20 tau values
#: is a mean of N_imp importance weights; the weights' log-s.d. rises over the tau grid, from ``lo`` to ``hi``
#: (uneven across the grid).  Population relative band widths LA 1.94, EP 0.99 at N_imp 1, LA 0.26, EP 0.13 at
#: N_imp 64: near the default run's (committed pm_gpc.json: 1.56-1.71, 0.84-0.86, 0.31-0.36, 0.13)
_FIG2_LOGSD = {"laplace": (0.1, 0.85), "ep": (0.05, 0.45)}
_FIG2_TRUTH: dict = {}


def _fig2_draw(rng, approx: str, n_imp: int, n_rep: int, n_tau: int = 20) -> np.ndarray:
    """(n_rep, n_tau) PM estimates of one cell, each the mean of ``n_imp`` log-normal weights of mean 1."""
    s = np.linspace(*_FIG2_LOGSD[approx], n_tau)
    w = np.exp(s * rng.standard_normal((n_rep, n_imp, n_tau)) - s**2 / 2)
    return w.mean(axis=1)


def _fig2_true_width(approx: str, n_imp: int, n_pilot: int = 200_000) -> float:
    """The population relative band width of a cell (mean over tau of (q97.5 - q2.5) / mean, the mean is 1),
    from a pilot of ``n_pilot`` estimates per tau (fixed seed; the s.e. of the width < 0.3 %)."""
    key = (approx, n_imp)
    if key not in _FIG2_TRUTH:
        rng = np.random.default_rng([32, 4, n_imp, len(approx)])
        x = np.concatenate([_fig2_draw(rng, approx, n_imp, n_pilot // 10) for _ in range(10)])
        q = np.quantile(x, [0.025, 0.975], axis=0)
        _FIG2_TRUTH[key] = float(np.mean(q[1] - q[0]))
    return _FIG2_TRUTH[key]


def _boot_band_widths(v: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """pm_gpc.fig2_band_widths of bootstrap resamples given by their counts: ``v`` (n_rep, n_tau), ``counts``
    (n_boot, n_rep) multinomial counts of each repetition (the same resampled repetitions at every tau, as
    fig2_ratio_intervals resamples them).  Type-7 quantiles from the order statistics of the resample:
    order statistic j of a resample is the sorted value at the first position whose cumulative count
    exceeds j.  Equal to np.quantile on the expanded resample (tests/test_intervals.py), 5x faster."""
    n_rep, n_tau = v.shape
    order = np.argsort(v, axis=0)
    srt = np.take_along_axis(v, order, axis=0)
    mean = counts @ v / n_rep  # (n_boot, n_tau)
    out = np.zeros(counts.shape[0])
    h_lo, h_hi = (n_rep - 1) * 0.025, (n_rep - 1) * 0.975
    for t in range(n_tau):
        cum = np.cumsum(counts[:, order[:, t]], axis=1)  # (n_boot, n_rep)

        def stat(j):
            return srt[np.minimum((cum <= j).sum(axis=1), n_rep - 1), t]

        q = []
        for h in (h_lo, h_hi):
            j = int(math.floor(h))
            q.append(stat(j) + (h - j) * (stat(min(j + 1, n_rep - 1)) - stat(j)))
        out += (q[1] - q[0]) / mean[:, t]
    return out / n_tau


def _fig2_ratio(n_rep: int, num: tuple, den: tuple, n_boot: int = 1000, level: float = 0.95):
    """F&G Fig. 2's claims (pm_gpc.fig2_ratio_intervals): the percentile bootstrap over repetitions of the ratio
    of two cells' relative band widths, each cell resampled on its own; truth the population ratio."""
    qs = [(1 - level) / 2, (1 + level) / 2]

    def sim(rng):
        wb = []
        for approx, n_imp in (num, den):
            v = _fig2_draw(rng, approx, n_imp, n_rep)
            wb.append(_boot_band_widths(v, rng.multinomial(n_rep, np.full(n_rep, 1 / n_rep), size=n_boot)))
        lo, hi = np.quantile(wb[0] / wb[1], qs)
        return float(lo), float(hi), _fig2_true_width(*num) / _fig2_true_width(*den)
    return sim


_PM_SCHEMES = ("pm-la-1", "pm-la-16", "pm-la-64", "pm-ep-1", "pm-ep-16", "pm-ep-64")


def _best_of_six_before(t) -> str:
    """The rule of table1-pm-beats-aa-surr before issue 32, on a table of (n, scheme, ess, ess_sd, n_chains):
    per setting the PM scheme with the highest mean against the better of AA and SURR by mean, one 95 % Welch
    interval; "more than half" of the settings by ``claims.decide_count`` (every R-hat 1: no gate)."""
    from gpbayes_repro import claims

    win, und, m = 0, 0, 0
    for _, g in t.groupby("n"):
        g = g.set_index("scheme")
        pm, base = g[[x.startswith("pm-") for x in g.index]], g[[x in ("aa", "surr") for x in g.index]]
        a, b = pm.loc[pm["ess"].idxmax()], base.loc[base["ess"].idxmax()]
        _, lo, hi = claims.welch_interval(a["ess"], a["ess_sd"], a["n_chains"], b["ess"], b["ess_sd"], b["n_chains"])
        v = claims.decide(lo, hi, 0.0, "above")
        m += 1
        win += v == "PASS"
        und += v == "INCONCLUSIVE"
    return claims.decide_count(win, und, m, 0.5)


def _best_of_six(n_pm: int, n_base: int, cv_pm, cv_base: float, n_settings: int = 1, n_clear: int = 0,
                 base_gap: float = 3.0, rule: str = "before"):
    """F&G Table I, claim table1-pm-beats-aa-surr: ``rule`` "before" the best PM scheme by its mean min-ESS
    against the better of AA and SURR, one Welch interval (``_best_of_six_before``, the rule before issue 32);
    "claim" the claim's code as it is (pm_gpc_mcmc._table1_decisions: some PM scheme above both AA and SURR,
    intervals.best_of_k_beats_best_summaries at the Markov-bounded per-setting levels).
    Truth on the boundary: all six PM schemes' true mean ESS equal AA's (the selection's upward bias is largest
    when every scheme can be the one picked), SURR ``base_gap`` times lower; per-chain ESS gamma with the CVs
    given (``cv_pm``: one per PM scheme).  All R-hat 1 (the gate passes).  ``n_clear`` of the ``n_settings``
    settings are clear wins (PM 10 x AA); the claim is then wrongly passed when "most" settings are counted
    won.  With one setting: 1 - P(the setting is wrongly won).  Reported as an interval that covers iff no
    wrong PASS."""
    import pandas as pd

    from gpbayes_repro.experiments import pm_gpc_mcmc

    cv_pm = np.broadcast_to(np.asarray(cv_pm, dtype=float), (6,))

    def sim(rng):
        rows = []
        for s in range(n_settings):
            b = 100.0 * (1 + s)
            pm_mean = 10 * b if s < n_clear else b
            for name, cv in zip(_PM_SCHEMES, cv_pm):
                x = _ess(rng, pm_mean, cv, n_pm, "gamma")
                rows.append((s, name, x.mean(), x.std(ddof=1), n_pm))
            for name, m in (("aa", b), ("surr", b / base_gap)):
                x = _ess(rng, m, cv_base, n_base, "gamma")
                rows.append((s, name, x.mean(), x.std(ddof=1), n_base))
        t = pd.DataFrame(rows, columns=["n", "scheme", "ess", "ess_sd", "n_chains"]).assign(d=2, kernel="iso",
                                                                                         max_rank_rhat=1.0)
        v = pm_gpc_mcmc._table1_decisions(t)["pm"]["verdict"] if rule == "claim" else _best_of_six_before(t)
        return (0.0, 1.0, 2.0) if v == "PASS" else (0.0, 1.0, 0.5)
    return sim


def _best_of_six_bonferroni(n_pm: int, n_base: int, cv_pm, cv_base: float, base_gap: float = 3.0,
                            n_boundary: int = 1, level: float = 0.95):
    """The calibrated alternative to the best-of-6 selection (intervals.best_of_k_beats_best): a setting is won
    when SOME PM scheme's Welch intervals against AA and against SURR both lie above 0 at 1 - (1 - level) / 6
    (union over the six schemes: Bonferroni; "the better of AA and SURR": intersection-union, no correction).
    Same truth as :func:`_best_of_six`.  ``n_boundary`` settings on the boundary: a wrong PASS when any of them
    is won (the claim "more than half of 8 settings" with 4 clear wins: the other 4 on the boundary, each
    decided at ``level`` = 1 - 0.05 / 4, the per-case level of the AMIS fraction claims; the clear settings are
    taken as won, which can only raise the error).  1 - P(wrong PASS)."""
    cv_pm = np.broadcast_to(np.asarray(cv_pm, dtype=float), (6,))

    def sim(rng):
        b = 100.0
        wrong = False
        for _ in range(n_boundary):
            pm = [_ess(rng, b, cv, n_pm, "gamma") for cv in cv_pm]
            base = [_ess(rng, m, cv_base, n_base, "gamma") for m in (b, b / base_gap)]
            wrong = intervals.best_of_k_beats_best(pm, base, level)[0] == "PASS" or wrong
        return (0.0, 1.0, 2.0) if wrong else (0.0, 1.0, 0.5)
    return sim


def _scenarios() -> list[Scenario]:
    rows = []
    for n in (3, 4):
        for s in (0.2, 0.5):
            rows.append(Scenario("log_ratio (Welch t on logs)", f"{n} vs {n} chains", f"log-normal, sd(log) {s}",
                                 "M&A claims 1-4", _lognormal(s, n, n)))
        for k in (4, 12):
            rows.append(Scenario("log_ratio (Welch t on logs)", f"{n} vs {n} chains", f"gamma, shape {k}",
                                 "M&A claims 1-4", _gamma(k, n)))
        rows.append(Scenario("log_ratio (Welch t on logs)", f"{n} vs {n} chains",
                             "bulk ESS of AR(1) chains, rho 0.8 vs 0.9, 1,000 draws", "M&A claims 1-4", _ar1(n)))
    rows.append(Scenario("log_ratio (Welch t on logs)", "3 vs 10 chains", "log-normal, sd(log) 0.5",
                         "no claim (unequal counts: Welch is liberal here)", _lognormal(0.5, 3, 10), required=False))
    for n in (3, 4):
        for s in (0.2, 0.5):
            rows.append(Scenario("percentile bootstrap of a ratio of means (before)", f"{n} vs {n} chains",
                                 f"log-normal, sd(log) {s}", "replaced", _bootstrap(s, n), required=False))
    for cv in (0.1, 0.3):
        rows.append(Scenario("Welch t of a difference of means", "3 vs 3 chains", f"normal, CV {cv}",
                             "F&G Table I per setting", _welch(cv, 3)))
    for n in (3, 10):
        for cv in (0.1, 0.4):
            rows.append(Scenario("fixed-effect average log ratio (delta method)",
                                 f"8 settings x 3 schemes x {n} chains", f"normal, CV {cv}",
                                 "F&G table1-ep-ge-la", _fixed_effect(n, cv)))
    rows.append(Scenario("paired t", "45 pairs", "centred log-normal differences (sd(log) 0.5)", "F&G capacity",
                         _paired("lognormal", 45)))
    rows.append(Scenario("paired t", "45 pairs", "t (3 d.f.) differences", "F&G capacity", _paired("t3", 45)))
    rows.append(Scenario("paired t", "45 pairs", "centred log-normal, sd(log) 0.8: skewness 3.7 (stress)",
                         "F&G capacity (stress)", _paired("lognormal", 45, 0.8), required=False))
    for n, p in ((800, 0.9), (200, 0.75)):
        rows.append(Scenario("paired proportions (Agresti-Min)", f"{n} test points", f"accuracy {p}",
                             "Hensman claim 4", _proportions(n, p)))
    for n in (12, 8):
        rows.append(Scenario("percentile bootstrap of an IQR ratio over replicates (before)",
                             f"{n} vs {n} replicates", "normal estimates, s.d. ratio 0.5",
                             "replaced for Xiong et al. claims 1-5b by the IQR-ratio pivot (over-covers: wider than "
                             "it needs to be)", _iqr_bootstrap(n), required=False))
        rows.append(Scenario("F interval of an s.d. ratio (normal theory)", f"{n} vs {n} replicates",
                             "normal estimates, s.d. ratio 0.5", "not used (it would change the precision measure "
                             "from the IQR to the s.d.)", _iqr_log_t(n), required=False))
    for side in ("above", "below"):
        rows.append(Scenario("ratio vs best/worst of 2 (IUT + Bonferroni)", "4 vs 4 vs 4 chains",
                             f"log-normal sd 0.5, truth on the boundary, side {side}",
                             "M&A claims 1, 3 (1 - P(wrong PASS))", _extreme(4, 0.5, side), nominal=0.975))
    # --- fg-seq ---
    for looks, what in (((3, 5), "default"), ((3, 9, 16), "decide"), ((4, 7, 10), "paper")):
        for cv in (0.25, 0.4):
            rows.append(Scenario("sequential fixed-effect average log ratio (Bonferroni over looks, futility)",
                                 f"8 settings x 3 schemes, PM chains at looks {list(looks)} ({what})",
                                 f"normal, CV {cv}, true ratio 1.105", "F&G table1-ep-ge-la",
                                 _seq_fixed_effect(looks, cv)))
    for looks, cells, what in (((3, 5), 15, "default"), ((3, 5, 20, 40), 15, "decide"), ((10, 20, 30, 40), 21, "paper")):
        rows.append(Scenario("sequential paired t (Bonferroni over looks, futility)",
                             f"{cells} cells, splits at looks {list(looks)} ({what})",
                             "t (3 d.f.) differences, mean 0.3 s.d.", "F&G capacity", _seq_paired(looks, cells)))
    # --- ma-seq ---
    for n in (3, 10):  # default and paper chains per method
        rows.append(Scenario("union over 4 data sets of IUT pairs (Bonferroni over data sets)",
                             f"{n} chains per method, 4 data sets",
                             "log-normal sd 0.5, fixed = 1.5 x worst other on every data set (boundary)",
                             "M&A claim 3 (1 - P(wrong PASS))", _union_fixed_poor(n, 0.5), nominal=0.975))
        rows.append(Scenario("union over 2 -site methods of IUT pairs (Bonferroni over methods)",
                             f"{n} chains per method, 2 -site x 2 -taylor",
                             "log-normal sd 0.5, both -site = the better -taylor (boundary)",
                             "M&A claim 4 (1 - P(wrong PASS))", _union_site_beats_taylor(n, 0.5), nominal=0.975))
    rows.append(Scenario("two looks, confirm-only (gate-blocked verdicts re-decided on lengthened chains)",
                         "3 vs 3 chains, half the verdicts blocked at look 1",
                         "log-normal sd 0.5, look 2 correlated 0.7 with look 1, truth on the boundary",
                         "M&A claims 1, 3 with extended chains (1 - P(wrong PASS))", _confirm_only(3, 0.5),
                         nominal=0.975))
    for kind in ("normal", "t3"):
        rows.append(Scenario("sequential t over data draws (Bonferroni over 4 looks)",
                             "1 + 4 draws per look, up to 4 looks (paper scale)",
                             f"per-draw log ratios {kind}, between-draw sd 0.77, truth at the range's end (3)",
                             "M&A claim 2 over draws (1 - P(wrong PASS))", _sequential_draws(kind), nominal=0.975))
    # --- amis-seq ---
    for n in (8, 12, 18):
        for shape, label in (("normal", "normal estimates"), ("run", "the default run's shape (Johnson S_U: skewness "
                                                                       "0.9, excess kurtosis 4.3)")):
            rows.append(Scenario("IQR-ratio pivot interval, t(3) reference (intervals.iqr_ratio)",
                                 f"{n} vs {n} replicates", f"{label}, IQR ratio 0.5",
                                 "Xiong et al. claims 1-5b (every comparison)", _amis_iqr_ratio(n, n, shape)))
    # the decide scale's confirmatory block of claim 1 (issue 32): 120 fresh replicates per sampler, one look
    for shape, label in (("normal", "normal estimates"), ("run", "the default run's shape (Johnson S_U: skewness "
                                                                   "0.9, excess kurtosis 4.3)")):
        rows.append(Scenario("IQR-ratio pivot interval, t(3) reference (intervals.iqr_ratio)", "120 vs 120 replicates",
                             f"{label}, IQR ratio 0.5", "Xiong et al. claim 1 (the decide scale's confirmatory block)",
                             _amis_iqr_ratio(120, 120, shape)))
    rows.append(Scenario("IQR-ratio pivot interval, t(3) reference (intervals.iqr_ratio)", "12 vs 8 replicates",
                         "the default run's shape, IQR ratio 0.5", "Xiong et al. claims 1-5b (unequal counts)",
                         _amis_iqr_ratio(12, 8, "run")))
    rows.append(Scenario("IQR-ratio pivot interval, t(3) reference (intervals.iqr_ratio)", "12 vs 12 replicates",
                         "t (3 d.f.) estimates (stress)", "Xiong et al. claims (stress)", _amis_iqr_ratio(12, 12, "t3"),
                         required=False))
    # (12, 18) / (8, 12): the looks before the config's 12 -> 24 / 8 -> 16 (issue 32 s.4: rows at the config's
    # looks are appended below; these keep their seeds and numbers, reported, not required)
    for counts, used in (((12, 18), "looks no scale uses (regression)"), ((8, 12), "looks no scale uses "
                                                                                   "(classification)"),
                         ((50, 75, 100), "paper regression")):
        for side in ("below", "above"):
            rows.append(Scenario("sequential IQR-ratio test, Bonferroni over looks", f"looks at {counts} replicates",
                                 f"the default run's shape, truth on the threshold, side {side}",
                                 f"Xiong et al. claims 1, 2a, 2b, 4a, 5a, 5b, {used} (1 - P(wrong PASS))",
                                 _amis_sequential(list(counts), "run", side), nominal=0.975,
                                 # the paper's counts: in the table, not in the fast test (its pivots take seconds)
                                 required=False))
    for counts, m, k, used in (((12, 18), 12, 9, "claim 3 (12 cases, 9 wins needed)"),
                               ((8, 12), 24, 18, "claim 4b (24 cases, 18 wins needed)"),
                               ((8, 12), 12, 7, "claim 4c (12 cases, more than half: 7)")):
        rows.append(Scenario("fraction of cases, per-case win/loss levels (Markov), sequential",
                             f"looks at {counts} replicates, {m} cases", "the default run's shape, k - 1 clear wins, "
                             "the rest on the boundary", f"Xiong et al. {used}, looks no scale uses (1 - P(wrong PASS))",
                             _amis_fraction(list(counts), m, k, "run"), nominal=0.975, required=False))
    # --- hensman-gadd ---
    # Gadd et al. claims 1-2: NMSE of the mixture density pooled over 4 chains, delete-one-chain jackknife t.
    # Shape from the default run (0748516, 4 x 750 draws per case): per cell, the pooled density misses the
    # truth by 0.2-0.74 of ||truth||, a chain deviates from the pooled one by 0.03-0.1, and the jackknife s.e.
    # (0.1-1.7 points) implies 30-45 % of that deviation lies along the error direction.
    for beta, s, along, label in ((0.36, 0.09, 0.43, "Case 1-like"), (0.6, 0.07, 0.3, "Case 2/3-like")):
        rows.append(Scenario("delete-one jackknife t (NMSE of a pooled mixture)", "4 chains",
                             f"{label}: miss {beta}, chain deviation {s} ({along:.0%} along the error)",
                             "Gadd claim 1 (per cell)", _jackknife_cell(4, beta, s, along)))
    rows.append(Scenario("delete-one jackknife t (NMSE of a pooled mixture)", "4 chains",
                         "Case 1-like, t (3 d.f.) chain deviations", "Gadd claim 1 (per cell)",
                         _jackknife_cell(4, 0.36, 0.09, 0.43, heavy=True)))
    rows.append(Scenario("delete-one jackknife t (NMSE of a pooled mixture)", "4 chains",
                         "unmixed chains: chain deviation 0.25, miss 0.36", "Gadd claim 1 (stress)",
                         _jackknife_cell(4, 0.36, 0.25, 0.43), required=False))
    rows.append(Scenario("jackknife t, two independent sets (Satterthwaite)", "4 + 4 chains, 6 features each",
                         "step of the mean gap, Case 1-like to Case 2/3-like", "Gadd claim 2 (per step)",
                         _jackknife_step(4)))
    rows.append(Scenario("percentile bootstrap over chains (Gadd claims 1-2 before)", "4 chains",
                         "Case 1-like cell", "replaced", _bootstrap_cell(4, 0.36, 0.09, 0.43), required=False))
    # --- end hensman-gadd ---
    # --- issue 32 s.4 (appended: the rows above keep their seeds) ---
    # Hensman et al. claim 2 (sparse_mcmc.sparse_claims): 800 test points (default image; paper 1,010), 4 chains
    # (default and paper sweep; 2: the default coal run); Monte Carlo s.e. 1-3 x the test-set s.e. (default: 1.5)
    for n_ch in (4, 2):
        for r in (1.0, 1.5, 3.0):
            rows.append(Scenario("Banerjee t, each error term its own t quantile (intervals.banerjee_t)",
                                 f"800 test points, {n_ch} chains", f"t (3 d.f.) per-point differences, normal chain "
                                 f"errors, Monte Carlo s.e. {r:g} x test-set s.e.", "Hensman claim 2",
                                 _hensman_lpd(n_ch, r)))
    rows.append(Scenario("Banerjee t, each error term its own t quantile (intervals.banerjee_t)",
                         "800 test points, 4 chains", "t (3 d.f.) chain errors, Monte Carlo s.e. 1.5 x test-set s.e.",
                         "Hensman claim 2", _hensman_lpd(4, 1.5, chain_err="t3")))
    rows.append(Scenario("Banerjee t, each error term its own t quantile (intervals.banerjee_t)",
                         "1,010 test points, 4 chains (paper)", "Monte Carlo s.e. 1.5 x test-set s.e.",
                         "Hensman claim 2", _hensman_lpd(4, 1.5, n_test=1010)))
    for n_ch in (4, 2):
        for r in (1.5, 3.0):
            for meth, label, used in (("normal", "normal interval, 1.96 x hypot(se_test, se_mc) (before)", "replaced"),
                                      ("satterthwaite", "Welch-Satterthwaite t (intervals.satterthwaite_t)",
                                       "not used (liberal when the Monte Carlo term has few d.f.)")):
                rows.append(Scenario(label, f"800 test points, {n_ch} chains",
                                     f"Monte Carlo s.e. {r:g} x test-set s.e.", f"Hensman claim 2: {used}",
                                     _hensman_lpd(n_ch, r, meth), required=False))
    # F&G Fig. 2 (pm_gpc.fig2_ratio_intervals): percentile bootstrap (1,000 draws) over repetitions of a ratio of
    # relative band widths; 200 repetitions (default), 500 (paper)
    for reps, req in ((200, True), (500, False)):
        for num, den, what in ((("ep", 1), ("laplace", 1), "EP / LA at N_imp 1"),
                               (("ep", 64), ("laplace", 64), "EP / LA at N_imp 64"),
                               (("laplace", 64), ("laplace", 1), "N_imp 64 / 1 with LA"),
                               (("ep", 64), ("ep", 1), "N_imp 64 / 1 with EP")):
            if reps == 500 and what.endswith(("N_imp 64", "with EP")):
                continue
            rows.append(Scenario("percentile bootstrap over repetitions of a band-width ratio",
                                 f"{reps} repetitions x 20 tau" + (" (paper)" if reps == 500 else ""),
                                 f"{what}: means of N_imp log-normal weights, log-s.d. rising over tau",
                                 "F&G fig2-ep-narrower, fig2-nimp-narrower (per panel)",
                                 _fig2_ratio(reps, num, den), required=req, test_n_sim=80))
    # F&G Table I, table1-pm-beats-aa-surr: the best of 6 PM schemes by mean ESS against the better of AA and SURR
    uneven = (0.1, 0.25, 0.4, 0.55, 0.7, 0.85)
    for n_pm, n_base, what in ((3, 3, "default"), (5, 3, "default, PM chains at the EP/LA design's last look"),
                               (10, 10, "paper")):
        for cv_pm, cv_b, label in ((0.5, 0.5, "CV 0.5"), (0.85, 0.85, "CV 0.85"),
                                   (uneven, 0.3, "PM CVs 0.1-0.85, AA/SURR CV 0.3")):
            inputs = f"gamma ESS, {label}, all 6 PM = AA = 3 x SURR (boundary)"
            rows.append(Scenario("best of 6 PM schemes by mean vs the better of AA/SURR, Welch t (the claim's rule)",
                                 f"{n_pm} PM vs {n_base} AA/SURR chains ({what}), one setting", inputs,
                                 "F&G table1-pm-beats-aa-surr before issue 32 (1 - P(wrong win)): BELOW 96 %, "
                                 "replaced",
                                 _best_of_six(n_pm, n_base, cv_pm, cv_b), nominal=0.975, required=False))
            rows.append(Scenario("some PM scheme above both AA and SURR, Bonferroni over 6 "
                                 "(intervals.best_of_k_beats_best)",
                                 f"{n_pm} PM vs {n_base} AA/SURR chains ({what}), one setting", inputs,
                                 "F&G table1-pm-beats-aa-surr, the rule adopted (1 - P(wrong win))",
                                 _best_of_six_bonferroni(n_pm, n_base, cv_pm, cv_b), nominal=0.975, test_n_sim=400))
    for n_pm, n_base, what in ((3, 3, "default"), (10, 10, "paper")):
        inputs = "gamma ESS CV 0.5; 4 settings clear wins, 4 on the boundary"
        rows.append(Scenario("best of 6 PM schemes by mean vs the better of AA/SURR, Welch t, 'most' of 8 settings "
                             "(the claim's rule)", f"{n_pm} PM vs {n_base} AA/SURR chains ({what}), 8 settings",
                             inputs, "F&G table1-pm-beats-aa-surr before issue 32 (1 - P(wrong PASS)): BELOW 96 %, "
                             "replaced",
                             _best_of_six(n_pm, n_base, 0.5, 0.5, n_settings=8, n_clear=4), nominal=0.975,
                             required=False))
        rows.append(Scenario("some PM scheme above both AA and SURR, Bonferroni over 6 and over the 4 settings that "
                             "can flip 'most' (per setting 1 - 0.05 / 24)",
                             f"{n_pm} PM vs {n_base} AA/SURR chains ({what}), 8 settings", inputs,
                             "F&G table1-pm-beats-aa-surr, the rule adopted (1 - P(wrong PASS))",
                             _best_of_six_bonferroni(n_pm, n_base, 0.5, 0.5, n_boundary=4, level=1 - 0.05 / 4),
                             nominal=0.975, test_n_sim=300))
    # F&G rows again with Table I's large spreads (CV 0.5, 0.85: pm-la-16 238 +- 194, pm-la-64 37 +- 31), gamma ESS
    for cv in (0.5, 0.85):
        rows.append(Scenario("Welch t of a difference of means", "3 vs 3 chains", f"gamma ESS, CV {cv}",
                             "F&G Table I per setting", _welch(cv, 3, "gamma")))
    # a known gap (issue 32 s.4): 88.8 % at 4,000 simulations (AMD EPYC) -- Welch's d.f. at 3 vs 3 chains with
    # one arm's spread 4x the other's; reported, asserted as a gap in tests/test_intervals.py; the claim now
    # decides on Bonferroni-split intervals, measured end to end at these spreads in the rows further down
    rows.append(Scenario("Welch t of a difference of means", "3 vs 3 chains", "gamma ESS, CV 0.85 vs 0.2 (uneven)",
                         "F&G Table I per setting, one Welch interval at 95 % (the rule before issue 32; known gap: "
                         "liberal at uneven spreads)",
                         _welch(0.85, 3, "gamma", cv_b=0.2), required=False))
    for n in (3, 10):
        for cv in (0.5, 0.85):
            rows.append(Scenario("fixed-effect average log ratio (delta method)",
                                 f"8 settings x 3 schemes x {n} chains", f"gamma ESS, CV {cv}",
                                 "F&G table1-ep-ge-la", _fixed_effect(n, cv, dist="gamma")))
    for looks, what in (((3, 5), "default"), ((4, 7, 10), "paper")):
        for cv in (0.5, 0.85):
            rows.append(Scenario("sequential fixed-effect average log ratio (Bonferroni over looks, futility)",
                                 f"8 settings x 3 schemes, PM chains at looks {list(looks)} ({what})",
                                 f"gamma ESS, CV {cv}, true ratio 1.105", "F&G table1-ep-ge-la",
                                 _seq_fixed_effect(looks, cv, dist="gamma")))
    # AMIS sequential looks as the config runs them (default 12 -> 24, 8 -> 16) and the decide scale's 4 looks
    for counts, used in (((12, 24), "default regression"), ((8, 16), "default classification"),
                         ((12, 24, 36, 48), "decide regression"), ((8, 16, 24, 32), "decide classification")):
        for side in ("below", "above"):
            rows.append(Scenario("sequential IQR-ratio test, Bonferroni over looks", f"looks at {counts} replicates",
                                 f"the default run's shape, truth on the threshold, side {side}",
                                 f"Xiong et al. claims 1, 2a, 2b, 4a, 5a, 5b, {used} (1 - P(wrong PASS))",
                                 _amis_sequential(list(counts), "run", side), nominal=0.975))
    for reg, cls, what in (((12, 24), (8, 16), "default"), ((12, 24, 36, 48), (8, 16, 24, 32), "decide")):
        for counts, m, k, used in ((reg, 12, 9, "claim 3 (12 cases, 9 wins needed)"),
                                   (cls, 24, 18, "claim 4b (24 cases, 18 wins needed)"),
                                   (cls, 12, 7, "claim 4c (12 cases, more than half: 7)")):
            rows.append(Scenario("fraction of cases, per-case win/loss levels (Markov), sequential",
                                 f"looks at {counts} replicates ({what}), {m} cases",
                                 "the default run's shape, k - 1 clear wins, the rest on the boundary",
                                 f"Xiong et al. {used}, the count before issue 32's pooled test: no verdict uses it "
                                 "(1 - P(wrong PASS))", _amis_fraction(list(counts), m, k, "run"),
                                 nominal=0.975, required=False))
    # issue 32: table1-pm-beats-aa-surr's code as adopted (pm_gpc_mcmc._table1_decisions), end to end: 8 settings,
    # 4 clear wins and 4 on the boundary (a wrong PASS needs one of them won), and the uneven spreads of Table I
    for n_pm, n_base, what in ((3, 3, "default"), (10, 10, "paper")):
        for cv_pm, cv_b, label in ((0.5, 0.5, "gamma ESS CV 0.5"), (uneven, 0.3, "PM CVs 0.1-0.85, AA/SURR CV 0.3"),
                                   (0.85, 0.2, "gamma ESS CV 0.85 vs 0.2 (uneven)")):
            rows.append(Scenario("some PM scheme above both AA and SURR, Bonferroni over 6, per-setting Markov levels "
                                 "(pm_gpc_mcmc._table1_decisions)",
                                 f"{n_pm} PM vs {n_base} AA/SURR chains ({what}), 8 settings",
                                 f"{label}; 4 settings clear wins, 4 on the boundary",
                                 "F&G table1-pm-beats-aa-surr (1 - P(wrong PASS))",
                                 _best_of_six(n_pm, n_base, cv_pm, cv_b, n_settings=8, n_clear=4, rule="claim"),
                                 nominal=0.975, test_n_sim=300))
    # issue 32: claims 3, 4b, 4c pooled over their cases (geometric mean of the IQR ratios, one interval); cases of
    # three shapes in turn (the run's Johnson S_U, normal, t(3)) and per-case ratios spread +-0.7 in log
    shapes = "cases of three shapes in turn (the run's, normal, t(3)), log ratios spread +-0.7, geometric mean"
    for n_a, n_b, m, used in ((12, 12, 12, "claim 3 (default, first look)"), (24, 24, 12, "claim 3 (default cap)"),
                              (8, 8, 24, "claim 4b (default, first look)"), (16, 16, 24, "claim 4b (default cap)"),
                              (8, 8, 12, "claim 4c (default, first look)"), (12, 8, 12, "claims 3-4c (unequal counts)"),
                              (48, 48, 12, "claim 3 (decide cap)"), (32, 32, 24, "claim 4b (decide cap)")):
        rows.append(Scenario("pooled IQR-ratio pivot interval, geometric mean over cases "
                             "(intervals.iqr_ratio_geometric_mean)", f"{n_a} vs {n_b} replicates, {m} cases",
                             f"{shapes} 0.5", f"Xiong et al. {used}", _amis_pooled(n_a, n_b, m, 0.5), test_n_sim=600))
    for reg, cls, what in (((12, 24), (8, 16), "default"), ((12, 24, 36, 48), (8, 16, 24, 32), "decide")):
        for counts, m, thr, used in ((reg, 12, 1.0, "claim 3 (12 cases, below 1)"),
                                     (cls, 24, 0.5, "claim 4b (24 cases, below 0.5)"),
                                     (cls, 12, 1.0, "claim 4c (12 cases, below 1)")):
            rows.append(Scenario("sequential pooled IQR-ratio test, Bonferroni over looks",
                                 f"looks at {counts} replicates ({what}), {m} cases",
                                 f"{shapes} on the threshold", f"Xiong et al. {used} (1 - P(wrong PASS))",
                                 _amis_pooled_sequential(list(counts), m, thr), nominal=0.975, test_n_sim=600))
    return rows


SCENARIOS = _scenarios()


def run(scenario: Scenario, n_sim: int, seed: int = 0) -> dict:
    """Coverage of one scenario over ``n_sim`` simulated data sets (NaN intervals count as not covering)."""
    rng = np.random.default_rng(seed)
    hit = 0
    for _ in range(n_sim):
        lo, hi, truth = scenario.simulate(rng)
        hit += bool(math.isfinite(lo) and math.isfinite(hi) and lo <= truth <= hi)
    cov = hit / n_sim
    return {"method": scenario.method, "count": scenario.count, "inputs": scenario.inputs,
            "used_by": scenario.used_by, "required": scenario.required, "nominal": scenario.nominal, "coverage": cov,
            "mc_se": math.sqrt(cov * (1 - cov) / n_sim), "n_sim": n_sim}


def table(n_sim: int = 4000, seed: int = 0, filter: str | None = None):
    """Every scenario's coverage (a pandas DataFrame); ``filter``: only rows whose texts contain one of its
    "|"-separated parts (case-insensitive).

    Row i is simulated with seed ``seed + i`` (i its index in ``SCENARIOS``), filtered or not.
    """
    import pandas as pd

    alts = None if filter is None else [f.strip().lower() for f in filter.split("|")]
    return pd.DataFrame([run(s, n_sim, seed + i) for i, s in enumerate(SCENARIOS)
                         if alts is None or any(f in " ".join((s.method, s.count, s.inputs, s.used_by)).lower()
                                                for f in alts)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-sim", type=int, default=4000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the table as CSV")
    p.add_argument("--merge", action="store_true", help="with --out: replace the rows of --out that were run "
                   "(same method, count and inputs), keep the others, write in SCENARIOS order")
    p.add_argument("--filter", default=None, help="only the rows whose method, count, inputs or used-by contain this "
                   "text or one of its |-separated parts (case-insensitive), e.g. 'iqr-ratio|markov'")
    a = p.parse_args(argv)
    t = table(a.n_sim, a.seed, a.filter)
    print(f"| method | count | inputs | used by | nominal | coverage (MC s.e.) |\n|---|---|---|---|---:|---:|")
    for r in t.itertuples():
        print(f"| {r.method} | {r.count} | {r.inputs} | {r.used_by} | {r.nominal:.3g} | "
              f"{100 * r.coverage:.1f} % ({100 * r.mc_se:.1f}) |")
    if a.out:
        if a.merge:
            t = merge(t, a.out)
        from gpbayes_repro import io

        with io.atomic_path(a.out) as tmp:
            t.to_csv(tmp, index=False)
    return 0


def merge(new, path):
    """The coverage CSV at ``path`` with the rows of ``new`` replacing those of the same (method, count, inputs);
    rows ordered as ``SCENARIOS``, their labels (used_by, required, nominal) taken from it; rows of ``path`` that
    no scenario has any more are dropped."""
    import os

    import pandas as pd

    key = ["method", "count", "inputs"]
    old = pd.read_csv(path) if os.path.exists(path) else new.iloc[:0]
    rows = {tuple(r[k] for k in key): dict(r) for _, r in old.iterrows()}
    rows.update({tuple(r[k] for k in key): dict(r) for _, r in new.iterrows()})
    out = []
    for s in SCENARIOS:
        r = rows.get((s.method, s.count, s.inputs))
        if r is not None:
            out.append({**r, "used_by": s.used_by, "required": s.required, "nominal": s.nominal})
    return pd.DataFrame(out, columns=list(new.columns))


if __name__ == "__main__":
    raise SystemExit(main())
