import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    groups = sparse_mcmc.run_block(xr.load_dataset(snakemake.input.data), xr.load_dataset(snakemake.input.fit),
                                   study=wc.study, problem=p.problem, kernel=wc.kernel, sampler=wc.sampler,
                                   block=int(wc.block), cfg=p.cfg, run=p.run, seed=p.seed)
    prov = io.provenance({"sparse_mcmc": p.cfg, "run": p.run, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    st = groups["sample_stats"]
    log.info("acceptance %.3f, leapfrog/iteration %.1f, %.2f s", float(st["acceptance_rate"].mean()),
             float(st["n_steps"].mean()), float(st["wall_time"].sum()))
    io.write_inference_data(groups, snakemake.output[0])
