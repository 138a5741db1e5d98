import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, out = snakemake.params, snakemake.output
    ds = xr.load_dataset(snakemake.input.data)
    table = sparse_mcmc.intensity_bands(ds, xr.load_dataset(snakemake.input.fit),
                                        [io.read_inference_data(f) for f in snakemake.input.chains],
                                        kernel=p.kernel, cfg=p.cfg, max_draws=p.predict["max_draws"],
                                        level=p.predict["band"], seed=p.seed)
    with io.atomic_path(out.table) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    sparse_mcmc.coal_figure(table, out.figure, level=p.predict["band"], scale=p.scale)
    log.info("intensity at %d bins written", len(table))
