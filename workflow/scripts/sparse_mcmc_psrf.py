from gpbayes_repro import io
from gpbayes_repro.experiments import sparse_mcmc
from gpbayes_repro.workflow import job

with job(snakemake) as log:
    p, out = snakemake.params, snakemake.output
    runs = {}
    for f in snakemake.input.chains:
        g = io.read_inference_data(f)
        runs.setdefault((g["posterior"].attrs["kernel"], g["posterior"].attrs["sampler"]), []).append(g)
    groups = {key: io.concat_chains(parts) for key, parts in runs.items()}
    curves, summary = sparse_mcmc.psrf_table(groups, n_worst=p.psrf["n_worst"], n_points=p.psrf["n_checkpoints"],
                                             threshold=p.threshold)
    log.info("PSRF summary\n%s", summary.to_string())
    for frame, path in ((curves, out.curves), (summary, out.summary)):
        with io.atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    sparse_mcmc.psrf_figure(curves, summary, out.figure, threshold=p.threshold, scale=p.scale)
