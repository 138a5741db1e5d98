from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    ds = gplvm.simulate_case(snakemake.wildcards.case, p.simulation, p.seed)
    ds.attrs.update(io.provenance({"simulation": p.simulation, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ds, snakemake.output[0])
