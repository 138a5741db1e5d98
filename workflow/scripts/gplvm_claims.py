import pandas as pd

from gpbayes_repro import claims
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake):
    p, inp = snakemake.params, snakemake.input
    records = gplvm.gplvm_claims(pd.read_csv(inp.table), pd.read_csv(inp.shape), p.claims)
    claims.write_claims("gplvm", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims},
                        seed=p.seed)
