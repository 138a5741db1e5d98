from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    out = snakemake.output
    groups = [io.read_inference_data(f) for f in snakemake.input.chains]
    effs = [slice_ma.chain_efficiency(g) for g in groups]
    table = slice_ma.fig3_table(effs)
    log.info("Figure 3 table\n%s", table.to_string())
    conv = slice_ma.convergence_rows(groups)
    log.info("convergence (pooled chains)\n%s", conv.to_string())
    for frame, path in ((table, out.table), (slice_ma.efficiency_rows(effs), out.chains), (conv, out.convergence)):
        with io.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    slice_ma.fig3_figure(table, out.figure, scale=snakemake.params.scale)
