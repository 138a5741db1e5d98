"""The claims' interval methods: correct against independent formulas, and calibrated by simulation.

Issue 26 section 1: every interval that decides a claim has its coverage measured at the
counts the default scale uses; >= 93 % at nominal 95 % is required.  The full table is
``python -m gpbayes_repro.coverage`` (README / docs, Verdicts); here every row the claims
use runs at 1,500 simulated data sets (Monte Carlo s.e. of a 95 % coverage ~0.6 %), the
slow AR(1)-chain rows at 150.
"""

import math

import numpy as np
import pytest
from scipy import stats

from gpbayes_repro import claims, coverage, intervals


def test_log_ratio_is_welch_on_the_logs():
    rng = np.random.default_rng(3)
    a, b = np.exp(rng.normal(1.0, 0.4, 4)), np.exp(rng.normal(0.2, 0.3, 3))
    est, lo, hi = intervals.log_ratio(a, b)
    ci = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
    assert est == pytest.approx(math.exp(np.log(a).mean() - np.log(b).mean()))
    assert (lo, hi) == pytest.approx((math.exp(ci.low), math.exp(ci.high)))
    # one replicate or a non-positive value: no interval
    assert math.isnan(intervals.log_ratio(a[:1], b)[1])
    assert math.isnan(intervals.log_ratio(np.r_[a, 0.0], b)[1])


def test_paired_t_and_fixed_effect_against_scipy_and_the_delta_method():
    d = np.array([0.1, -0.05, 0.2, 0.07, 0.0, 0.12])
    m, lo, hi = intervals.paired_t(d)
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low, ci.high)) and m == pytest.approx(d.mean())
    # one setting, equal n: the delta-method variance of log(mean_a / mean_b)
    est, lo, hi = intervals.fixed_effect_log_ratio([200.0], [20.0], [10], [100.0], [10.0], [10])
    se = math.sqrt(0.1**2 / 10 + 0.1**2 / 10)
    h = stats.t.ppf(0.975, 18.0) * se  # Satterthwaite with equal terms: 2 x 9
    assert est == pytest.approx(2.0) and (lo, hi) == pytest.approx((2 * math.exp(-h), 2 * math.exp(h)))


def test_paired_proportions_counts_only_the_discordant_pairs():
    a = np.array([1] * 80 + [1] * 15 + [0] * 5, dtype=bool)
    b = np.array([1] * 80 + [0] * 15 + [1] * 5, dtype=bool)
    est, lo, hi = intervals.paired_proportions(a, b)
    assert est == pytest.approx(0.10) and lo < 0.10 < hi and lo > 0
    with pytest.raises(ValueError, match="equal-length"):
        intervals.paired_proportions(a, b[:-1])


def test_decide_all_pairs_needs_every_pair_to_pass_and_one_to_fail():
    rng = np.random.default_rng(0)
    big = np.exp(rng.normal(np.log(10.0), 0.01, 4))
    one = np.exp(rng.normal(0.0, 0.01, 4))
    four = np.exp(rng.normal(np.log(4.0), 0.01, 4))
    v, bind, plain, bonf = intervals.decide_all_pairs({"a/b": (big, one), "a/c": (big, four)}, 2.0, "above")
    assert v == "PASS" and bind == "a/c"
    v, bind, *_ = intervals.decide_all_pairs({"a/b": (big, one), "a/c": (big, 8 * four)}, 2.0, "above")
    assert v == "FAIL" and bind == "a/c"
    # the Bonferroni intervals are wider than the plain ones
    assert bonf["a/b"][1] < plain["a/b"][1] and bonf["a/b"][2] > plain["a/b"][2]


def test_directional_gate_gates_only_the_chains_the_verdict_rests_on():
    bad, good = ([1.3], [20.0]), ([1.001], [900.0])
    assert claims.directional_gate("PASS", {"PASS": good, "FAIL": bad}) == ("PASS", None)
    v, why = claims.directional_gate("FAIL", {"PASS": good, "FAIL": bad})
    assert v == "INCONCLUSIVE" and "FAIL would rest on chains" in why and "1.3" in why
    assert claims.directional_gate("INCONCLUSIVE", {"PASS": bad, "FAIL": bad}) == ("INCONCLUSIVE", None)
    # a paper's own threshold (PSRF < 1.1) without an ESS requirement
    assert claims.directional_gate("PASS", {"PASS": ([1.08], None)}, max_rhat=1.1, min_ess=None) == ("PASS", None)


