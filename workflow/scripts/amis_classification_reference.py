import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    ds = amis.classification_reference(xr.load_dataset(snakemake.input.data), xr.load_dataset(snakemake.input.setup),
                                       kernel=wc.kernel, cfg=p.cfg, settings=p.settings, seed=p.seed)
    log.info("reference E||theta|| = %.6g, ESS %.1f of %d estimates, %.4f CPU-s per estimate",
             ds.attrs["reference"], ds.attrs["final_ess"], ds.attrs["n_estimates"],
             ds.attrs["target_cpu_seconds_per_estimate"])
    ds.attrs.update(io.provenance({"amis": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
