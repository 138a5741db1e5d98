import xarray as xr

from gpbayes_repro import plots
from gpbayes_repro.workflow import job

with job(snakemake):
    summaries = [xr.load_dataset(path) for path in snakemake.input]
    plots.pm_gpc_fig34(summaries, snakemake.output[0], scale=snakemake.params.scale)
