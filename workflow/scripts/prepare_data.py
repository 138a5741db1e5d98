from gpbayes_repro import data
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    name = snakemake.wildcards.dataset
    user = snakemake.params.user
    if user:
        ds = data.prepare_user_dataset(user["path"], user["target"], user["task"], name=name)
    else:
        manifest = data.load_manifest(snakemake.input.manifest)
        ds = data.prepare_dataset(name, snakemake.params.raw_dir, manifest)
    log.info("%s: X %s, stand-in=%s", name, ds["X"].shape, ds.attrs.get("stand_in"))
    data.write_dataset(ds, snakemake.output[0])
