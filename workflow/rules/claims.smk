rule claims_report:
    """Render every paper's claims (PASS/FAIL with the numbers) as one HTML page."""
    input:
        claim_files(),
    output:
        report(
            "results/claims/claims.html",
            caption="../report/claims.rst",
            category="Claims",
        ),
    log:
        "logs/claims/report.log",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/claims_report.py"
