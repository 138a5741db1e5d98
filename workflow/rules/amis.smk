# Xiong, Smidl & Filippone: AMIS for GP hyperparameters (Figs. 1-10, claims).
# Pipeline: data -> setup (mode, (-H)^-1) per (data set, kernel) -> blocks of
# replicates per sampler + one long reference AMIS run (regression) or
# PM-AMIS run (classification) per (data set, kernel) -> IQR curves ->
# figures, ops-to-reach table -> claims.  See gpbayes_repro.experiments.amis.
from gpbayes_repro import amis_design

AMIS = config["amis"]
AMIS_SET = scale_block("amis")
AMIS_MODEL_CFG = {k: AMIS[k] for k in ("priors", "nugget", "ep_mode")}
AMIS_KERNELS = AMIS_SET["kernels"]
AMIS_REG = AMIS_SET["regression_datasets"]
AMIS_CLS = AMIS_SET["classification_datasets"]
# sampler -> its settings block in the scale
AMIS_KEY = {
    "amis": "amis",
    "amis_d": "amis",
    "mamis": "mamis",
    "mamis_d": "mamis",
    "mamis_p": "mamis_p",
    "amis_mamis": "amis_mamis",
    "slice": "slice",
    **{f"{f}_{m}": f for f in ("mh", "hmc", "nuts", "nutsda") for m in "idh"},
    **{s: s.rsplit("_", 2)[0] for s in AMIS_SET["classification_samplers"]},
}
# the replicate design (issue 26 section 4): per task `start` replicates first (start / block
# jobs per sampler), then after each look but the last (checkpoint amis_look) one more block of
# `block` replicates for every sampler that an undecided comparison reads; cap start + (looks - 1) block
AMIS_SEQ = AMIS_SET["sequential"]
AMIS_LOOKS = amis_design.looks(AMIS_SEQ)
AMIS_KEYS = [
    (ds, k, s) for ds in AMIS_REG for k in AMIS_KERNELS for s in AMIS_SET["samplers"][k]
] + [
    (ds, k, s)
    for ds in AMIS_CLS
    for k in AMIS_KERNELS
    for s in AMIS_SET["classification_samplers"]
]
# the looks' directory keyed by the design (common.smk: design_key): a decide run plans its looks afresh
AMIS_LOOK_DIR = f"results/amis/looks/{design_key(AMIS['claims'], AMIS_SET)}"
AMIS_CAP = {t: amis_design.cap(AMIS_SEQ, t) for t in ("regression", "classification")}
AMIS_WORK_CAP = {
    t: amis_design.cap(work_block("amis")["sequential"], t)
    for t in ("regression", "classification")
}
# the run blocks present at look j (0-based); the final ones feed the curves and the claims
amis_runs_at = lambda look: amis_design.runs_at(
    AMIS_KEYS, AMIS_SEQ, look, lambda j: checkpoints.amis_look.get(look=j).output[0]
)


# confirmatory blocks (issue 32): fresh replicates of the samplers one open claim reads, decided on their own
AMIS_CONFIRM = AMIS_SET.get("confirm") or {}
AMIS_CONFIRM_RUNS = {
    claim: [
        amis_design.confirm_file(ds, spec["kernel"], s, b)
        for ds in AMIS_REG
        for s in amis_design.confirm_samplers(
            claim, AMIS_SET["samplers"][spec["kernel"]]
        )
        for b in amis_design.confirm_blocks(spec)
    ]
    for claim, spec in AMIS_CONFIRM.items()
}
AMIS_CONFIRM_FILES = [f"results/amis/confirm/{claim}.json" for claim in AMIS_CONFIRM]


AMIS_REFS = [
    f"results/amis/reference/{ds}_{k}.nc" for ds in AMIS_REG for k in AMIS_KERNELS
]
AMIS_CLS_REFS = [
    f"results/amis/classification_reference/{ds}_{k}.nc"
    for ds in AMIS_CLS
    for k in AMIS_KERNELS
]
AMIS_APPENDIX = [
    f"figures/amis/appendix_{k}_{ds}.pdf" for k in AMIS_KERNELS for ds in AMIS_REG
]
# what `rule all` needs from this file (rules/common.smk: out += AMIS_TARGETS)
AMIS_TARGETS = [
    "figures/amis/fig1.pdf",
    "figures/amis/fig2.pdf",
    "figures/amis/fig9.pdf",
    "figures/amis/fig10.pdf",
    "results/amis/ops_to_reach.csv",
    "results/amis/reference.csv",
    "results/amis/classification_reference.csv",
    "results/amis/table6.csv",
    "results/claims/amis.json",
] + AMIS_APPENDIX


