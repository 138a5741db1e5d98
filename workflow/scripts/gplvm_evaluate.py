import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import gplvm
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, inp, out = snakemake.params, snakemake.input, snakemake.output
    ds, ml = xr.load_dataset(inp.data), xr.load_dataset(inp.ml)
    sets = {name: gplvm.merge_chains([io.read_inference_data(f) for f in files])
            for name, files in (("paper", inp.chains), ("cpm", inp.chains_cpm), ("joint", inp.chains_joint),
                                ("joint_nuts", inp.chains_joint_nuts))
            if files}  # the NUTS set only in the cases a scale lists (joint_nuts_cases)
    chain_set, sets_table = gplvm.choose_chain_set(sets)
    sets_table.insert(0, "case", ds.attrs["case"])
    log.info("chain sets (the predictive and the claims read %s)\n%s", chain_set, sets_table.to_string())
    chains = sets[chain_set]
    ev = gplvm.evaluate_case(ds, ml, chains, p.cfg, p.settings, p.seed)
    ev.attrs["chain_set"] = chain_set
    log.info("NMSE (%%) per feature [marginalised, ml]\n%s", ev["nmse"].values)
    ev.attrs.update(io.provenance({"gplvm": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed))
    io.write_netcdf_atomic(ev, out.density)
    shape = gplvm.shape_summary(chains, ml, ds.attrs["case"])
    shape["chain_set"] = chain_set
    with io.atomic_path(out.chain_sets) as tmp:
        sets_table.to_csv(tmp, index=False, float_format="%.6g")
    log.info("posterior shape\n%s", shape.to_string())
    with io.atomic_path(out.shape) as tmp:
        shape.to_csv(tmp, index=False, float_format="%.6g")
