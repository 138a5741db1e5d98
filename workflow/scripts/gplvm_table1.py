import pandas as pd
import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.experiments import gplvm_ml_restarts as R
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    inp, out = snakemake.input, snakemake.output
    paper = pd.read_csv(inp.paper, comment="#")
    restarts = pd.concat([pd.read_csv(f) for f in inp.restarts], ignore_index=True)
    table = gplvm.table1([xr.load_dataset(f) for f in inp.predictive], paper, R.restart_spread(restarts))
    log.info("Table 1\n%s", table.to_string())
    shape = pd.concat([pd.read_csv(f) for f in inp.shape], ignore_index=True)
    sets = pd.concat([pd.read_csv(f) for f in inp.chain_sets], ignore_index=True)
    log.info("chain sets per case\n%s", sets.to_string())
    for frame, path in ((table, out.table), (shape, out.shape), (restarts, out.restarts), (sets, out.chain_sets)):
        with io.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
