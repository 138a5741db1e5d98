import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    out = snakemake.output
    cur = amis.curves([xr.load_dataset(f) for f in snakemake.input.runs])
    reach = amis.ops_to_reach_table(cur)
    refs = amis.references_table([xr.load_dataset(f) for f in snakemake.input.refs])
    log.info("ops to reach the best MCMC's final IQR\n%s", reach.to_string())
    log.info("reference runs\n%s", refs.to_string())
    for frame, path in ((cur, out.curves), (reach, out.reach), (refs, out.refs)):
        with io.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    table6 = amis.tuning_table(cur)
    log.info("tuning cost (Table 6 analogue)\n%s", table6.to_string())
    with io.atomic_path(out.table6) as tmp:
        table6.to_csv(tmp, float_format="%.6g")
