import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, name = snakemake.params, snakemake.wildcards.dataset
    source = xr.load_dataset(snakemake.input[0]) if len(snakemake.input) else None
    ds = slice_ma.problem_data(name, p.cfg, p.settings, p.seed, source)
    ds.attrs.update(io.provenance({"slice_ma": p.cfg, "scale": p.scale}, p.seed))
    log.info("%s: X %s, y sum %.4g, zero bins %s", name, ds["X"].shape, float(ds["y"].sum()),
             ds.attrs.get("n_zero_bins", "-"))
    io.write_netcdf_atomic(ds, snakemake.output[0])
