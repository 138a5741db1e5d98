import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    ds = pm_gpc_capacity.collect_splits([xr.load_dataset(f) for f in snakemake.input],
                                        dataset=snakemake.wildcards.dataset)
    ds.attrs.update(io.provenance({"scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
