import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    by_scheme = {}
    for path in snakemake.input:
        g = io.read_inference_data(path)
        by_scheme.setdefault(g["posterior"].attrs["scheme"], []).append(g)
    parts = []
    for scheme in p.schemes:
        merged = io.concat_chains(by_scheme[scheme])
        s = pm_gpc_mcmc.fig34_summary(merged, p.settings["checkpoints"])
        parts.append(s.expand_dims(scheme=[scheme]))
    out = xr.concat(parts, dim="scheme")
    attrs = by_scheme[p.schemes[0]][0]["posterior"].attrs
    out.attrs.update(dataset=attrs["dataset"], n=attrs["n"], d=attrs["d"], stand_in=attrs["stand_in"])
    io.write_netcdf_atomic(out, snakemake.output[0])