@pytest.mark.parametrize("scenario", [s for s in coverage.SCENARIOS if s.required],
                         ids=lambda s: f"{s.method} | {s.count} | {s.inputs}")


def test_every_deciding_interval_covers_at_least_93_percent(scenario):
    n_sim = scenario.test_n_sim or (150 if "AR(1)" in scenario.inputs else 1500)
    row = coverage.run(scenario, n_sim, seed=11)
    need = 0.93 if scenario.nominal == 0.95 else 0.96
    # 3 Monte Carlo s.e. of slack for the short runs only (the AR(1) chains, the rows with test_n_sim)
    slack = 3 * math.sqrt(0.95 * 0.05 / n_sim) if n_sim < 1000 else 0.0
    assert row["coverage"] >= need - slack, row


def test_the_percentile_bootstrap_over_three_chains_undercovers():
    """What the claims used before: at 3 chains a percentile bootstrap of a ratio of means covers ~80 %."""
    rows = [coverage.run(s, 1500, seed=5) for s in coverage.SCENARIOS
            if s.used_by == "replaced" and s.count.startswith("3 ")]
    assert rows and all(r["coverage"] < 0.88 for r in rows), rows


# --- fg-seq: the sequential designs' helpers (Bonferroni over looks, futility projection) ---
def test_look_level_and_the_count_that_would_decide():
    assert intervals.look_level(0.95, 1) == pytest.approx(0.95)
    assert intervals.look_level(0.95, 2) == pytest.approx(0.975) and intervals.look_level(0.95, 4) == pytest.approx(0.9875)
    with pytest.raises(ValueError, match="n_looks must be >= 1"):
        intervals.look_level(0.95, 0)
    # estimate 0.1 with s.e. 0.07 at 3 replicates: z(0.975) * 0.07 / sqrt(n / 3) = 0.1 at n = 3 (1.96 * 0.7)^2
    # (the one projection, final_states.project, at 50 % power: what the sequential designs' futility stops use)
    from gpbayes_repro.final_states import project

    z = stats.norm.ppf(0.975)
    assert project(0.1, 0.07, 0.0, 3, level=0.95, power=0.5) == pytest.approx(3 * (z * 0.7) ** 2)
    assert project(1.0, 0.1, 1.0, 3, level=0.95, power=0.5) == math.inf
    assert math.isnan(project(0.1, math.nan, 0.0, 3, level=0.95, power=0.5))


def test_sequential_action_stops_when_decided_at_the_cap_or_when_futile():
    act = intervals.sequential_action
    assert act("PASS", 0, 2, False) == "decided" and act("FAIL", 0, 2, True) == "decided"
    assert act("INCONCLUSIVE", 0, 2, True) == "continue" and act("INCONCLUSIVE", 0, 2, False) == "futile"
    assert act("INCONCLUSIVE", 1, 2, True) == "cap"
    with pytest.raises(ValueError, match="look must be in 0..1"):
        act("PASS", 2, 2, True)
    with pytest.raises(ValueError, match="verdict must be"):
        act("pass", 0, 2, True)


def test_fixed_effect_log_ratio_se_matches_the_interval():
    args = ([200.0, 120.0], [20.0, 30.0], [5, 5], [100.0, 110.0], [10.0, 20.0], [5, 5])
    est, lo, hi = intervals.fixed_effect_log_ratio(*args)
    log_est, se, df = intervals.fixed_effect_log_ratio_se(*args)
    assert math.exp(log_est) == pytest.approx(est)
    h = stats.t.ppf(0.975, df) * se
    assert (lo, hi) == pytest.approx((math.exp(log_est - h), math.exp(log_est + h)))


# --- ma-seq: the union rules of M&A claims 3 and 4 ---
def test_union_rows_of_ma_claims_3_and_4_are_measured():
    rows = [s for s in coverage.SCENARIOS if s.used_by.startswith(("M&A claim 3", "M&A claim 4"))]
    assert {s.used_by.split(" (")[0] for s in rows} == {"M&A claim 3", "M&A claim 4"}
    assert all(s.required and s.nominal == 0.975 for s in rows)


