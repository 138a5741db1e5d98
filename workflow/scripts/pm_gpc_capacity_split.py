import xarray as xr

from gpbayes import rng
from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    w = snakemake.wildcards
    n, k = int(w.n), int(w.k)
    keys = ("pm_gpc", "capacity", w.dataset, n, k)
    ds, groups = pm_gpc_capacity.split_dataset(
        xr.load_dataset(snakemake.input[0]), n, k, cfg=p.cfg, settings=p.settings,
        rng_split=rng.stream(p.seed, *keys, "split"), rng_fit=rng.stream(p.seed, *keys, "fit"),
        nugget=p.nugget, ep_mode=p.ep_mode)
    ds.attrs["dataset"] = w.dataset
    log.info("capacity accuracy %s", dict(zip(ds["classifier"].values, ds["capacity_accuracy"].values.round(4))))
    log.info("capacity AUC %s", dict(zip(ds["classifier"].values, ds["capacity_auc"].values.round(4))))
    log.info("acceptance %s, wall time %s", ds["acceptance_rate"].values.round(3), ds["wall_time"].values.round(2))
    ds.attrs.update(io.provenance({"capacity": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_inference_data(groups, snakemake.output[0], root=ds)
