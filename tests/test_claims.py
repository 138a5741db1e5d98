import html
import json

import pytest

from gpbayes_repro import claims


def claim(**kw):
    c = {"id": "x-1", "statement": "s", "measured": {"v": 1.0}, "paper": None, "passed": True}
    c.update(kw)
    return c


def test_write_read_render(tmp_path):
    path = tmp_path / "p.json"
    claims.write_claims("paper", [claim(), claim(id="x-2", passed=False, paper={"v": 2})], path, scale="smoke")
    doc = claims.read_claims(path)
    assert doc["n_passed"] == 1 and doc["n_claims"] == 2 and doc["scale"] == "smoke"
    page = claims.render_html([doc])
    assert page.count("<b>PASS</b>") == 1 and page.count("<b>FAIL</b>") == 1 and "v = 1" in page


def test_claims_page_summary_titles_one_line_verdicts_and_figure_links(tmp_path):
    iv = {"quantity": "ratio", "estimate": 2.5, "lo": 1.2, "hi": 3.9, "threshold": 2.0, "side": "above",
          "method": "bootstrap over chains"}
    recs = [claim(id="a-1", passed=False, verdict="INCONCLUSIVE", reason="interval straddles 2", interval=iv,
                  measured={"ratio": 2.5, "n_chains": 4, "x": 0.1, "long": 7.0}),
            claim(id="a-2", figures=["figures/slice/fig3.pdf"])]
    doc = claims.read_claims(claims.write_claims("slice_ma", recs, tmp_path / "s.json", registry=False, scale="default"))
    doc2 = claims.read_claims(claims.write_claims("pm_gpc", [claim(id="b-1", passed=False)], tmp_path / "p.json",
                                                  registry=False, scale="default"))
    trouble = {"n_files": 3, "n_other_scale": 1, "runs": [
        {"path": "results/slice/chains/x.nc", "scale": "default", "n_jitter": 2, "max_jitter": 1e-6,
         "n_not_converged": 0, "n_failed_estimates": 0, "where": ["sample_stats/n_jitter"]}]}
    page = claims.render_html([doc, doc2], figures={"pm_gpc": ["figures/pm_gpc/fig2.pdf"]}, trouble=trouble)
    # overall summary before the papers' tables: 3 claims, one of each verdict
    head = page[:page.index("<h2 id=")]
    assert "3 claims from 2 papers" in head and "1 PASS, 1 FAIL, 1 INCONCLUSIVE" in head
    # paper titles, not the internal keys
    title = {k: html.escape(v) for k, v in claims.PAPERS.items()}
    assert title["slice_ma"] in page and title["pm_gpc"] in page
    # the one-line verdict shows the interval against the threshold; the full measurement sits in a disclosure
    assert "ratio = 2.5 [1.2, 3.9]; claim: &ge; 2" in page and "<details>" in page
    assert "interval straddles 2" in page
    # a claim's own figures, else its paper's, linked relative to the page
    assert "href='../../figures/slice/fig3.pdf'" in page and "href='../../figures/pm_gpc/fig2.pdf'" in page
    # the run with trouble is listed and counted against its paper (results/slice -> slice_ma)
    assert "results/slice/chains/x.nc" in page and "1 from another scale skipped" in page
    row = page[page.index(title["slice_ma"]):].split("</tr>")[0]
    assert row.rstrip().endswith("<td class=warn>1</td>")


def test_trouble_scan_finds_jitter_and_non_convergence_and_skips_other_scales(tmp_path):
    import json as _json

    import numpy as np
    import xarray as xr

    from gpbayes_repro import io
    from gpbayes_repro import trouble

    res = tmp_path / "results"
    (res / "exp").mkdir(parents=True)
    clean = {"posterior": xr.Dataset({"psi": (("chain", "draw"), np.zeros((1, 3)))}),
             "sample_stats": xr.Dataset({"n_jitter": (("chain", "draw"), np.zeros((1, 3))),
                                         "max_jitter": (("chain", "draw"), np.zeros((1, 3)))})}
    io.write_inference_data(clean, res / "exp" / "clean.nc")
    bad = {"posterior": clean["posterior"],
           "sample_stats": xr.Dataset({"n_jitter": (("chain", "draw"), np.array([[0, 2, 1]])),
                                       "max_jitter": (("chain", "draw"), np.array([[0, 1e-6, 1e-8]]))},
                                      attrs={"warmup_n_not_converged": 3})}
    io.write_inference_data(bad, res / "exp" / "bad.nc",
                            root=xr.Dataset(attrs={"config": _json.dumps({"scale": "default"})}))
    other = xr.Dataset({"ep_n_failed_estimates": ((), 5)}, attrs={"config": _json.dumps({"scale": "smoke"})})
    io.write_netcdf_atomic(other, res / "exp" / "smoke_leftover.nc")
    out = trouble.scan(res, scale="default")
    assert out["n_files"] == 2 and out["n_other_scale"] == 1
    (rec,) = out["runs"]
    assert rec["path"].endswith("exp/bad.nc") and rec["n_jitter"] == 3 and rec["max_jitter"] == 1e-6
    assert rec["n_not_converged"] == 3 and rec["n_failed_estimates"] == 0
    # the leftover is flagged when its own scale is reported
    (rec,) = trouble.scan(res, scale="smoke")["runs"]
    assert rec["path"].endswith("smoke_leftover.nc") and rec["n_failed_estimates"] == 5
    assert trouble.summary(trouble.scan(res))["exp"]["runs"] == 2


