import pandas as pd
import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, inp = snakemake.params, snakemake.input
    chain_set = getattr(p, "chain_set", "joint")  # rule gplvm_chains_joint_nuts: the NUTS set
    settings = gplvm.chain_set_settings(p.settings, chain_set)
    groups = gplvm.run_joint_block(xr.load_dataset(inp.data), xr.load_dataset(inp.ml), pd.read_csv(inp.restarts),
                                   block=int(snakemake.wildcards.block), cfg=p.cfg, settings=settings, seed=p.seed,
                                   chain_set=chain_set)
    st = groups["sample_stats"]
    if chain_set == "joint":
        log.info("acceptance: psi block %.3f, centred sigma %.3f, scale %.3f, rotation %.3f",
                 float(st["accepted"].mean()), float(st["accepted_centred"].mean()),
                 float(st["accepted_scale"].mean()), float(st["accepted_rotation"].mean()))
    else:
        log.info("NUTS: mean acceptance %.3f, leapfrog steps per draw %.1f, divergences %d, step sizes %s",
                 float(st["acceptance_prob"].mean()), float(st["n_leapfrog"].mean()), int(st["diverging"].sum()),
                 st.attrs.get("step_size"))
    prov = io.provenance({"gplvm": p.cfg, "settings": settings, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
