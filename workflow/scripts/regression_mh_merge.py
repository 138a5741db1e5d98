from gpbayes_repro import io
from gpbayes_repro.experiments import regression_mh
from gpbayes_repro.workflow import job

with job(snakemake):
    parts = [io.read_inference_data(path) for path in snakemake.input]
    io.write_inference_data(regression_mh.merge_chains(parts), snakemake.output[0])
