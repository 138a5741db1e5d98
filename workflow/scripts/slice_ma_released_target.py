from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    correct = [io.read_inference_data(f) for f in snakemake.input.correct]
    released = [io.read_inference_data(f) for f in snakemake.input.released]
    table = slice_ma.released_target_table(correct, released, seed=snakemake.params.seed)
    log.info("DIAGNOSTIC: Ionosphere on the correct target and on the released code's target\n%s",
             table.to_string())
    with io.atomic_path(snakemake.output.table) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
