import xarray as xr

from gpbayes_repro import claims
from gpbayes_repro.experiments import regression_mh
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    records = []
    for name, path in zip(p.datasets, snakemake.input):
        records += regression_mh.evaluate_claims(xr.load_dataset(path), p.exp, p.scale, name)
    claims.write_claims("foundation", records, snakemake.output[0], scale=p.scale, config=p.exp, seed=p.seed)
