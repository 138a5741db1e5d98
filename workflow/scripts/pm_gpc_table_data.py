from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake):
    p, wc = snakemake.params, snakemake.wildcards
    n, d = int(wc.n), int(wc.d)
    gen = rng.stream(p.seed, "pm_gpc", "tables", "data", n, d)
    ds = pm_gpc_mcmc.simulate_table_data(n, d, p.tables["truth"], gen)
    ds.attrs.update(io.provenance(p.tables, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