rule amis_setup:
    """Posterior mode and (-H)^-1 (AMIS q_0, MH/HMC shapes, MCMC starts) for one data set and kernel."""
    input:
        f"{PROCESSED}/{{dataset}}.nc",
    output:
        "results/amis/setup/{dataset}_{kernel}.nc",
    log:
        "logs/amis/setup/{dataset}_{kernel}.log",
    benchmark:
        "benchmarks/amis_setup/{dataset}_{kernel}.tsv"
    wildcard_constraints:
        kernel="rbf|ard",
    priority: job_priority("amis_setup")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(30),
    params:
        cfg=AMIS_MODEL_CFG,
        settings=lambda wc: {
            "n_max": AMIS_SET["n_max"].get(wc.dataset),
            "ml_restarts": AMIS_SET["ml_restarts"],
        },
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/amis_setup.py"


rule amis_run:
    """A block of replicates of one sampler on one data set and kernel: running E||theta|| vs O(n^3) operations."""
    input:
        data=f"{PROCESSED}/{{dataset}}.nc",
        setup="results/amis/setup/{dataset}_{kernel}.nc",
    output:
        "results/amis/runs/{dataset}_{kernel}_{sampler}_block{block}.nc",
    log:
        "logs/amis/runs/{dataset}_{kernel}_{sampler}_block{block}.log",
    benchmark:
        "benchmarks/amis_run/{dataset}_{kernel}_{sampler}_block{block}.tsv"
    wildcard_constraints:
        kernel="rbf|ard",
        sampler="[a-z_]+(_[0-9]+)?",
        block="[0-9]+",
    priority: job_priority("amis_run")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg=AMIS_MODEL_CFG,
        settings=lambda wc: {
            "n_max": AMIS_SET["n_max"].get(wc.dataset),
            # the base scale's cap when this block holds the same replicates under both (reused)
            "n_replicates": job_count(
                int(wc.block),
                AMIS_CAP[amis_design.task_of(wc.sampler)],
                AMIS_WORK_CAP[amis_design.task_of(wc.sampler)],
                int(AMIS_SEQ[amis_design.task_of(wc.sampler)]["block"]),
            ),
            "replicates_per_job": int(
                AMIS_SEQ[amis_design.task_of(wc.sampler)]["block"]
            ),
            "max_points": AMIS_SET["max_points"],
            AMIS_KEY[wc.sampler]: AMIS_SET[AMIS_KEY[wc.sampler]],
        },
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/amis_run.py"


rule amis_confirm_run:
    """A block of a confirmatory block's fresh replicates (issue 32): as amis_run, replicate streams past the design's cap."""
    input:
        data=f"{PROCESSED}/{{dataset}}.nc",
        setup="results/amis/setup/{dataset}_{kernel}.nc",
    output:
        "results/amis/confirm/runs/{dataset}_{kernel}_{sampler}_block{block}.nc",
    log:
        "logs/amis/confirm/runs/{dataset}_{kernel}_{sampler}_block{block}.log",
    benchmark:
        "benchmarks/amis_confirm_run/{dataset}_{kernel}_{sampler}_block{block}.tsv"
    wildcard_constraints:
        kernel="rbf|ard",
        sampler="[a-z_]+(_[0-9]+)?",
        block="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg=AMIS_MODEL_CFG,
        settings=lambda wc: {
            "n_max": AMIS_SET["n_max"].get(wc.dataset),
            # the block's replicates end where the confirmatory block does (one RNG stream per replicate index)
            "n_replicates": max(
                int(c["first_replicate"]) + int(c["replicates"])
                for c in AMIS_CONFIRM.values()
            ),
            "replicates_per_job": max(int(c["block"]) for c in AMIS_CONFIRM.values()),
            "max_points": AMIS_SET["max_points"],
            AMIS_KEY[wc.sampler]: AMIS_SET[AMIS_KEY[wc.sampler]],
        },
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/amis_run.py"


