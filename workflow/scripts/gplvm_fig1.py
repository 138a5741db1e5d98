import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake):
    inp = snakemake.input
    mls = {ds.attrs["case"]: ds for ds in (xr.load_dataset(f) for f in inp.ml)}
    parts = {}
    for f in inp.chains:
        g = io.read_inference_data(f)
        parts.setdefault(g["posterior"].attrs["case"], []).append(g)
    chains = {case: gplvm.merge_chains(p) for case, p in parts.items()}
    gplvm.fig1_figure(chains, mls, snakemake.output[0], scale=snakemake.params.scale)
