import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake):
    p, wc = snakemake.params, snakemake.wildcards
    ds = amis.setup(xr.load_dataset(snakemake.input[0]), wc.kernel, p.cfg, p.settings, p.seed)
    ds.attrs.update(io.provenance({"amis": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
