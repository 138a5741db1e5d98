import xarray as xr

from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake):
    p = snakemake.params
    panels = [(xr.load_dataset(f), score) for f, score in zip(snakemake.input, p.scores)]
    pm_gpc_capacity.plot_abstention_curves(
        panels, snakemake.output[0], title=f"F&G Fig. 5: score vs degree of abstention ({p.scale} scale)")