def test_the_union_over_data_sets_without_bonferroni_would_pass_wrongly_too_often():
    """The row can fail: the same least favourable truth decided at 95 % per data set (no correction over the
    4 data sets) gives a wrong PASS more often than 2.5 %, so the Bonferroni level is what keeps the rate."""
    naive = coverage.Scenario("naive", "3", "", "", coverage._union_fixed_poor(3, 0.5, alpha=0.05 * 4), 0.975)
    assert coverage.run(naive, 1500, seed=2)["coverage"] < 0.96



def test_confirm_only_extension_row_is_measured():
    """slice_ma.confirm: a verdict blocked by the gate stands only if the lengthened chains confirm it, so a
    wrong verdict needs a wrong look 1 (its coverage: the parametrized test above, >= 96 % at nominal 97.5 %)."""
    row = [s for s in coverage.SCENARIOS if s.method.startswith("two looks, confirm-only")]
    assert len(row) == 1 and row[0].required and row[0].nominal == 0.975


def test_sequential_over_draws_rows_are_measured():
    rows = [s for s in coverage.SCENARIOS if s.used_by.startswith("M&A claim 2 over draws")]
    assert len(rows) == 2 and all(r.required and r.nominal == 0.975 for r in rows)


# --- amis-seq: the AMIS claims' IQR-ratio interval ---
def test_iqr_ratio_pivot_matches_the_sample_quantile_asymptotics(monkeypatch):
    """At large n the pivot's quantiles approach the normal with the sample-quartile variance (independent formula).

    For a symmetric law with quartiles -q, q and density f there: Var(IQR_hat) ~ 1 / (4 n f^2), so
    Var(log IQR_hat) ~ 1 / (16 n f^2 q^2) (the reference t from scipy).
    """
    q = stats.t.ppf(0.75, intervals.IQR_REFERENCE_DF)
    f = stats.t.pdf(q, intervals.IQR_REFERENCE_DF)
    var1 = 1 / (16 * f**2 * q**2)
    # fewer pivot draws than the claims use (a fresh cache): enough for the 2.5 % quantiles to ~2 %
    monkeypatch.setattr(intervals, "IQR_PIVOT_DRAWS", 40_000)
    monkeypatch.setattr(intervals, "_IQR_PIVOT", {})
    monkeypatch.setattr(intervals, "_IQR_PIVOT_DIFF", {})
    n = 100
    lo, hi = intervals.iqr_ratio_pivot_quantiles(n, n, [0.025, 0.975])
    h = stats.norm.ppf(0.975) * math.sqrt(2 * var1 / n)
    assert lo == pytest.approx(-h, rel=0.05) and hi == pytest.approx(h, rel=0.05)


def test_iqr_ratio_is_the_type7_iqr_ratio_with_a_scale_free_interval():
    rng = np.random.default_rng(4)
    a, b = rng.standard_t(3, 12), rng.standard_t(3, 8)
    est, lo, hi = intervals.iqr_ratio(a, b)
    iqr = lambda x: np.subtract(*np.percentile(x, [75, 25]))  # noqa: E731
    assert est == pytest.approx(iqr(a) / iqr(b)) and lo < est < hi
    # location and scale: the interval moves with the ratio, its log-width depends on the counts only
    e2, lo2, hi2 = intervals.iqr_ratio(7.0 + 3.0 * a, -2.0 + 0.5 * b)
    assert (e2, lo2, hi2) == pytest.approx((6 * est, 6 * lo, 6 * hi))
    ql, qh = intervals.iqr_ratio_pivot_quantiles(12, 8, [0.025, 0.975])
    assert (lo, hi) == pytest.approx((est * math.exp(-qh), est * math.exp(-ql)))
    # a wider level gives a wider interval; too few replicates or a zero IQR: no interval
    _, lo9, hi9 = intervals.iqr_ratio(a, b, 0.99)
    assert lo9 < lo and hi9 > hi
    assert math.isnan(intervals.iqr_ratio(a[:3], b)[1]) and math.isnan(intervals.iqr_ratio(a, np.ones(8))[1])


def test_iqr_ratio_covers_at_its_reference_shape():
    """Replicates of the reference shape: the pivot is exact, so the coverage is the level within Monte Carlo error."""
    rng = np.random.default_rng(8)
    df = intervals.IQR_REFERENCE_DF
    hits = [intervals.iqr_ratio(0.3 * rng.standard_t(df, 8), rng.standard_t(df, 8))[1:] for _ in range(1500)]
    cov = np.mean([lo <= 0.3 <= hi for lo, hi in hits])
    assert abs(cov - 0.95) < 3 * math.sqrt(0.95 * 0.05 / 1500)


