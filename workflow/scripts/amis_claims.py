import json

import pandas as pd
import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake):
    p, inp = snakemake.params, snakemake.input
    refs = pd.read_csv(inp.refs).to_dict("records")
    records = amis.claims(pd.read_csv(inp.curves), pd.read_csv(inp.reach), refs, p.claims,
                          runs=[xr.load_dataset(f) for f in inp.runs], chains=amis.chain_convergence(inp.runs), seed=p.seed)
    confirm = [json.loads(open(f).read()) for f in inp.confirm]
    if confirm:  # the decide scale's confirmatory blocks (issue 32)
        records = amis.apply_confirmatory(records, confirm)
    claims.write_claims("amis", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims}, seed=p.seed)
