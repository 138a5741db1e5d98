"""Final states of claims (gpbayes_repro.final_states): the projection against simulation, each state's rule."""

import math

import numpy as np
import pytest
from scipy import stats

from gpbayes_repro import final_states as fs


def test_project_is_the_normal_sample_size_formula_and_its_inverse_is_the_mde():
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert fs.project(0.3, 0.2, 0.0, 4) == pytest.approx(4 * (z * 0.2 / 0.3) ** 2)
    # the minimum detectable effect at the projected count is the gap itself
    n = fs.project(0.3, 0.2, 0.0, 4)
    assert fs.minimum_detectable_effect(0.2, 4, n) == pytest.approx(0.3)
    assert fs.project(0.0, 0.2, 0.0, 4) == math.inf and math.isnan(fs.project(0.3, -1.0, 0.0, 4))
    with pytest.raises(ValueError, match="power"):
        fs.project(0.3, 0.2, 0.0, 4, power=1.0)


def test_projected_count_has_its_stated_power_by_simulation():
    # replicates N(delta, sd); a 95 % t interval of the mean at the projected count excludes 0 with ~80 % power
    rng = np.random.default_rng(3)
    delta, sd, n0 = 0.5, 1.0, 6
    n = math.ceil(fs.project(delta, sd / math.sqrt(n0), 0.0, n0))
    hits = 0
    reps = 4000
    for _ in range(reps):
        x = rng.normal(delta, sd, size=n)
        h = stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n)
        hits += x.mean() - h > 0
    # normal theory at n = 32: the t interval loses a little power; 0.75-0.85 brackets it at this count
    assert 0.75 <= hits / reps <= 0.85, hits / reps


def rec(verdict="INCONCLUSIVE", reason="straddles", **iv):
    base = {"quantity": "q", "estimate": 1.2, "lo": 0.9, "hi": 1.6, "threshold": 1.0, "side": "above"}
    base.update(iv)
    return {"id": "c", "verdict": verdict, "reason": reason, "interval": base, "measured": {"n_chains": 4}}


def test_decided_claims_keep_their_verdict():
    assert fs.final_state(rec("PASS", None))["state"] == "PASS"
    assert fs.final_state(rec("FAIL", None))["state"] == "FAIL"


def test_unmixed_chains_are_not_assessable():
    r = rec(reason="case1: not converged: max split R-hat 1.85 (gate 1.05), min bulk ESS 6.43 (gate 100)")
    out = fs.final_state(r, {"projection": {"count": "measured.n_chains"}})
    assert out["state"] == "NOT_ASSESSABLE" and "R-hat 1.85" in out["detail"]
    # close to the gate (ESS 38.8 of 100): longer chains are the compute, not a sampler that fails to mix
    r = rec(reason="FAIL would rest on chains that are not converged: max split R-hat 1.06 (gate 1.05), "
                   "min bulk ESS 38.8 (gate 100)")
    out = fs.final_state(r)
    assert out["state"] == "NEEDS_COMPUTE" and out["length_factor"] == pytest.approx(100 / 38.8)


def test_needs_compute_states_count_cpu_and_tier():
    ent = {"projection": {"count": "measured.n_chains", "scale": "log", "unit": "chains"},
           "budget": {"default_cpu_min": 1, "decide_cpu_min": 30}}
    out = fs.final_state(rec(), ent, cpu_s_per_unit=60.0)
    se = (math.log(1.6) - math.log(0.9)) / (2 * stats.norm.ppf(0.975))
    need = fs.project(math.log(1.2), se, 0.0, 4)
    assert out["state"] == "NEEDS_COMPUTE" and out["count_80"] == pytest.approx(need)
    assert out["cpu_min_projected"] == pytest.approx(need - 4)  # 60 CPU-s per chain
    assert out["tier"] == ("decide" if need - 4 <= 30 else "cluster")
    # without a recorded count the state says so instead of inventing one
    out = fs.final_state(rec(), {"projection": {}})
    assert out["state"] == "NEEDS_COMPUTE" and "no replicate count" in out["detail"]


def test_a_count_past_the_papers_data_is_undecidable_on_data():
    ent = {"projection": {"count": "measured.n_chains", "data_limit": {"count": 6, "unit": "replicates",
                                                                         "why": "the paper ran 6"}}}
    out = fs.final_state(rec(estimate=1.01, lo=0.5, hi=1.52), ent)
    assert out["state"] == "UNDECIDABLE_ON_DATA" and out["mde"] > 0.01 and "the paper ran 6" in out["detail"]
    # a large effect is decidable within the limit: NEEDS_COMPUTE, not undecidable
    out = fs.final_state(rec(estimate=1.5, lo=1.3, hi=1.7), ent)
    assert out["state"] == "NEEDS_COMPUTE"