def test_trouble_scan_counts_a_per_chain_warmup_variable_once(tmp_path):
    """``io.to_inference_groups`` copies the first chain's warm-up into attributes; the per-chain variable counts."""
    import numpy as np
    import xarray as xr

    from gpbayes_repro import io
    from gpbayes_repro import trouble

    groups = {"posterior": xr.Dataset({"psi": (("chain", "draw"), np.zeros((2, 3)))}),
              "sample_stats": xr.Dataset({"warmup_n_not_converged": (("chain",), np.array([4, 1]))},
                                         attrs={"warmup_n_not_converged": 4, "warmup_n_jitter": 2})}
    path = io.write_inference_data(groups, tmp_path / "chains.nc")
    rec = trouble.scan_file(path)
    assert rec["n_not_converged"] == 5  # 4 + 1 from the variable, not + 4 from the attribute
    assert rec["n_jitter"] == 2  # an attribute without a variable of its name still counts


@pytest.mark.parametrize("bad,needle", [
    (claim(passed="yes"), "must be a bool"),
    (claim(measured={}), "numbers behind the verdict"),
    (claim(measured={"v": float("nan")}), "is NaN"),
    ({"id": "q"}, "missing keys"),
    (claim(id="3_joint_hmc"), "one id style"),
    (claim(id="Claim-1"), "one id style"),
])
def test_invalid_claims_rejected(tmp_path, bad, needle):
    with pytest.raises(ValueError, match=needle):
        claims.write_claims("paper", [bad], tmp_path / "p.json", scale="smoke")
    assert not (tmp_path / "p.json").exists()


