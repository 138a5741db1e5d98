import pandas as pd
import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    zero_bins = {}
    for f in snakemake.input.data:
        attrs = xr.load_dataset(f).attrs
        if "n_zero_bins" in attrs:
            zero_bins[attrs["name"]] = int(attrs["n_zero_bins"])
    records = slice_ma.fig3_claims(pd.read_csv(snakemake.input.table), zero_bins, p.claims,
                                   chains=pd.read_csv(snakemake.input.chains), seed=p.seed,
                                   convergence=pd.read_csv(snakemake.input.convergence))
    claims.write_claims("slice_ma", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims},
                        seed=p.seed)
