import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    refs = amis.classification_references_table([xr.load_dataset(f) for f in snakemake.input])
    log.info("classification reference runs\n%s", refs.to_string())
    with io.atomic_path(snakemake.output[0]) as tmp:
        refs.to_csv(tmp, index=False, float_format="%.6g")
