import pandas as pd
import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake):
    p, inp = snakemake.params, snakemake.input
    loo, n_chains = {}, {}
    for f in inp.predictive:
        ev = xr.load_dataset(f)
        case = ev.attrs["case"]
        # claims 1-2: delete-one-chain jackknife t intervals (issue 26 s.1; was a percentile bootstrap)
        loo[case] = gplvm.marginalised_leave_one_out(ev)
        n_chains[case] = int(ev.sizes["chain"])
    records = gplvm.gplvm_claims(pd.read_csv(inp.table), pd.read_csv(inp.shape), p.claims, None, n_chains, loo=loo,
                                 chain_sets=pd.read_csv(inp.chain_sets))
    claims.write_claims("gplvm", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims},
                        seed=p.seed)
