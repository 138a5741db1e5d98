import json

import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import pm_gpc, pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    records = pm_gpc.fig2_claims(xr.load_dataset(snakemake.input.fig2))
    with open(snakemake.input.tables) as fh:
        records += json.load(fh)
    records += pm_gpc_mcmc.fig34_claims([xr.load_dataset(f) for f in snakemake.input.real])
    records += claims.read_claims(snakemake.input.capacity)["claims"]
    claims.write_claims("pm_gpc", records, snakemake.output[0], scale=p.scale, config=p.cfg, seed=p.seed)