def test_equivalence_inside_the_papers_margin():
    ent = {"projection": {"equivalence": [0.5, 2.0]}, "claim_type": "difference"}
    out = fs.final_state(rec(lo=0.7, hi=1.6), ent)
    assert out["state"] == "EQUIVALENT" and "did not reproduce" in out["detail"]
    assert fs.final_state(rec(lo=0.7, hi=2.6), ent)["state"] == "NEEDS_COMPUTE"


def test_cpu_per_unit_reads_snakemake_benchmark_files(tmp_path):
    d = tmp_path / "rule_a"
    d.mkdir()
    for i, cpu in enumerate((10.0, 30.0)):
        (d / f"{i}.tsv").write_text("s\th:m:s\tmax_rss\tcpu_time\n1.0\t0:00:01\t100\t%g\n" % cpu)
    assert fs.cpu_per_unit(tmp_path, ["rule_a"], 4) == pytest.approx(10.0)
    assert fs.cpu_per_unit(tmp_path, ["missing"], 4) is None


def test_an_effect_below_the_data_floor_is_undecidable_at_any_count():
    # Hensman claim 2's shape: a paired LPD difference whose test-set s.e. stays with infinitely many chains
    r = rec(estimate=-0.0004, lo=-0.0023, hi=0.0016, threshold=0.0)
    r["measured"]["se_test_set"] = 0.0003
    ent = {"projection": {"count": "measured.n_chains", "se_floor": "measured.se_test_set"}}
    out = fs.final_state(r, ent)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert out["state"] == "UNDECIDABLE_ON_DATA" and out["mde"] == pytest.approx(z * 0.0003)
    r["interval"].update(estimate=0.004, lo=0.001, hi=0.007)
    assert fs.final_state(r, ent)["state"] == "NEEDS_COMPUTE"


def test_a_preregistered_undecidable_claim_stays_so_whatever_our_design_says():
    ent = {"projection": {"undecidable_on_data": "the paper's draw cannot be recovered"}}
    for v in ("PASS", "FAIL", "INCONCLUSIVE"):
        out = fs.final_state(rec(v, None if v != "INCONCLUSIVE" else "straddles"), ent)
        assert out["state"] == "UNDECIDABLE_ON_DATA" and f"verdict, for information: {v}" in out["detail"]


def test_the_count_may_be_the_first_of_several_paths_and_a_per_look_list_gives_its_cap():
    r = rec()
    r["measured"] = {"sequential": {"replicates_per_look": {"regression": [12, 24, 36, 48]}}}
    ent = {"projection": {"count": ["measured.sequential.replicates_at_stop.regression",
                                    "measured.sequential.replicates_per_look.regression"]}}
    assert fs.final_state(r, ent)["n_now"] == 48


def test_a_count_already_at_the_80_percent_count_asks_for_a_fresh_run_not_plus_zero():
    ent = {"projection": {"count": "measured.n_chains", "scale": "log", "unit": "chains"},
           "budget": {"decide_cpu_min": 30}}
    # an interval that misses the threshold at a level other than the projection's (the claim's several
    # comparisons), so undecided although the count reaches the 80 %-power count
    out = fs.final_state(rec(estimate=2.0, lo=1.3, hi=3.1), ent, cpu_s_per_unit=60.0)
    assert out["state"] == "NEEDS_COMPUTE" and out["count_80"] < 4
    # the four chains run again, not "+0 CPU-min"
    assert out["cpu_min_projected"] == pytest.approx(4.0) and "+0 " not in out["detail"]
    assert "fresh run of 4 chains" in out["detail"] and out["tier"] == "decide"


def test_the_open_part_of_a_two_part_claim_is_what_is_projected():
    """A claim whose first part is decided and second is not (a rise, then saturation within +-0.01) is
    projected on the second: here past the paper's 1,010 test points, so undecidable on its data."""
    r = {"id": "x", "verdict": "INCONCLUSIVE", "reason": "the last step is not resolved",
         "interval": {"estimate": 0.03, "lo": 0.016, "hi": 0.044, "threshold": 0.01, "side": "above"},
         "measured": {"change_last_M_step": -0.00375, "change_interval": [-0.0122, 0.0047], "n_test_points": 800}}
    part = {"estimate": "measured.change_last_M_step", "interval": "measured.change_interval",
            "threshold": [-0.01, 0.01], "side": "between"}
    limit = {"count": 1010, "unit": "test points", "why": "the paper's test set"}
    out = fs.final_state(r, {"projection": {"open_part": part, "count": "measured.n_test_points", "data_limit": limit}})
    se = 0.0169 / (2 * stats.norm.ppf(0.975))
    assert out["state"] == "UNDECIDABLE_ON_DATA"
    assert out["count_80"] == pytest.approx(fs.project(-0.00375, se, -0.01, 800))
    assert out["mde"] == pytest.approx(fs.minimum_detectable_effect(se, 800, 1010))
    # without the open part the decided rise would be projected: a count below today's
    out = fs.final_state(r, {"projection": {"count": "measured.n_test_points", "data_limit": limit}})
    assert out["state"] == "NEEDS_COMPUTE"
