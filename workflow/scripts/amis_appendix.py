import pandas as pd

from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake):
    wc = snakemake.wildcards
    amis.appendix(pd.read_csv(snakemake.input.curves), pd.read_csv(snakemake.input.refs), wc.dataset, wc.kernel,
                  snakemake.output[0], scale=snakemake.params.scale)
