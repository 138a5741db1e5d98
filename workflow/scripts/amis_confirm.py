import json

import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import amis
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    claim = snakemake.wildcards.claim
    rec = amis.confirmatory_decision([xr.load_dataset(f) for f in snakemake.input], p.claims, claim, p.spec)
    iv = rec.get("interval") or {}
    log.info("%s on %d fresh replicates: %s, %s [%s, %s] at level %s", claim, rec["replicates"], rec["verdict"],
             iv.get("estimate"), iv.get("lo"), iv.get("hi"), iv.get("level"))
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(json.dumps(rec, indent=2, allow_nan=False))
