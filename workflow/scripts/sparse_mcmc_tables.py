import pandas as pd

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    out = snakemake.output
    sweep = pd.concat([pd.read_csv(f) for f in snakemake.input.sweep], ignore_index=True).sort_values(["M", "method"])
    table = pd.concat([pd.read_csv(f) for f in snakemake.input.predict], ignore_index=True)
    log.info("M sweep\n%s\npredictive\n%s", sweep.drop(columns="correct", errors="ignore").to_string(), table.to_string())
    for frame, path in ((sweep, out.sweep), (table, out.table)):
        with io.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    sparse_mcmc.sweep_figure(sweep, out.figure, scale=snakemake.params.scale)
