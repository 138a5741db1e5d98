import xarray as xr

from gpbayes import claims
from gpbayes.experiments import pm_gpc_capacity
from gpbayes.workflow import job

with job(snakemake):
    p = snakemake.params
    records = pm_gpc_capacity.capacity_claims([xr.load_dataset(f) for f in snakemake.input])
    claims.write_claims("pm_gpc_capacity", records, snakemake.output[0], scale=p.scale, config=p.cfg, seed=p.seed)
