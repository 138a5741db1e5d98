# Filippone & Girolami 2014, Sec. 5: SVM, EP ML, MCMC EP and MCMC PM EP compared
# by capacity accuracy / capacity AUC on balanced training sets of increasing
# size (Figs. 5-7).  One job per (data set, training size, split).
CAP = config["pm_gpc"]["capacity"]
CAP_SET = scale_block("pm_gpc.capacity")
CAP_DIR = "results/pm_gpc/capacity"


# Training-set sizes per data set: the scale's sizes up to max_train_size (the
# smaller class must keep min_test_per_class points for the test set).
CAP_SIZES = {
    ds: [
        int(n)
        for n in CAP_SET["sizes"]
        if n <= (CAP.get("max_train_size") or {}).get(ds, n)
    ]
    for ds in CAP["datasets"]
}
# the claim's sequential design over splits (issue 26 section 4): splits per size at each look
CAP_SPLIT_LOOKS = pm_gpc_check_looks(CAP_SET["split_looks"], 1, "split_looks")
# the looks' directory keyed by the design (common.smk: design_key)
CAP_LOOK_DIR = (
    f"{CAP_DIR}/sequential/{design_key(CAP_SPLIT_LOOKS, CAP['datasets'], CAP_SET)}"
)


# rows of Figs. 6-7: configured data sets with at least one size
CAP_FIGURE_DATASETS = {
    fig: [ds for ds in CAP["figures"][fig] if CAP_SIZES.get(ds)]
    for fig in ("fig6", "fig7")
}
# Fig. 5 panels (split file, score): split 0 at the available size nearest the paper's
CAP_FIG5_PANELS = [
    (
        f"{CAP_DIR}/{p['dataset']}/n"
        f"{min(CAP_SIZES[p['dataset']], key=lambda a: (abs(a - p['n']), a))}_split0.nc",
        p["score"],
    )
    for p in CAP["figures"]["fig5"]
    if CAP_SIZES.get(p["dataset"])
]
# everything this experiment makes (for `rule all`)
PM_GPC_CAPACITY_TARGETS = (
    [f"{CAP_DIR}/capacity_scores.csv", f"{CAP_DIR}/claims.json"]
    + [
        f"figures/pm_gpc/{fig}.pdf"
        for fig in CAP_FIGURE_DATASETS
        if CAP_FIGURE_DATASETS[fig]
    ]
    + (["figures/pm_gpc/fig5.pdf"] if CAP_FIG5_PANELS else [])
)


rule pm_gpc_capacity_split:
    """One balanced split: four classifiers' test probabilities and capacity scores."""
    input:
        f"{PROCESSED}/{{dataset}}.nc",
    output:
        f"{CAP_DIR}/{{dataset}}/n{{n}}_split{{k}}.nc",
    log:
        "logs/pm_gpc/capacity/{dataset}/n{n}_split{k}.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_split/{dataset}_n{n}_split{k}.tsv"
    wildcard_constraints:
        dataset=r"[^/]+",
        n=r"\d+",
        k=r"\d+",
    priority: job_priority("pm_gpc_capacity_split")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(60),
    params:
        cfg=CAP,
        settings=job_settings("pm_gpc.capacity", ignoring=("split_looks",)),
        nugget=config["pm_gpc"]["nugget"],
        ep_mode=config["pm_gpc"]["ep_mode"],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/pm_gpc_capacity_split.py"


checkpoint pm_gpc_capacity_look:
    """A look of the capacity claim's sequential design: decided, futile, cap, or one more split per size."""
    input:
        lambda wc: [
            f
            for ds in CAP["datasets"]
            for f in cap_split_files(ds, CAP_SPLIT_LOOKS[int(wc.look)])
        ],
    output:
        f"{CAP_LOOK_DIR}/look{{look}}.json",
    log:
        "logs/pm_gpc/capacity/look{look}.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_look/look{look}.tsv"
    wildcard_constraints:
        look=r"\d+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        looks=CAP_SPLIT_LOOKS,
        datasets=CAP["datasets"],
    script:
        "../scripts/pm_gpc_capacity_look.py"


