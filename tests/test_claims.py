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
