import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import regression_mh
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    groups = io.read_inference_data(snakemake.input.posterior)
    ml = xr.load_dataset(snakemake.input.ml)
    table = regression_mh.diagnostics_table(groups, ml)
    log.info("\n%s", table.to_dataframe().to_string())
    io.write_netcdf_atomic(table, snakemake.output.nc)
    with io.atomic_path(snakemake.output.table) as tmp:
        table.to_dataframe().to_csv(tmp, float_format="%.6g")
