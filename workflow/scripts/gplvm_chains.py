import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, inp = snakemake.params, snakemake.input
    rho = float(getattr(p, "rho", 0.0))  # rule gplvm_chains_cpm: the correlated pseudo-marginal set
    settings = gplvm.chain_set_settings(p.settings, "cpm") if rho > 0 else p.settings
    groups = gplvm.run_block(xr.load_dataset(inp.data), xr.load_dataset(inp.ml), block=int(snakemake.wildcards.block),
                             cfg=p.cfg, settings=settings, seed=p.seed, rho=rho)
    log.info("acceptance per Gibbs block %s", groups["sample_stats"]["accepted"].mean(("chain", "draw")).values)
    prov = io.provenance({"gplvm": p.cfg, "settings": settings, "scale": p.scale, **({"rho": rho} if rho > 0 else {})},
                         p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
