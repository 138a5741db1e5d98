import pandas as pd
import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, inp = snakemake.params, snakemake.input
    settings = gplvm.chain_set_settings(p.settings, "joint")
    groups = gplvm.run_joint_block(xr.load_dataset(inp.data), xr.load_dataset(inp.ml), pd.read_csv(inp.restarts),
                                   block=int(snakemake.wildcards.block), cfg=p.cfg, settings=settings, seed=p.seed)
    st = groups["sample_stats"]
    log.info("acceptance: psi block %.3f, centred sigma %.3f, scale %.3f, rotation %.3f",
             float(st["accepted"].mean()), float(st["accepted_centred"].mean()), float(st["accepted_scale"].mean()),
             float(st["accepted_rotation"].mean()))
    prov = io.provenance({"gplvm": p.cfg, "settings": settings, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
