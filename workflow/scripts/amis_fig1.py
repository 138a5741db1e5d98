import pandas as pd

from gpbayes.experiments import amis
from gpbayes.workflow import job

with job(snakemake):
    amis.fig1(pd.read_csv(snakemake.input.curves), pd.read_csv(snakemake.input.refs), snakemake.output[0],
              scale=snakemake.params.scale)
