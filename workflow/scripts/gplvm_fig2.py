import xarray as xr

from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake):
    gplvm.fig2_figure(xr.load_dataset(snakemake.input[0]), snakemake.output[0], feature=1,
                      scale=snakemake.params.scale)
