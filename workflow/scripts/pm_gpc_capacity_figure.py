import xarray as xr

from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    pm_gpc_capacity.plot_scores_vs_size(
        [xr.load_dataset(f) for f in snakemake.input], snakemake.output[0],
        title=f"{p.title}: capacity scores vs training-set size ({p.n_splits} splits per size, {p.scale} scale)")
