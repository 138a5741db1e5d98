import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import regression_mh
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    ds = xr.load_dataset(snakemake.input[0])
    gen = rng.stream(p.seed, "regression_mh", snakemake.wildcards.dataset, "ml")
    ml = regression_mh.fit_ml(ds, p.exp, p.settings["ml_restarts"], gen)
    ml.attrs.update(io.provenance(p.exp, p.seed))
    log.info("type-II ML log marginal %.3f", float(ml["log_marginal_ml"]))
    io.write_netcdf_atomic(ml, snakemake.output[0])
