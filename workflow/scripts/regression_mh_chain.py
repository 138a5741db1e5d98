import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import regression_mh
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    chain = int(snakemake.wildcards.chain)
    ds = xr.load_dataset(snakemake.input.data)
    ml = xr.load_dataset(snakemake.input.ml)
    gen = rng.stream(p.seed, "regression_mh", snakemake.wildcards.dataset, "chain", chain)
    groups = regression_mh.run_chain(ds, ml, p.exp, p.settings, gen, chain)
    attrs = io.provenance({"experiment": p.exp, "settings": p.settings, "scale": p.scale}, p.seed,
                          dataset=snakemake.wildcards.dataset, chain=chain)
    for g in groups.values():
        g.attrs.update(attrs)
    log.info("acceptance %.3f", float(groups["sample_stats"]["accepted"].mean()))
    io.write_inference_data(groups, snakemake.output[0])