def test_jackknife_t_of_a_mean_is_the_t_interval_and_combines_sets_by_satterthwaite():
    """Gadd claims 1-2 (hensman-gadd): for a mean the delete-one jackknife is the ordinary t interval
    (known answer); two independent sets of a difference add variances with Satterthwaite d.f."""
    x = np.array([1.0, 2.5, 0.7, 3.1])
    loo = np.array([np.delete(x, i).mean() for i in range(x.size)])
    assert np.allclose(intervals.jackknife_t(x.mean(), [loo]), intervals.paired_t(x))
    y = np.array([5.0, 4.2, 6.1, 5.5, 4.9])
    d = y.mean() - x.mean()
    sets = [np.array([np.delete(y, i).mean() for i in range(y.size)]) - x.mean(), y.mean() - loo]
    est, lo, hi = intervals.jackknife_t(d, sets)
    assert np.allclose((est, lo, hi), claims.welch_interval(y.mean(), y.std(ddof=1), y.size, x.mean(),
                                                            x.std(ddof=1), x.size))
    assert all(np.isnan(intervals.jackknife_t(1.0, [np.array([1.0])])[1:]))
    assert intervals.jackknife_t(2.0, [np.full(4, 2.0)]) == (2.0, 2.0, 2.0)


# --- issue 32 s.4: Hensman claim 2, F&G Fig. 2, F&G Table I's best-of-6 selection ---
def test_banerjee_t_gives_each_term_its_own_t_quantile():
    """Known answers: one term is the t interval; two terms add t^2 se^2; a non-finite term is left out."""
    x = np.array([0.3, -0.1, 0.45, 0.2, 0.05])
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert np.allclose(intervals.banerjee_t(x.mean(), [se], [4]), intervals.paired_t(x))
    est, lo, hi = intervals.banerjee_t(1.0, [0.1, 0.2], [799, 3])
    h = math.hypot(stats.t.ppf(0.975, 799) * 0.1, stats.t.ppf(0.975, 3) * 0.2)
    assert (est, lo, hi) == pytest.approx((1.0, 1.0 - h, 1.0 + h))
    # at least as wide as the Welch-Satterthwaite t, and never wider than t(min d.f.) x the total s.e.
    _, slo, shi = intervals.satterthwaite_t(1.0, [0.1, 0.2], [799, 3])
    assert lo < slo and hi - 1.0 < stats.t.ppf(0.975, 3) * math.hypot(0.1, 0.2)
    assert intervals.banerjee_t(1.0, [0.1, math.nan], [799, 1])[1] == pytest.approx(
        1.0 - stats.t.ppf(0.975, 799) * 0.1)
    assert math.isnan(intervals.banerjee_t(1.0, [0.1, 0.2], [799, 0])[1])
    with pytest.raises(ValueError, match="one d.f. per s.e."):
        intervals.banerjee_t(1.0, [0.1, 0.2], [3])


def test_satterthwaite_t_is_welch_for_two_sample_means():
    a, b = np.array([2.0, 2.5, 1.7, 3.1]), np.array([1.0, 1.4, 0.8])
    sa, sb = a.std(ddof=1) / 2, b.std(ddof=1) / math.sqrt(3)
    got = intervals.satterthwaite_t(a.mean() - b.mean(), [sa, sb], [3, 2])
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert got[1:] == pytest.approx((ci.low, ci.high))
    assert intervals.satterthwaite_df([sa, sb], [3, 2]) == pytest.approx(
        (sa**2 + sb**2) ** 2 / (sa**4 / 3 + sb**4 / 2))


def test_the_normal_interval_of_hensman_claim_2_undercovers_and_banerjee_does_not():
    """The method before (1.96 x hypot) with the Monte Carlo error dominating at 4 chains covers < 93 %; the same
    draws with intervals.banerjee_t >= 93 % (its required rows: the parametrized test above)."""
    before = coverage.run(coverage.Scenario("", "", "", "", coverage._hensman_lpd(4, 3.0, "normal")), 1500, seed=4)
    now = coverage.run(coverage.Scenario("", "", "", "", coverage._hensman_lpd(4, 3.0)), 1500, seed=4)
    assert before["coverage"] < 0.91 and now["coverage"] >= 0.93


