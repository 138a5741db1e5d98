import json
from pathlib import Path

import pandas as pd

from gpbayes_repro import io
from gpbayes_repro.experiments import pm_gpc_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    inp, out = snakemake.input, snakemake.output
    t1g = [io.read_inference_data(f) for f in list(inp.t1) + list(inp.t1_pm)]  # AA/SURR, then the PM blocks
    t3g = [io.read_inference_data(f) for f in inp.t3]
    t1, t2, t3 = pm_gpc_mcmc.tables_from_chains(t1g, t3g, snakemake.params.settings)
    keys = ["n", "d", "kernel", "scheme"]
    tables = {
        "table1": pm_gpc_mcmc.beside_paper(t1, pd.read_csv(inp.paper1), keys,
                                           ["ess", "ess_sd"] + [c for c in t1.columns if c.startswith("rhat_")]
                                           + ["acceptance", "acceptance_sd", "ess_per_second"]),
        "table2": pm_gpc_mcmc.beside_paper(t2, pd.read_csv(inp.paper2), keys, ["ops_per_iteration", "ops_sd"]),
        "table3": pm_gpc_mcmc.beside_paper(t3, pd.read_csv(inp.paper3).replace({"scheme": {"pm": "pm-ep-64"}}),
                                           keys, ["ess", "ess_sd", "ess_per_op"]
                                           + [c for c in t3.columns if c.startswith("rhat_")]),
    }
    for name, table in tables.items():
        log.info("%s\n%s", name, table.to_string())
        with io.atomic_path(out[name]) as tmp:
            table.to_csv(tmp, index=False, float_format="%.4g")
    claims = pm_gpc_mcmc.table_claims(t1, pd.read_csv(inp.paper2), paper_table=pd.read_csv(inp.paper1),
                                      ep_la_looks=snakemake.params.settings["ep_la_looks"])
    seq = json.loads(Path(inp.seq).read_text())
    for rec in claims:
        if rec["id"] == seq["claim"] and "sequential" in rec["measured"]:
            rec["measured"]["sequential"]["stopped"] = seq["action"]  # decided / cap / futile / gated (the look's record)
    with io.atomic_path(out.claims) as tmp:
        tmp.write_text(json.dumps(claims, indent=2))
