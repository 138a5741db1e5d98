import pandas as pd

from gpbayes_repro import claims
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake):
    p, inp = snakemake.params, snakemake.input
    table = pd.concat([pd.read_csv(f) for f in inp.predict], ignore_index=True)
    records = sparse_mcmc.sparse_claims(pd.read_csv(inp.equivalence), pd.read_csv(inp.sweep),
                                        table[table["study"] == "coal"], pd.read_csv(inp.psrf), p.claims)
    claims.write_claims("sparse_mcmc", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims},
                        seed=p.seed)