rule amis_confirm:
    """A claim the sequential design left open, decided on its confirmatory block alone (one look at its level)."""
    input:
        lambda wc: AMIS_CONFIRM_RUNS[wc.claim],
    output:
        "results/amis/confirm/{claim}.json",
    log:
        "logs/amis/confirm/{claim}.log",
    benchmark:
        "benchmarks/amis_confirm/{claim}.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        claims=AMIS["claims"],
        spec=lambda wc: AMIS_CONFIRM[wc.claim],
    script:
        "../scripts/amis_confirm.py"


rule amis_reference:
    """A long AMIS run: reference E||theta|| and the bookkeeping share of AMIS CPU time (one run + repeated timings)."""
    input:
        data=f"{PROCESSED}/{{dataset}}.nc",
        setup="results/amis/setup/{dataset}_{kernel}.nc",
    output:
        "results/amis/reference/{dataset}_{kernel}.nc",
    log:
        "logs/amis/reference/{dataset}_{kernel}.log",
    benchmark:
        "benchmarks/amis_reference/{dataset}_{kernel}.tsv"
    wildcard_constraints:
        kernel="rbf|ard",
    priority: job_priority("amis_reference")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(3000),
        runtime=runtime_min(1440),
    params:
        cfg=AMIS_MODEL_CFG,
        settings=lambda wc: {
            "n_max": AMIS_SET["n_max"].get(wc.dataset),
            "reference": AMIS_SET["reference"],
            "timing": {
                "repeats": AMIS["claims"]["timing_repeats"],
                "target_subset": AMIS["claims"]["timing_target_subset"],
            },
        },
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/amis_reference.py"


rule amis_classification_reference:
    """A long PM-AMIS run (EP, N_imp importance samples): reference E||theta|| of a classification posterior."""
    input:
        data=f"{PROCESSED}/{{dataset}}.nc",
        setup="results/amis/setup/{dataset}_{kernel}.nc",
    output:
        "results/amis/classification_reference/{dataset}_{kernel}.nc",
    log:
        "logs/amis/classification_reference/{dataset}_{kernel}.log",
    benchmark:
        "benchmarks/amis_classification_reference/{dataset}_{kernel}.tsv"
    wildcard_constraints:
        kernel="rbf|ard",
    priority: job_priority("amis_classification_reference")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(3000),
        runtime=runtime_min(1440),
    params:
        cfg=AMIS_MODEL_CFG,
        settings=lambda wc: {
            "n_max": AMIS_SET["n_max"].get(wc.dataset),
            "classification_reference": AMIS_SET["classification_reference"],
        },
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/amis_classification_reference.py"


rule amis_classification_reference_table:
    """The classification reference values (E||theta||, ESS, T, N_t, N_imp) in one table."""
    input:
        AMIS_CLS_REFS,
    output:
        report(
            "results/amis/classification_reference.csv",
            caption="../report/amis_classification_reference.rst",
            category="Xiong, Smidl & Filippone",
        ),
    log:
        "logs/amis/classification_reference_table.log",
    benchmark:
        "benchmarks/amis_classification_reference_table/classification_reference_table.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    script:
        "../scripts/amis_classification_reference_table.py"


checkpoint amis_look:
    """Sequential design, look `look` + 1: decide the curve claims on the blocks present; list the samplers that get one more block."""
    input:
        runs=lambda wc: amis_runs_at(int(wc.look)),
    output:
        f"{AMIS_LOOK_DIR}/look{{look}}.json",
    log:
        "logs/amis/looks/look{look}.log",
    benchmark:
        "benchmarks/amis_look/look{look}.tsv"
    wildcard_constraints:
        look="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        claims=AMIS["claims"],
        sequential=AMIS_SEQ,
    script:
        "../scripts/amis_look.py"


