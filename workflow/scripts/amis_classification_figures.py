import pandas as pd

from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake):
    out, scale = snakemake.output, snakemake.params.scale
    cur = pd.read_csv(snakemake.input.curves)
    refs = pd.read_csv(snakemake.input.refs)
    amis.fig2(cur, out.fig2, ref_table=refs, scale=scale)
    amis.fig_nimp(cur, "rbf", out.fig9, ref_table=refs, scale=scale)
    amis.fig_nimp(cur, "ard", out.fig10, ref_table=refs, scale=scale)
