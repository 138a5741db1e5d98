import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    ds, chains = amis.run_block(xr.load_dataset(snakemake.input.data), xr.load_dataset(snakemake.input.setup),
                        sampler=wc.sampler, kernel=wc.kernel, block=int(wc.block), cfg=p.cfg,
                        settings=p.settings, seed=p.seed)
    log.info("final estimates %s, tuning cost %s", ds["estimate"].max("point").values, ds["tuning_cost"].values)
    ds.attrs.update(io.provenance({"amis": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    # root group: the curves (xarray.load_dataset reads them); groups: the MCMC chains (arviz.from_netcdf)
    io.write_inference_data(chains, snakemake.output[0], root=ds)
