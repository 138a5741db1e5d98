import json
from pathlib import Path

from gpbayes_repro import io
from gpbayes_repro import claims, trouble
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    # every NetCDF under results/ (all of them exist once every paper's claims do); other scales' leftovers skipped
    scanned = trouble.scan("results", scale=p.scale)
    # the committed decide tier (issue 32 s.6): shown while what it was computed from still holds, else as stale
    decide, note = {}, None
    if p.claims_scale == "default" and Path(p.decide_dir).is_dir():
        from gpbayes_repro import upstream
        from gpbayes_repro.verdict_table import load_scale

        decide = load_scale(p.decide_dir, "decide")
        note = upstream.describe(upstream.compare(p.decide_dir)) if decide else None
    page = claims.render_html([claims.read_claims(path) for path in snakemake.input], figures=p.figures,
                              trouble=scanned, page_dir="results/claims", decide=decide, decide_note=note)
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(page)
    with io.atomic_path(snakemake.output.trouble) as tmp:
        tmp.write_text(json.dumps({**scanned, "by_experiment": trouble.summary(scanned)}, indent=2) + "\n")
