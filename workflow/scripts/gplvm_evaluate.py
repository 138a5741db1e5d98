import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, inp, out = snakemake.params, snakemake.input, snakemake.output
    ds, ml = xr.load_dataset(inp.data), xr.load_dataset(inp.ml)
    chains = gplvm.merge_chains([io.read_inference_data(f) for f in inp.chains])
    ev = gplvm.evaluate_case(ds, ml, chains, p.cfg, p.settings, p.seed)
    log.info("NMSE (%%) per feature [marginalised, ml]\n%s", ev["nmse"].values)
    ev.attrs.update(io.provenance({"gplvm": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ev, out.density)
    shape = gplvm.shape_summary(chains, ml, ds.attrs["case"])
    log.info("posterior shape\n%s", shape.to_string())
    with io.atomic_path(out.shape) as tmp:
        shape.to_csv(tmp, index=False, float_format="%.6g")
