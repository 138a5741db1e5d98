import xarray as xr

from gpbayes_repro import io
from gpbayes_repro import plots
from gpbayes_repro.workflow import job

with job(snakemake):
    post = io.read_inference_data(snakemake.input.posterior, ["posterior"])["posterior"]
    ml = xr.load_dataset(snakemake.input.ml)
    ml_values = dict(zip(ml["param"].values.tolist(), ml["psi_ml"].values.tolist()))
    name = snakemake.wildcards.dataset
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    plots.trace_and_marginals(
        post, ml_values, snakemake.output[0],
        title=f"{name}: RW-MH on log hyperparameters, {n_chain} chains x {n_draw} draws "
              f"({snakemake.params.scale} scale); red = type-II ML",
    )
