import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    ml = gplvm.fit_ml(xr.load_dataset(snakemake.input[0]), p.cfg, p.settings, p.seed)
    log.info("ML estimate %s, bound %.4f, restarts %s", dict(zip(ml["param"].values, ml["value"].values)),
             ml.attrs["bound"], ml["restart_bounds"].values)
    ml.attrs.update(io.provenance({"gplvm": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ml, snakemake.output[0])
