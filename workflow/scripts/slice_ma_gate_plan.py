import json

import pandas as pd

from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, i = snakemake.params, snakemake.input
    records = slice_ma.fig3_claims(pd.read_csv(i.table), slice_ma.zero_bins_of(i.data), p.claims,
                                   chains=pd.read_csv(i.chains), seed=p.seed, convergence=pd.read_csv(i.convergence))
    plan = slice_ma.gate_plan(records)
    log.info("chains to run until converged: %s", plan["extend"] or "none")
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(json.dumps(plan, indent=2) + "\n")
