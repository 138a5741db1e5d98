import json

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p = snakemake.params
    look = int(snakemake.wildcards.look)
    rows = pm_gpc_mcmc.table_rows([io.read_inference_data(f) for f in snakemake.input], p.settings["checkpoints"])
    rec = pm_gpc_mcmc.ep_la_look(rows, look, p.looks, futility=p.settings.get("ep_la_futility", True))
    log.info("look %d (%d PM chains per scheme): %.4g [%.4g, %.4g] at level %.4g -> %s, %s", look,
             rec["n_chains_per_scheme"], rec["estimate"], rec["lo"], rec["hi"], rec["level"], rec["verdict"],
             rec["action"])
    with io.atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(json.dumps(rec, indent=2))
