import json
from pathlib import Path

import xarray as xr

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_capacity
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    look = int(snakemake.wildcards.look)
    # split files are <capacity dir>/<data set>/n<n>_split<k>.nc
    by_ds = {ds: [xr.load_dataset(f) for f in snakemake.input if Path(f).parent.name == ds] for ds in p.datasets}
    summaries = [pm_gpc_capacity.collect_splits(parts, dataset=ds) for ds, parts in by_ds.items() if parts]
    rec = pm_gpc_capacity.capacity_look(summaries, look, p.looks)
    log.info("look %d (%d splits per size): %s -> %s (splits to decide at the current estimates: %s)", look,
             rec["splits_per_size"], rec["verdict"], rec["action"], rec["splits_to_decide"])
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(json.dumps(rec, indent=2))
