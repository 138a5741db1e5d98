import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, wc = snakemake.params, snakemake.wildcards
    table = sparse_mcmc.predict_summary(
        xr.load_dataset(snakemake.input.data), xr.load_dataset(snakemake.input.fit),
        [io.read_inference_data(f) for f in snakemake.input.chains], study=wc.study, problem=p.problem,
        kernel=wc.kernel, sampler=wc.sampler, cfg=p.cfg, max_draws=p.predict["max_draws"])
    log.info("\n%s", table.to_string())
    with io.atomic_path(snakemake.output[0]) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
