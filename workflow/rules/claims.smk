rule claims_report:
    """Render every paper's claims (PASS / FAIL / INCONCLUSIVE with the numbers that decide them) as one
    HTML page, with the runs whose outputs record numerical trouble (gpbayes_repro.trouble) at the top.
    """
    input:
        claim_files(),
    output:
        report(
            "results/claims/claims.html",
            caption="../report/claims.rst",
            category="Claims",
        ),
        trouble="results/claims/numerical_trouble.json",
    log:
        "logs/claims/report.log",
    benchmark:
        "benchmarks/claims_report/report.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(500),
        runtime=runtime_min(5),
    params:
        figures=claim_figures(),
        scale=WORK_SCALE,
        # the configured scale (the committed decide tier is shown beside a default run's claims only)
        claims_scale=SCALE,
        # committed decide-tier outputs (a param, not an input: the default run never recomputes them)
        decide_dir="benchmarks/results/decide_scale",
    script:
        "../scripts/claims_report.py"
