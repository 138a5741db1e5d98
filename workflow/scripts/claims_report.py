from gpbayes import io
from gpbayes_repro import claims
from gpbayes_repro.workflow import job

with job(snakemake):
    page = claims.render_html([claims.read_claims(path) for path in snakemake.input])
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(page)
