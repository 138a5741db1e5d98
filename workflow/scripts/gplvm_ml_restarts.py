import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm_ml_restarts as R
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, inp = snakemake.params, snakemake.input
    table = R.run_restarts(xr.load_dataset(inp.data), xr.load_dataset(inp.ml), p.cfg, p.settings, p.seed, log=log)
    log.info("restarts\n%s", table.to_string())
    with io.atomic_path(snakemake.output[0]) as tmp:
        table.to_csv(tmp, index=False, float_format="%.8g")
