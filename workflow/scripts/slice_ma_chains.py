import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake):
    p, wc = snakemake.params, snakemake.wildcards
    groups = slice_ma.run_block(xr.load_dataset(snakemake.input[0]), method=wc.method, block=int(wc.block),
                                cfg=p.cfg, settings=p.settings, seed=p.seed)
    prov = io.provenance({"slice_ma": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
