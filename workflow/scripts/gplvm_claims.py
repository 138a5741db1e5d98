import pandas as pd
import xarray as xr

from gpbayes import rng as rngmod
from gpbayes_repro import claims
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.experiments import gplvm_ml_restarts as R
from gpbayes_repro.workflow import job

with job(snakemake):
    p, inp = snakemake.params, snakemake.input
    boot, n_chains = {}, {}
    for f in inp.predictive:
        ev = xr.load_dataset(f)
        case = ev.attrs["case"]
        boot[case] = R.marginalised_bootstrap(ev, rngmod.stream(p.seed, "gplvm", case, "claims_bootstrap"),
                                              int(p.claims["n_boot"]))
        n_chains[case] = int(ev.sizes["chain"])
    records = gplvm.gplvm_claims(pd.read_csv(inp.table), pd.read_csv(inp.shape), p.claims, boot, n_chains)
    claims.write_claims("gplvm", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims},
                        seed=p.seed)
