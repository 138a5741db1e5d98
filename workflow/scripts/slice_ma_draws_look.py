import json

from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, i = snakemake.params, snakemake.input
    first = {m: io.concat_chains([io.read_inference_data(f) for f in getattr(i, m.replace("-", "_"))])
             for m in ("surr-site", "post-site")}
    units = [slice_ma.draw_unit(first["surr-site"], first["post-site"])]
    for s, q in zip(i.draw_surr, i.draw_post):
        units.append(slice_ma.draw_unit(io.read_inference_data(s), io.read_inference_data(q)))
    look = slice_ma.sequential_over_draws(units, int(snakemake.wildcards.look), p.max_looks, p.bounds)
    log.info("look %d: %d draws, %s [%s, %s] -> %s (stop: %s)", look["look"], look["n_draws"], look["estimate"],
             look["lo"], look["hi"], look["verdict"], look["stop"])
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(json.dumps(look, indent=2, default=float) + "\n")
