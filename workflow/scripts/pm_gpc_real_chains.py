import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake):
    p, wc = snakemake.params, snakemake.wildcards
    ds = xr.load_dataset(snakemake.input[0])
    groups = pm_gpc_mcmc.real_block(ds, scheme=wc.scheme, block=int(wc.block), pmg=p.pmg,
                                    settings=p.settings, seed=p.seed)
    prov = io.provenance({"pm_gpc": p.pmg, "settings": p.settings, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
