import json

from gpbayes_repro import io
from gpbayes_repro import claims, trouble
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    # every NetCDF under results/ (all of them exist once every paper's claims do); other scales' leftovers skipped
    scanned = trouble.scan("results", scale=p.scale)
    page = claims.render_html([claims.read_claims(path) for path in snakemake.input], figures=p.figures,
                              trouble=scanned, page_dir="results/claims")
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(page)
    with io.atomic_path(snakemake.output.trouble) as tmp:
        tmp.write_text(json.dumps({**scanned, "by_experiment": trouble.summary(scanned)}, indent=2) + "\n")
