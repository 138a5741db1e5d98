import json

import pandas as pd

from gpbayes_repro import claims, io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake):
    p, i = snakemake.params, snakemake.input
    frames = (pd.read_csv(i.table), pd.read_csv(i.chains), pd.read_csv(i.convergence))
    zero_bins = slice_ma.zero_bins_of(i.data)
    look1 = slice_ma.fig3_claims(frames[0], zero_bins, p.claims, chains=frames[1], seed=p.seed,
                                 convergence=frames[2])
    plan = json.loads(open(i.plan).read())
    records = look1
    if plan["extend"]:
        ext = [io.read_inference_data(f) for f in i.extended]
        info = {f"{g['posterior'].attrs['dataset']}/{g['posterior'].attrs['method']}":
                {"n_draws": int(g["posterior"].sizes["draw"]), "stopped": g["posterior"].attrs["stopped"]}
                for g in ext}
        t2, c2, v2 = slice_ma.with_extended(*frames, ext)
        look2 = slice_ma.fig3_claims(t2, zero_bins, p.claims, chains=c2, seed=p.seed, convergence=v2)
        records = slice_ma.confirm(look1, look2, plan, info)
    draws = getattr(i, "draws", None)
    look = json.loads(open(draws[0]).read()) if draws else None
    records = slice_ma.claim2_over_draws(records, look, p.claims)
    claims.write_claims("slice_ma", records, snakemake.output[0], scale=p.scale, config={"claims": p.claims},
                        seed=p.seed)
