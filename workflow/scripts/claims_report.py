from gpbayes import claims, io
from gpbayes.workflow import job

with job(snakemake):
    page = claims.render_html([claims.read_claims(path) for path in snakemake.input])
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(page)