def test_duplicate_ids_rejected(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        claims.write_claims("paper", [claim(), claim()], tmp_path / "p.json", scale="smoke")


def test_infinite_measurement_rejected(tmp_path):
    with pytest.raises(ValueError, match="infinite"):
        claims.write_claims("paper", [claim(measured={"v": float("inf")})], tmp_path / "p.json", scale="smoke")


def test_three_outcomes_decided_on_the_interval():
    from gpbayes_repro.claims import decide

    assert decide(1.2, 3.0, 1.0, "above") == "PASS"
    assert decide(0.2, 0.9, 1.0, "above") == "FAIL"
    assert decide(0.8, 1.3, 1.0, "above") == "INCONCLUSIVE"
    assert decide(0.2, 0.9, 1.0, "below") == "PASS" and decide(1.1, 2, 1.0, "below") == "FAIL"
    assert decide(0.5, 1.5, (1 / 3, 3), "between") == "PASS"
    assert decide(4.0, 6.0, (1 / 3, 3), "between") == "FAIL"
    assert decide(2.0, 6.0, (1 / 3, 3), "between") == "INCONCLUSIVE"
    assert decide(float("nan"), 2.0, 1.0) == "INCONCLUSIVE"


def test_bootstrap_ratio_covers_the_true_ratio_at_about_its_level():
    import numpy as np

    from gpbayes_repro.claims import bootstrap_ratio

    rng = np.random.default_rng(0)
    hits, n_rep = 0, 300
    for _ in range(n_rep):
        a, b = rng.normal(3.0, 1.0, size=30), rng.normal(2.0, 1.0, size=30)
        est, lo, hi = bootstrap_ratio(a, b, rng, n_boot=1000)
        hits += lo <= 1.5 <= hi
    # percentile bootstrap of a ratio of means at n = 30: nominal 95 %, allow Monte Carlo error (se ~ 1.3 %)
    assert 0.88 <= hits / n_rep <= 0.99
    est, lo, hi = bootstrap_ratio([1.0], [2.0, 3.0], rng)
    assert est == 0.4 and np.isnan(lo) and np.isnan(hi)


def test_convergence_gate_and_inconclusive_records_need_a_reason():
    import pytest

    from gpbayes_repro.claims import convergence_gate, validate_claim

    assert convergence_gate([1.001, 1.02], [500, 300]) is None
    assert "R-hat 1.2" in convergence_gate([1.2], [500])
    assert "ESS 50" in convergence_gate([1.0], [50])
    base = {"id": "x", "statement": "s", "measured": {"a": 1.0}, "paper": None}
    assert validate_claim({**base, "verdict": "PASS"})["passed"] is True
    assert validate_claim({**base, "passed": False})["verdict"] == "FAIL"
    with pytest.raises(ValueError, match="reason"):
        validate_claim({**base, "verdict": "INCONCLUSIVE"})
    with pytest.raises(ValueError, match="contradicts"):
        validate_claim({**base, "verdict": "FAIL", "passed": True})


def test_verdict_table_puts_default_and_paper_scale_verdicts_side_by_side(tmp_path):
    from gpbayes_repro import verdict_table
    from gpbayes_repro.claims import write_claims

    claim = {"id": "housing-ess", "statement": "ESS > 100", "measured": {"min_ess": 577.7}, "paper": None,
             "verdict": "PASS"}
    gate = {"id": "claim-1", "statement": "A beats B", "measured": {"x": 1.0}, "paper": None,
            "verdict": "INCONCLUSIVE", "reason": "not converged",
            "interval": {"quantity": "ratio", "estimate": 1.2, "lo": 0.9, "hi": 1.5, "threshold": 1.0, "side": "above"}}
    write_claims("foundation", [claim], tmp_path / "default" / "foundation.json", registry=False, scale="default")
    write_claims("gplvm", [gate], tmp_path / "default" / "gplvm.json", registry=False, scale="default")
    write_claims("amis", [dict(claim, id="claim-1")], tmp_path / "default" / "amis.json", registry=False, scale="default")
    write_claims("foundation", [dict(claim, measured={"min_ess": 1633.0})], tmp_path / "paper" / "foundation.json",
                 registry=False, scale="paper")
    table = verdict_table.rows(verdict_table.load_scale(tmp_path / "default", "default"),
                               verdict_table.load_scale(tmp_path / "paper", "paper"))
    assert [r[:2] for r in table] == [("foundation", "housing-ess"), ("amis", "claim-1"), ("gplvm", "claim-1")]
    assert table[0][2] == "**PASS** min_ess = 577.7" and table[0][3] == "**PASS** min_ess = 1633"
    assert table[1][3].startswith("cluster only (≈ 800 CPU-h")
    assert table[2][2] == "**INCONCLUSIVE** ratio = 1.2 [0.9, 1.5]; claim: ≥ 1"
    assert table[2][3] == f"cluster only (≈ {verdict_table.PAPER_SCALE_CPU_HOURS['gplvm']:g} CPU-h estimated)"
    md = verdict_table.to_markdown(table)
    assert md.count("\n") == 2 + len(table) + 2 and "Default scale: 2 PASS, 0 FAIL, 1 INCONCLUSIVE of 3." in md
    # an earlier run beside (a changed encoding names both verdicts) and the paper's own numbers
    write_claims("gplvm", [dict(gate, verdict="FAIL", reason=None, paper_verdict={"verdict": "PASS",
                                                                                  "detail": "8 of 8"})],
                 tmp_path / "after" / "gplvm.json", registry=False, scale="default")
    both = verdict_table.rows(verdict_table.load_scale(tmp_path / "after", "default"), {},
                              verdict_table.load_scale(tmp_path / "default", "default"))
    assert both == [("gplvm", "claim-1", "**INCONCLUSIVE** ratio = 1.2 [0.9, 1.5]; claim: ≥ 1",
                     "**FAIL** ratio = 1.2 [0.9, 1.5]; claim: ≥ 1", both[0][4], "**PASS** 8 of 8")]
    assert "default scale, before" in verdict_table.to_markdown(both)
    # a smoke run's leftovers do not pass for default verdicts
    write_claims("slice_ma", [claim], tmp_path / "default" / "slice_ma.json", registry=False, scale="smoke")
    with pytest.raises(ValueError, match="slice_ma.json: written at scale='smoke'"):
        verdict_table.load_scale(tmp_path / "default", "default")


def test_claims_page_shows_the_decide_tier_and_strikes_it_through_when_stale(tmp_path):
    rec = {"id": "c-1", "statement": "s", "measured": {"v": 1.0}, "paper": None, "verdict": "INCONCLUSIVE",
           "reason": "r", "kind": "claim", "final_state": {"state": "NEEDS_COMPUTE", "detail": "12 chains"}}
    doc = {"paper": "pm_gpc", "scale": "default", "claims": [rec]}
    dec = {"pm_gpc": {"paper": "pm_gpc", "scale": "decide",
                      "claims": [dict(rec, verdict="PASS", reason=None,
                                      final_state={"state": "PASS", "detail": "decided"})]}}
    page = claims.render_html([doc], decide=dec, decide_note="computed from the current code")
    assert "<th>decide tier</th>" in page and "<td class='PASS'><b>PASS</b>" in page
    page = claims.render_html([doc], decide=dec, decide_note="stale: changed since -- code (1 files: src/x.py)")
    assert "<s>PASS</s>" in page and "stale: changed since" in page and "<td class='PASS'>" not in page
