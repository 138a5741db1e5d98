import xarray as xr

from gpbayes.experiments import gplvm
from gpbayes.workflow import job

with job(snakemake):
    gplvm.fig2_figure(xr.load_dataset(snakemake.input[0]), snakemake.output[0], feature=1,
                      scale=snakemake.params.scale)