def test_boot_band_widths_equal_the_quantiles_of_the_expanded_resample():
    """coverage._boot_band_widths (counts of each repetition) = pm_gpc.fig2_band_widths' arithmetic on the
    resample itself (np.quantile, type 7), to rounding."""
    rng = np.random.default_rng(6)
    for n_rep in (40, 200):
        v = rng.lognormal(0.0, 0.8, (n_rep, 5))
        idx = rng.integers(0, n_rep, (25, n_rep))
        counts = np.stack([np.bincount(i, minlength=n_rep) for i in idx])
        x = v[idx]
        q = np.quantile(x, [0.025, 0.975], axis=1)
        np.testing.assert_allclose(coverage._boot_band_widths(v, counts), ((q[1] - q[0]) / x.mean(axis=1)).mean(-1),
                                   rtol=1e-12)


def test_best_of_k_beats_best_needs_one_candidate_above_every_baseline():
    rng = np.random.default_rng(1)
    base = [rng.normal(100, 5, 10), rng.normal(40, 5, 10)]
    low = [rng.normal(100, 5, 10) for _ in range(5)]
    v, k, ivs = intervals.best_of_k_beats_best(low + [rng.normal(200, 5, 10)], base)
    assert v == "PASS" and k == 5 and len(ivs) == 12
    # every candidate below the first baseline: FAIL; candidates on the boundary: INCONCLUSIVE
    assert intervals.best_of_k_beats_best([rng.normal(50, 5, 10) for _ in range(6)], base)[0] == "FAIL"
    assert intervals.best_of_k_beats_best(low, base)[0] == "INCONCLUSIVE"
    # the PASS level is Bonferroni over the K candidates: wider than a single 95 % Welch interval
    a, b = low[0], base[0]
    single = claims.welch_interval(a.mean(), a.std(ddof=1), 10, b.mean(), b.std(ddof=1), 10)
    lo6 = intervals.best_of_k_beats_best(low, base)[2][0, 0][1]
    assert lo6 < single[1]
    with pytest.raises(ValueError, match="candidates and baselines"):
        intervals.best_of_k_beats_best([], base)


def test_selecting_the_best_of_six_by_its_mean_passes_wrongly_too_often():
    """F&G Table I's rule before issue 32 (the best PM scheme by mean against the better of AA and SURR at 95 %,
    coverage._best_of_six_before): with all six PM schemes on the boundary a setting is won wrongly more often than the 2.5 % of
    a one-sided 95 % test (10 chains, CV 0.5: ~8 %); the proposed rule (intervals.best_of_k_beats_best) keeps it."""
    s = coverage.Scenario("", "", "", "", coverage._best_of_six(10, 10, 0.5, 0.5), 0.975)
    assert coverage.run(s, 600, seed=3)["coverage"] < 0.96


def test_merge_replaces_the_rows_run_and_keeps_the_others(tmp_path):
    """``--merge``: a filtered run rewrites only its rows of the committed table, labels from SCENARIOS."""
    s0, s1 = coverage.SCENARIOS[0], coverage.SCENARIOS[1]
    import pandas as pd

    old = pd.DataFrame([{**coverage.run(s, 20, seed=0), "used_by": "stale"} for s in (s0, s1)])
    old.to_csv(tmp_path / "c.csv", index=False)
    new = pd.DataFrame([coverage.run(s1, 30, seed=1)])
    out = coverage.merge(new, tmp_path / "c.csv")
    assert list(out["n_sim"]) == [20, 30] and list(out["used_by"]) == [s0.used_by, s1.used_by]


def test_welch_at_three_chains_is_liberal_when_one_arms_spread_is_four_times_the_other():
    """A known calibration gap (issue 32 s.4), kept visible: F&G Table I's per-setting Welch interval at 3 vs 3
    chains with gamma ESS of CV 0.85 against 0.2 covers ~89 % (4,000 simulations: 88.8 %), below the 93 % floor.
    Since issue 32 no verdict rests on it alone: table1-pm-beats-aa-surr decides on Welch intervals at
    1 - 0.05 / 24 inside intervals.best_of_k_beats_best_summaries, measured end to end at these spreads."""
    row = [s for s in coverage.SCENARIOS if "CV 0.85 vs 0.2" in s.inputs][0]
    assert not row.required
    out = coverage.run(row, 1500, seed=11)
    assert out["coverage"] < 0.93, out
