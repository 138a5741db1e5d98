"""The paper registry (issue 26 section 6): one record per paper, read by the claims page, the verdict
table and the workflow; a record cannot be half added."""

import re
from pathlib import Path

import yaml

from gpbayes_repro import claims, papers, verdict_table

REPO = Path(__file__).resolve().parents[1]


def test_every_record_has_its_rules_config_and_claims_target():
    snakefile = (REPO / "workflow" / "Snakefile").read_text()
    included = set(re.findall(r'include: "rules/([a-z_]+)\.smk"', snakefile))
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    schema = yaml.safe_load((REPO / "src" / "gpbayes_repro" / "schemas" / "config.schema.yaml").read_text())
    keys = [p.key for p in papers.REGISTRY]
    assert len(set(keys)) == len(keys)
    for p in papers.REGISTRY:
        assert p.rules in included, f"{p.key}: workflow/rules/{p.rules}.smk is not included by the Snakefile"
        assert p.config in cfg and p.config in schema["properties"], f"{p.key}: config block {p.config!r}"
        rules = (REPO / "workflow" / "rules" / f"{p.rules}.smk").read_text()
        assert papers.claims_target(p) in rules, f"{p.key}: its rules file does not write {papers.claims_target(p)}"
        assert p.paper_scale_cpu_hours > 0 and p.title


def test_the_claims_page_and_verdict_table_read_the_registry():
    assert list(claims.PAPERS) == [p.key for p in papers.REGISTRY]
    assert claims._DIRS["slice_ma"] == ("slice",)
    assert verdict_table.PAPER_SCALE_CPU_HOURS == {p.key: p.paper_scale_cpu_hours for p in papers.REGISTRY}
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert "papers.claims_target(p) for p in papers.REGISTRY" in common
