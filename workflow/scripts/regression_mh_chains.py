import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import regression_mh
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    ds = xr.load_dataset(snakemake.input.data)
    ml = xr.load_dataset(snakemake.input.ml)
    gens = [rng.stream(p.seed, "regression_mh", snakemake.wildcards.dataset, "chain", c)
            for c in range(len(snakemake.output))]
    stop = regression_mh.stop_rule(p.exp, p.settings)
    parts = regression_mh.run_chains(ds, ml, p.exp, p.settings, gens, stop)
    for chain, (groups, path) in enumerate(zip(parts, snakemake.output)):
        attrs = io.provenance({"experiment": p.exp, "settings": p.settings, "scale": p.scale}, p.seed,
                              dataset=snakemake.wildcards.dataset, chain=chain)
        for g in groups.values():
            g.attrs.update(attrs)
        log.info("chain %d: %d draws (%s), acceptance %.3f", chain, groups["posterior"].sizes["draw"],
                 groups["posterior"].attrs["stopped"], float(groups["sample_stats"]["accepted"].mean()))
        io.write_inference_data(groups, path)
