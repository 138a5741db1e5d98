import xarray as xr

from gpbayes import plots
from gpbayes.workflow import job

with job(snakemake):
    summaries = [xr.load_dataset(path) for path in snakemake.input]
    plots.pm_gpc_fig34(summaries, snakemake.output[0], scale=snakemake.params.scale)
