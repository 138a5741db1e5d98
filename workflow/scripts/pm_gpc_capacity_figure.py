import xarray as xr

from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    scores = [xr.load_dataset(f) for f in snakemake.input]
    n_splits = max(int(s.sizes["split"]) for s in scores)  # as many as the claim's sequential design ran
    pm_gpc_capacity.plot_scores_vs_size(
        scores, snakemake.output[0],
        title=f"{p.title}: capacity scores vs training-set size ({n_splits} splits per size, {p.scale} scale)")
