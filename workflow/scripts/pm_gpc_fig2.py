import numpy as np
import xarray as xr

from gpbayes_repro import io
from gpbayes_repro import plots
from gpbayes_repro.experiments import pm_gpc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    grids = [xr.load_dataset(path) for path in snakemake.input]
    posts, widths = pm_gpc.fig2_summary(grids, p.fig2, seed=p.seed)
    prior = pm_gpc.tau_prior(p.fig2["tau_prior"], p.fig2["d"])
    prior_pdfs = [np.exp(prior.log_density(np.log(g["tau"].values))) / g["tau"].values for g in grids]
    n_reps = grids[0].sizes["rep"]
    plots.pm_gpc_fig2(posts, prior_pdfs, snakemake.output.figure,
                      title=f"PM estimate of p(tau|y), {n_reps} repetitions ({p.scale} scale)")
    table = widths.to_dataframe().reset_index()
    log.info("\n%s", table.to_string())
    io.write_netcdf_atomic(widths, snakemake.output.widths_nc)
    with io.atomic_path(snakemake.output.widths) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
