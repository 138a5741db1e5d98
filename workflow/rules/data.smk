rule prepare_data:
    """Verify checksums, parse, standardise covariates, write one NetCDF per data set."""
    input:
        raw=lambda wc: raw_files(wc.dataset),
        manifest=config["data"]["manifest"],
    output:
        f"{PROCESSED}/{{dataset}}.nc",
    log:
        "logs/prepare_data/{dataset}.log",
    benchmark:
        "benchmarks/prepare_data/{dataset}.tsv"
    priority: job_priority("prepare_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        user=lambda wc: USER_DATASETS.get(wc.dataset),
        raw_dir=lambda wc, input: str(Path(input.manifest).parent),
    script:
        "../scripts/prepare_data.py"
