import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, problem = snakemake.params, snakemake.wildcards.problem
    ds = sparse_mcmc.problem_data(problem, p.settings, p.cfg, p.seed, xr.load_dataset(snakemake.input[0]))
    ds.attrs.update(io.provenance({"sparse_mcmc": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    log.info("%s: X %s, %d held out, stand-in %s", problem, ds["X"].shape, int(ds["test"].sum()),
             ds.attrs["stand_in"])
    io.write_netcdf_atomic(ds, snakemake.output[0])