rule amis_curves:
    """IQR across replicates vs O(n^3) operations per sampler; ops and seconds to reach the best MCMC's IQR."""
    input:
        runs=lambda wc: amis_runs_at(AMIS_LOOKS - 1),
        refs=AMIS_REFS,
    output:
        curves="results/amis/curves.csv",
        reach=report(
            "results/amis/ops_to_reach.csv",
            caption="../report/amis_ops_to_reach.rst",
            category="Xiong, Smidl & Filippone",
        ),
        refs=report(
            "results/amis/reference.csv",
            caption="../report/amis_reference.rst",
            category="Xiong, Smidl & Filippone",
        ),
        table6=report(
            "results/amis/table6.csv",
            caption="../report/amis_table6.rst",
            category="Xiong, Smidl & Filippone",
        ),
    log:
        "logs/amis/curves.log",
    benchmark:
        "benchmarks/amis_curves/curves.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        # the look design it was planned from (a changed design re-runs it: common.smk design_key)
        design=AMIS_LOOK_DIR,
    script:
        "../scripts/amis_curves.py"


rule amis_fig1:
    """Fig. 1: AMIS, best MAMIS, best MH, best HMC-family and SS (regression)."""
    input:
        curves="results/amis/curves.csv",
        refs="results/amis/reference.csv",
    output:
        report(
            "figures/amis/fig1.pdf",
            caption="../report/amis_fig1.rst",
            category="Xiong, Smidl & Filippone",
        ),
    log:
        "logs/amis/fig1.log",
    benchmark:
        "benchmarks/amis_fig1/fig1.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/amis_fig1.py"


rule amis_appendix:
    """Figs. 3-8: every regression variant on one data set and kernel, with end-of-tuning markers."""
    input:
        curves="results/amis/curves.csv",
        refs="results/amis/reference.csv",
    output:
        report(
            "figures/amis/appendix_{kernel}_{dataset}.pdf",
            caption="../report/amis_appendix.rst",
            category="Xiong, Smidl & Filippone",
        ),
    log:
        "logs/amis/appendix_{kernel}_{dataset}.log",
    benchmark:
        "benchmarks/amis_appendix/appendix_{kernel}_{dataset}.tsv"
    wildcard_constraints:
        kernel="rbf|ard",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/amis_appendix.py"


rule amis_classification_figures:
    """Fig. 2 (largest N_imp, LA and EP) and Figs. 9-10 (N_imp 1 vs 64; RBF, ARD) for PM-AMIS vs PM-MH."""
    input:
        curves="results/amis/curves.csv",
        refs="results/amis/classification_reference.csv",
    output:
        fig2=report(
            "figures/amis/fig2.pdf",
            caption="../report/amis_fig2.rst",
            category="Xiong, Smidl & Filippone",
        ),
        fig9=report(
            "figures/amis/fig9.pdf",
            caption="../report/amis_fig910.rst",
            category="Xiong, Smidl & Filippone",
        ),
        fig10=report(
            "figures/amis/fig10.pdf",
            caption="../report/amis_fig910.rst",
            category="Xiong, Smidl & Filippone",
        ),
    log:
        "logs/amis/classification_figures.log",
    benchmark:
        "benchmarks/amis_classification_figures/classification_figures.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/amis_classification_figures.py"


rule amis_claims:
    """Claims 1-5 and the bookkeeping item, each PASS/FAIL/INCONCLUSIVE (IQR-ratio intervals over the looks' replicates)."""
    input:
        runs=lambda wc: amis_runs_at(AMIS_LOOKS - 1),
        curves="results/amis/curves.csv",
        reach="results/amis/ops_to_reach.csv",
        refs="results/amis/reference.csv",
        confirm=AMIS_CONFIRM_FILES,
    output:
        "results/claims/amis.json",
    log:
        "logs/claims/amis.log",
    benchmark:
        "benchmarks/amis_claims/amis.tsv"
    priority: job_priority("amis_claims")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        # the look design it was planned from (a changed design re-runs it: common.smk design_key)
        design=AMIS_LOOK_DIR,
        claims={**AMIS["claims"], "sequential": AMIS_SEQ},
        scale=SCALE,
        seed=SEED,
    script:
        "../scripts/amis_claims.py"
