import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    ds = xr.load_dataset(snakemake.input[0])
    gen = rng.stream(p.seed, "pm_gpc", "real", "subset", snakemake.wildcards.dataset)
    sub = pm_gpc_mcmc.balanced_subset(ds, p.settings["max_n"], gen)
    log.info("%s: %d of %d rows", snakemake.wildcards.dataset, sub.sizes["n"], ds.sizes["n"])
    io.write_netcdf_atomic(sub, snakemake.output[0])
