RMH = config["regression_mh"]
RMH_SET = settings("regression_mh")


rule regression_ml:
    """Type-II ML estimate and proposal covariance (-H)^-1 at the posterior mode."""
    input:
        f"{PROCESSED}/{{dataset}}.nc",
    output:
        "results/regression_mh/{dataset}/ml.nc",
    log:
        "logs/regression_mh/{dataset}/ml.log",
    benchmark:
        "benchmarks/regression_ml/{dataset}_ml.tsv"
    priority: job_priority("regression_ml")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(30),
    params:
        exp=RMH,
        settings=job_settings("regression_mh", ignoring=("n_draws",)),
        seed=SEED,
    script:
        "../scripts/regression_ml.py"


rule regression_mh_chains:
    """The random-walk MH chains on the log hyperparameters (one job: with `until_converged` they run
    together until rank R-hat and ESS reach the claims' thresholds or the scale's draws are spent).
    """
    input:
        data=f"{PROCESSED}/{{dataset}}.nc",
        ml="results/regression_mh/{dataset}/ml.nc",
    output:
        expand(
            "results/regression_mh/{{dataset}}/chains/chain_{chain}.nc",
            chain=range(RMH_SET["n_chains"]),
        ),
    log:
        "logs/regression_mh/{dataset}/chains.log",
    benchmark:
        "benchmarks/regression_mh_chains/{dataset}_chains.tsv"
    priority: job_priority("regression_mh_chains")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(120 * RMH_SET["n_chains"]),
    params:
        exp=RMH,
        settings=RMH_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/regression_mh_chains.py"


rule regression_mh_merge:
    """Concatenate the chains into one ArviZ-layout file."""
    input:
        expand(
            "results/regression_mh/{{dataset}}/chains/chain_{chain}.nc",
            chain=range(RMH_SET["n_chains"]),
        ),
    output:
        "results/regression_mh/{dataset}/posterior.nc",
    log:
        "logs/regression_mh/{dataset}/merge.log",
    benchmark:
        "benchmarks/regression_mh_merge/{dataset}_merge.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(5),
    script:
        "../scripts/regression_mh_merge.py"


rule regression_mh_diagnostics:
    """ESS, CODA ESS and R-hat per hyperparameter."""
    input:
        posterior="results/regression_mh/{dataset}/posterior.nc",
        ml="results/regression_mh/{dataset}/ml.nc",
    output:
        table=report(
            "results/regression_mh/{dataset}/diagnostics.csv",
            caption="../report/regression_mh_diagnostics.rst",
            category="Foundation slice",
            subcategory="{dataset}",
        ),
        nc="results/regression_mh/{dataset}/diagnostics.nc",
    log:
        "logs/regression_mh/{dataset}/diagnostics.log",
    benchmark:
        "benchmarks/regression_mh_diagnostics/{dataset}_diagnostics.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    script:
        "../scripts/regression_mh_diagnostics.py"


rule regression_mh_figure:
    """Traces and marginal posteriors, type-II ML estimate marked."""
    input:
        posterior="results/regression_mh/{dataset}/posterior.nc",
        ml="results/regression_mh/{dataset}/ml.nc",
    output:
        report(
            "figures/regression_mh/{dataset}_traces.pdf",
            caption="../report/regression_mh_traces.rst",
            category="Foundation slice",
            subcategory="{dataset}",
        ),
    log:
        "logs/regression_mh/{dataset}/figure.log",
    benchmark:
        "benchmarks/regression_mh_figure/{dataset}_figure.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/regression_mh_figure.py"


rule regression_mh_claims:
    """Claims of the foundation slice, evaluated on the diagnostics."""
    input:
        expand(
            "results/regression_mh/{dataset}/diagnostics.nc",
            dataset=RMH["datasets"],
        ),
    output:
        "results/claims/foundation.json",
    log:
        "logs/claims/foundation.log",
    benchmark:
        "benchmarks/regression_mh_claims/foundation.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(500),
        runtime=runtime_min(5),
    params:
        exp=RMH,
        datasets=RMH["datasets"],
        scale=SCALE,
        seed=SEED,
    script:
        "../scripts/regression_mh_claims.py"
