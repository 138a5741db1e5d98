import pandas as pd

from gpbayes_repro.experiments import gplvm_ml_restarts as R
from gpbayes_repro.workflow import job

with job(snakemake):
    R.restart_figure(pd.read_csv(snakemake.input.restarts), pd.read_csv(snakemake.input.table), snakemake.output[0],
                     scale=snakemake.params.scale)
