import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    ds = xr.load_dataset(snakemake.input[0])
    gen = rng.stream(p.seed, "pm_gpc", "tables", "proposal", ds.attrs["name"], wc.kernel)
    prop = pm_gpc_mcmc.table_proposal(ds, wc.kernel, p.pmg, p.settings, gen)
    log.info("tuning acceptance %.3f", prop.attrs["tune_acceptance"])
    io.write_netcdf_atomic(prop, snakemake.output[0])
