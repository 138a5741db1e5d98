from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    n = int(snakemake.wildcards.n)
    ds = pm_gpc.fig2_data(p.fig2, n, rng.stream(p.seed, "pm_gpc", "fig2", "data", n))
    ds.attrs.update(io.provenance(p.fig2, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
