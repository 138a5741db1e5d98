import xarray as xr

from gpbayes import claims
from gpbayes.experiments import pm_gpc
from gpbayes.workflow import job

with job(snakemake):
    p = snakemake.params
    records = pm_gpc.fig2_claims(xr.load_dataset(snakemake.input.fig2))
    claims.write_claims("pm_gpc", records, snakemake.output[0], scale=p.scale, config=p.cfg, seed=p.seed)
