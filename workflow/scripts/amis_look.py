import json

import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    look = int(snakemake.wildcards.look)
    dec = amis.sequential_decisions([xr.load_dataset(f) for f in snakemake.input.runs], p.claims, p.sequential,
                                    upto_look=look)
    out = {"look": look + 1, "planned_looks": dec["looks"], "extend": [list(k) for k in dec["extend"]],
           "verdicts": {cid: st.get("verdict") for cid, st in dec["claims"].items()}}
    log.info("look %d of %d: verdicts %s; %d samplers get one more block", look + 1, dec["looks"], out["verdicts"],
             len(out["extend"]))
    with io.atomic_path(snakemake.output[0]) as tmp:
        with open(tmp, "w") as fh:
            json.dump(out, fh, indent=1)
