import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    fit = sparse_mcmc.fit_gaussian(xr.load_dataset(snakemake.input[0]), problem=wc.problem, kernel=wc.kernel,
                                   M=int(wc.M), cfg=p.cfg, maxiter=p.maxiter, seed=p.seed)
    fit.attrs.update(io.provenance({"sparse_mcmc": p.cfg, "svgp_maxiter": p.maxiter, "scale": p.scale}, p.seed))
    log.info("ELBO %.4f (Z fixed: %.4f), %d iterations, %.1f s, psi %s", fit.attrs["elbo"],
             fit.attrs["elbo_fixed_Z"], fit.attrs["n_iter"], fit.attrs["wall_time"], fit["psi"].values)
    io.write_netcdf_atomic(fit, snakemake.output[0])
