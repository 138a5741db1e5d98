from gpbayes import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    out = snakemake.output
    effs = [slice_ma.chain_efficiency(io.read_inference_data(f)) for f in snakemake.input.chains]
    table = slice_ma.fig3_table(effs)
    log.info("Figure 3 table\n%s", table.to_string())
    for frame, path in ((table, out.table), (slice_ma.efficiency_rows(effs), out.chains)):
        with io.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    slice_ma.fig3_figure(table, out.figure, scale=snakemake.params.scale)
