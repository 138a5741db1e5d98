import xarray as xr

from gpbayes import claims
from gpbayes.experiments import regression_mh
from gpbayes.workflow import job

with job(snakemake):
    p = snakemake.params
    records = []
    for name, path in zip(p.datasets, snakemake.input):
        records += regression_mh.evaluate_claims(xr.load_dataset(path), p.exp, p.scale, name)
    claims.write_claims("foundation", records, snakemake.output[0], scale=p.scale, config=p.exp, seed=p.seed)
