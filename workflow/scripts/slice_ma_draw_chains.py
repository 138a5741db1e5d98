from gpbayes_repro import io
from gpbayes_repro.experiments import slice_ma
from gpbayes_repro.workflow import job

with job(snakemake):
    p, wc = snakemake.params, snakemake.wildcards
    ds = slice_ma.synthetic_draw(p.data_cfg, p.settings["synthetic"]["n"], p.seed, int(wc.draw))
    groups = slice_ma.run_block(ds, method=wc.method, block=0, cfg=p.cfg, settings=p.settings, seed=p.seed,
                                draw=int(wc.draw))
    groups["posterior"].attrs["draw"] = int(wc.draw)
    prov = io.provenance({"slice_ma": p.cfg, "settings": p.settings, "scale": p.scale}, p.seed)
    for g in groups.values():
        g.attrs.update(prov)
    io.write_inference_data(groups, snakemake.output[0])
