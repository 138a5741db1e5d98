import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    e = snakemake.params.equivalence
    table = sparse_mcmc.equivalence_check(xr.load_dataset(snakemake.input[0]), n_points=e["n_points"],
                                          n_checks=e["n_checks"], noise_variance=e["noise_variance"],
                                          seed=snakemake.params.seed)
    log.info("max |log q* - full-GP joint| = %.3g", table["abs_diff"].max())
    with io.atomic_path(snakemake.output[0]) as tmp:
        table.to_csv(tmp, index=False, float_format="%.17g")
