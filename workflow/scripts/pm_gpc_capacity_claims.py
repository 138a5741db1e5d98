import json
from pathlib import Path

import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    records = pm_gpc_capacity.capacity_claims([xr.load_dataset(f) for f in snakemake.input.scores], p.looks)
    seq = json.loads(Path(snakemake.input.seq).read_text())
    for rec in records:
        if rec["id"] == seq["claim"] and "sequential" in rec["measured"]:
            rec["measured"]["sequential"]["stopped"] = seq["action"]  # decided / cap / futile (the look's record)
    claims.write_claims("pm_gpc_capacity", records, snakemake.output[0], scale=p.scale, config=p.cfg, seed=p.seed)
