import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    stop = slice_ma.extension_stop(p.settings, wc.dataset, p.ext)
    groups = slice_ma.run_until_converged(xr.load_dataset(snakemake.input[0]), method=wc.method, cfg=p.cfg,
                                          settings=p.settings, seed=p.seed, stop=stop)
    log.info("%s/%s: %d draws per chain (%s)", wc.dataset, wc.method, groups["posterior"].sizes["draw"],
             groups["posterior"].attrs["stopped"])
    prov = io.provenance({"slice_ma": p.cfg, "settings": p.settings, "extension": p.ext, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
