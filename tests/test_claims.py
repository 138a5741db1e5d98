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
    assert page.count("PASS</td>") == 1 and page.count("FAIL</td>") == 1 and "v = 1" in page


@pytest.mark.parametrize("bad,needle", [
    (claim(passed="yes"), "must be a bool"),
    (claim(measured={}), "numbers behind the verdict"),
    (claim(measured={"v": float("nan")}), "is NaN"),
    ({"id": "q"}, "missing keys"),
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
