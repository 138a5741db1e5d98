import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    records = pm_gpc_capacity.capacity_claims([xr.load_dataset(f) for f in snakemake.input])
    claims.write_claims("pm_gpc_capacity", records, snakemake.output[0], scale=p.scale, config=p.cfg, seed=p.seed)
