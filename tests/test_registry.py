"""The claims registry (gpbayes_repro.registry): quotes verbatim, thresholds as registered, histories kept."""

import copy
import json
from pathlib import Path

import pytest

from gpbayes_repro import claims, papers, registry, upstream

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
COMMITTED = [ROOT / "benchmarks" / "results" / d for d in ("default_scale", "decide_scale")]


def test_every_paper_has_a_registry_and_every_file_is_well_formed():
    docs = registry.load_all()
    assert set(docs) == {p.key for p in papers.REGISTRY}
    for key, doc in docs.items():
        assert doc["paper"] == key
        assert registry.validate(doc, key) == []


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' text (shared/seeds) is not beside this clone")
def test_every_quote_is_verbatim_in_the_papers_text():
    for key, doc in registry.load_all().items():
        if doc.get("seed_file") is None:
            assert all(c["kind"] == "check" for c in doc["claims"]), key
            continue
        text = (SEEDS / doc["seed_file"]).read_text()
        assert registry.validate(doc, key, seed_text=text) == [], key


def test_a_claim_without_a_quote_or_a_bad_history_is_refused():
    doc = copy.deepcopy(registry.load("pm_gpc"))
    doc["claims"][0]["quote"] = None
    doc["claims"][1]["history"] = [{"commit": "abc", "date": "2026-11-27"}]
    doc["claims"][2]["threshold_source"] = "we chose it"
    problems = registry.validate(doc, "pm_gpc")
    assert any("missing quote" in p for p in problems)
    assert any("history entry lacks" in p for p in problems)
    assert any("threshold_source must start" in p for p in problems)
    # a quote that is not in the paper is caught
    doc = copy.deepcopy(registry.load("pm_gpc"))
    doc["claims"][0]["quote"] = "EP is always better than LA."
    assert any("not verbatim" in p for p in registry.validate(doc, "pm_gpc", seed_text="nothing like it"))


def _committed_docs():
    for d in COMMITTED:
        for path in sorted(d.glob("*.json")) if d.is_dir() else []:
            doc = json.loads(path.read_text())
            if "claims" in doc:  # not UPSTREAM.json
                yield path, doc


def test_committed_claims_agree_with_the_registry():
    """Every committed record has its registry entry; a file written under the registry (it carries final
    states) also has the registered threshold and side, a quote for every claim and a final state for every
    record.  A file written before the registry (no final states), or before its paper's registry last changed
    (its UPSTREAM.json key names the registry file), is held only to its ids, and the generated summaries say
    it is pre-registry or stale (see the drift test)."""
    n = 0
    for path, doc in _committed_docs():
        # a file written under an earlier version of its paper's registry (the registry changed since, as its
        # UPSTREAM.json key shows; the claims page strikes such a file through) is held to its ids only
        moved = f"src/gpbayes_repro/registry/{doc['paper']}.yaml" in \
            upstream.compare(path.parent, ROOT).get("changed", {}).get("code", [])
        under_registry = "final_states" in doc and not moved
        for rec in doc["claims"]:
            rec = claims.validate_claim(dict(rec))
            if not under_registry:
                assert registry.entry(doc["paper"], rec["id"]) is not None, f"{path}: {rec['id']} not registered"
                n += 1
                continue
            out = registry.annotate(doc["paper"], rec)  # raises on a threshold or side that moved
            if out["kind"] == "claim":
                assert out.get("quote", {}).get("text"), f"{path}: {rec['id']} has no quote"
            assert rec.get("final_state", {}).get("state"), f"{path}: {rec['id']} has no final state"
            n += 1
    assert n >= 25


def test_a_threshold_moved_in_the_code_is_refused():
    ent = registry.entry("pm_gpc", "table1-ep-ge-la")
    rec = {"id": "table1-ep-ge-la", "statement": "s", "measured": {"x": 1.0}, "paper": None,
           "verdict": "INCONCLUSIVE", "reason": "r",
           "interval": {"estimate": 1.1, "lo": 0.9, "hi": 1.3, "threshold": ent["threshold"] + 0.1,
                        "side": ent["side"]}}
    with pytest.raises(registry.RegistryError, match="differs from the registry"):
        registry.annotate("pm_gpc", rec)
    with pytest.raises(registry.RegistryError, match="not in the registry"):
        registry.annotate("pm_gpc", dict(rec, id="no-such-claim"))


def test_an_encoding_change_needs_its_history():
    empty = [(k, c["id"]) for k, d in registry.load_all().items() for c in d["claims"] if not c["history"]]
    assert empty, "no registry record without a history left to test with"
    paper, cid = empty[0]
    rec = {"id": cid, "statement": "s", "measured": {"x": 1.0}, "paper": None, "verdict": "PASS",
           "encoding_change": "threshold 2 -> 3 after the run"}
    with pytest.raises(registry.RegistryError, match="history does not record"):
        registry.annotate(paper, rec)


def test_write_claims_adds_final_states_and_counts_claims_apart_from_checks(tmp_path):
    path = ROOT / "benchmarks" / "results" / "default_scale" / "foundation.json"
    doc = json.loads(path.read_text())
    out = claims.read_claims(claims.write_claims("foundation", doc["claims"], tmp_path / "f.json", scale="default"))
    assert out["n_checks"] == len(doc["claims"]) and sum(out["final_states"].values()) == 0
    assert all(c["final_state"]["state"] in ("PASS", "FAIL") for c in out["claims"])


def test_readme_and_verdicts_page_counts_are_generated_from_the_committed_claims():
    """One source for the numbers: README.md's and docs/verdicts.md's claim counts and table are what
    `python -m gpbayes_repro.verdict_table --update` makes of the committed claims files (no drift)."""
    from gpbayes_repro import verdict_table

    for (path, block), text in verdict_table.generated_blocks(ROOT).items():
        assert not verdict_table.update_file(path, text, check=True, block=block), (
            f"{path} ({block}) is out of date: run python -m gpbayes_repro.verdict_table --update")
