import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    summaries = [xr.load_dataset(f) for f in snakemake.input]
    summary = pm_gpc_capacity.summary_table(summaries)
    log.info("\n%s", summary.to_string())
    for table, path in ((pm_gpc_capacity.scores_table(summaries), snakemake.output.scores),
                        (summary, snakemake.output.summary)):
        with io.atomic_path(path) as tmp:
            table.to_csv(tmp, index=False, float_format="%.6g")
