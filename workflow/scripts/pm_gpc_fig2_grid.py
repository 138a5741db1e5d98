import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    n = int(snakemake.wildcards.n)
    data = xr.load_dataset(snakemake.input[0])
    gen = rng.stream(p.seed, "pm_gpc", "fig2", "grid", n)
    ds = pm_gpc.fig2_grid(data, p.fig2, p.settings, ep_mode=p.ep_mode, nugget=p.nugget, rng=gen)
    ds.attrs.update(io.provenance({"fig2": p.fig2, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
