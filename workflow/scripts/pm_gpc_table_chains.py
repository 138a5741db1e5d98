import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    ds = xr.load_dataset(snakemake.input.data)
    proposal = xr.load_dataset(snakemake.input.proposal)
    groups = pm_gpc_mcmc.table_block(ds, proposal, table=int(wc.table), kernel_kind=wc.kernel,
                                     scheme=wc.scheme, block=int(wc.block), pmg=p.pmg,
                                     settings=p.settings, seed=p.seed)
    prov = io.provenance({"pm_gpc": p.pmg, "settings": p.settings, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    log.info("acceptance %.3f", float(groups["sample_stats"]["accepted"].mean()))
    io.write_inference_data(groups, snakemake.output[0])