rule pm_gpc_capacity_collect:
    """One data set's capacity scores over training-set sizes and splits."""
    input:
        lambda wc: cap_final_split_files(wc.dataset),
    output:
        f"{CAP_DIR}/{{dataset}}/scores.nc",
    log:
        "logs/pm_gpc/capacity/{dataset}/collect.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_collect/{dataset}_collect.tsv"
    wildcard_constraints:
        dataset=r"[^/]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        # the look design it was planned from (a changed design re-runs it: common.smk design_key)
        design=CAP_LOOK_DIR,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/pm_gpc_capacity_collect.py"


rule pm_gpc_capacity_table:
    """Every capacity score (long CSV) and mean +- s.e. per data set, size and classifier."""
    input:
        expand(f"{CAP_DIR}/{{dataset}}/scores.nc", dataset=CAP["datasets"]),
    output:
        scores=report(
            f"{CAP_DIR}/capacity_scores.csv",
            caption="../report/pm_gpc_capacity_table.rst",
            category="Filippone & Girolami 2014",
        ),
        summary=f"{CAP_DIR}/capacity_summary.csv",
    log:
        "logs/pm_gpc/capacity/table.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_table/table.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    script:
        "../scripts/pm_gpc_capacity_table.py"


rule pm_gpc_capacity_fig6:
    """F&G Fig. 6: capacity scores vs training-set size, Pima and Thyroid (stand-in)."""
    input:
        expand(
            f"{CAP_DIR}/{{dataset}}/scores.nc",
            dataset=CAP_FIGURE_DATASETS["fig6"],
        ),
    output:
        report(
            "figures/pm_gpc/fig6.pdf",
            caption="../report/pm_gpc_capacity_fig6.rst",
            category="Filippone & Girolami 2014",
        ),
    log:
        "logs/pm_gpc/capacity/fig6.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_fig6/fig6.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        title="F&G Fig. 6",
        scale=SCALE,
    script:
        "../scripts/pm_gpc_capacity_figure.py"


rule pm_gpc_capacity_fig7:
    """F&G Fig. 7: capacity scores vs training-set size, Ionosphere, Glass, USPS (stand-in)."""
    input:
        expand(
            f"{CAP_DIR}/{{dataset}}/scores.nc",
            dataset=CAP_FIGURE_DATASETS["fig7"],
        ),
    output:
        report(
            "figures/pm_gpc/fig7.pdf",
            caption="../report/pm_gpc_capacity_fig7.rst",
            category="Filippone & Girolami 2014",
        ),
    log:
        "logs/pm_gpc/capacity/fig7.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_fig7/fig7.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        title="F&G Fig. 7",
        scale=SCALE,
    script:
        "../scripts/pm_gpc_capacity_figure.py"


rule pm_gpc_capacity_fig5:
    """F&G Fig. 5: accuracy / AUC vs degree of abstention for one split each."""
    input:
        [f for f, _ in CAP_FIG5_PANELS],
    output:
        report(
            "figures/pm_gpc/fig5.pdf",
            caption="../report/pm_gpc_capacity_fig5.rst",
            category="Filippone & Girolami 2014",
        ),
    log:
        "logs/pm_gpc/capacity/fig5.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_fig5/fig5.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scores=[s for _, s in CAP_FIG5_PANELS],
        scale=SCALE,
    script:
        "../scripts/pm_gpc_capacity_fig5.py"


rule pm_gpc_capacity_claims:
    """Claim 5 (MCMC PM EP best, SVM worst overall), PASS/FAIL with the mean ranks."""
    input:
        scores=expand(f"{CAP_DIR}/{{dataset}}/scores.nc", dataset=CAP["datasets"]),
        seq=lambda wc: f"{CAP_LOOK_DIR}/look{cap_final_look()}.json",
    output:
        f"{CAP_DIR}/claims.json",
    log:
        "logs/pm_gpc/capacity/claims.log",
    benchmark:
        "benchmarks/pm_gpc_capacity_claims/claims.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        # the look design it was planned from (a changed design re-runs it: common.smk design_key)
        design=CAP_LOOK_DIR,
        cfg=CAP,
        seed=SEED,
        scale=SCALE,
        looks=CAP_SPLIT_LOOKS,
    script:
        "../scripts/pm_gpc_capacity_claims.py"
