from gpbayes_repro.experiments.pm_gpc_mcmc import check_looks as pm_gpc_check_looks

PMG = config["pm_gpc"]
FIG2 = PMG["fig2"]
FIG2_SET = scale_block("pm_gpc.fig2")
# Each job gets only the config it uses, so that editing one experiment's keys
# does not re-trigger (params-changed) the jobs of another.
PMG_TABLES = {k: PMG[k] for k in ("nugget", "ep_mode", "tables")}
PMG_REAL = {k: PMG[k] for k in ("nugget", "ep_mode", "real")}
TAB = PMG["tables"]
TAB_SET = scale_block("pm_gpc.tables")
REAL = PMG["real"]
REAL_SET = scale_block("pm_gpc.real")
# claim table1-ep-ge-la's sequential design (issue 26 section 4): PM chains per scheme at each look
EP_LA_LOOKS = pm_gpc_check_looks(TAB_SET["ep_la_looks"], TAB_SET["chains_per_job"])
# the looks' directory is keyed by the design (common.smk: design_key): a decide run on top of a default run
# plans its looks afresh
EP_LA_DIR = f"results/pm_gpc/tables/sequential/{design_key(EP_LA_LOOKS, TAB_SET)}"


rule pm_gpc_fig2_data:
    """Simulated GP-probit data of F&G Sec. 4.1 (d=2, isotropic, balanced)."""
    output:
        "results/pm_gpc/fig2/data_n{n}.nc",
    log:
        "logs/pm_gpc/fig2/data_n{n}.log",
    benchmark:
        "benchmarks/pm_gpc_fig2_data/data_n{n}.tsv"
    priority: job_priority("pm_gpc_fig2_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        fig2=FIG2,
        seed=SEED,
    script:
        "../scripts/pm_gpc_fig2_data.py"


rule pm_gpc_fig2_grid:
    """PM estimates of p(y|tau) on a tau grid: LA vs EP, N_imp, repetitions."""
    input:
        "results/pm_gpc/fig2/data_n{n}.nc",
    output:
        "results/pm_gpc/fig2/grid_n{n}.nc",
    log:
        "logs/pm_gpc/fig2/grid_n{n}.log",
    benchmark:
        "benchmarks/pm_gpc_fig2_grid/grid_n{n}.tsv"
    priority: job_priority("pm_gpc_fig2_grid")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(4000),
        runtime=runtime_min(60),
    params:
        fig2=FIG2,
        settings=FIG2_SET,
        ep_mode=PMG["ep_mode"],
        nugget=PMG["nugget"],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/pm_gpc_fig2_grid.py"


rule pm_gpc_fig2:
    """F&G Fig. 2: mean and 95% band of the PM estimate of p(tau|y); prior in red."""
    input:
        expand("results/pm_gpc/fig2/grid_n{n}.nc", n=FIG2_SET["n"]),
    output:
        figure=report(
            "figures/pm_gpc/fig2.pdf",
            caption="../report/pm_gpc_fig2.rst",
            category="Filippone & Girolami 2014",
        ),
        widths="results/pm_gpc/fig2/band_widths.csv",
        widths_nc="results/pm_gpc/fig2/band_widths.nc",
    log:
        "logs/pm_gpc/fig2/figure.log",
    benchmark:
        "benchmarks/pm_gpc_fig2/figure.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        fig2=FIG2,
        scale=SCALE,
        seed=SEED,
    script:
        "../scripts/pm_gpc_fig2.py"


rule pm_gpc_claims:
    """The paper's claims, evaluated on the results (PASS/FAIL with numbers)."""
    input:
        fig2="results/pm_gpc/fig2/band_widths.nc",
        tables="results/pm_gpc/table_claims.json",
        real=expand("results/pm_gpc/real/{ds}_summary.nc", ds=REAL["datasets"]),
        capacity="results/pm_gpc/capacity/claims.json",
    output:
        "results/claims/pm_gpc.json",
    log:
        "logs/claims/pm_gpc.log",
    benchmark:
        "benchmarks/pm_gpc_claims/pm_gpc.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
        seed=SEED,
        cfg={k: PMG[k] for k in ("fig2", "tables", "real")},
    script:
        "../scripts/pm_gpc_claims.py"


rule pm_gpc_table_data:
    """Simulated data of F&G Sec. 4.2 (unit hypercube, balanced classes)."""
    output:
        "results/pm_gpc/tables/data_n{n}_d{d}.nc",
    log:
        "logs/pm_gpc/tables/data_n{n}_d{d}.log",
    benchmark:
        "benchmarks/pm_gpc_table_data/data_n{n}_d{d}.tsv"
    priority: job_priority("pm_gpc_table_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        tables=TAB,
        seed=SEED,
    script:
        "../scripts/pm_gpc_table_data.py"


rule pm_gpc_table_proposal:
    """One PM proposal per setting, tuned on the deterministic EP marginal."""
    input:
        "results/pm_gpc/tables/data_n{n}_d{d}.nc",
    output:
        "results/pm_gpc/tables/proposal_n{n}_d{d}_{kernel}.nc",
    log:
        "logs/pm_gpc/tables/proposal_n{n}_d{d}_{kernel}.log",
    benchmark:
        "benchmarks/pm_gpc_table_proposal/proposal_n{n}_d{d}_{kernel}.tsv"
    priority: job_priority("pm_gpc_table_proposal")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(60),
    params:
        pmg=PMG_TABLES,
        settings=without_keys(
            job_settings("pm_gpc.tables", ignoring=TAB_LOOK_KEYS), ("ep_la_futility",)
        ),
        seed=SEED,
    script:
        "../scripts/pm_gpc_table_proposal.py"


rule pm_gpc_table_chains:
    """A block of chains of one scheme for Table I (repeat 1) or Table III (repeat 20)."""
    input:
        data="results/pm_gpc/tables/data_n{n}_d{d}.nc",
        proposal="results/pm_gpc/tables/proposal_n{n}_d{d}_{kernel}.nc",
    output:
        "results/pm_gpc/tables/chains/table{table}_n{n}_d{d}_{kernel}_{scheme}_block{block}.nc",
    log:
        "logs/pm_gpc/tables/table{table}_n{n}_d{d}_{kernel}_{scheme}_block{block}.log",
    benchmark:
        "benchmarks/pm_gpc_table_chains/table{table}_n{n}_d{d}_{kernel}_{scheme}_block{block}.tsv"
    wildcard_constraints:
        table="1|3",
    priority: job_priority("pm_gpc_table_chains")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(600),
    params:
        pmg=PMG_TABLES,
        settings=table_chain_settings,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/pm_gpc_table_chains.py"


checkpoint pm_gpc_table1_look:
    """A look of claim table1-ep-ge-la's sequential design: decided, futile, cap, or one more PM block."""
    input:
        lambda wc: table1_files(EP_LA_LOOKS[int(wc.look)], "pm"),
    output:
        f"{EP_LA_DIR}/ep_la_look{{look}}.json",
    log:
        "logs/pm_gpc/tables/ep_la_look{look}.log",
    benchmark:
        "benchmarks/pm_gpc_table1_look/ep_la_look{look}.tsv"
    wildcard_constraints:
        look=r"\d+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        looks=EP_LA_LOOKS,
        settings=TAB_SET,
    script:
        "../scripts/pm_gpc_table1_look.py"


rule pm_gpc_tables:
    """Tables I-III (CSV), each beside the paper's published values."""
    input:
        t1=table1_files(EP_LA_LOOKS[0], "other"),
        t1_pm=lambda wc: table1_files(EP_LA_LOOKS[ep_la_final_look()], "pm"),
        seq=lambda wc: f"{EP_LA_DIR}/ep_la_look{ep_la_final_look()}.json",
        t3=table_chain_files(3),
        paper1=f"{RESOURCES}/fg2014_table1.csv",
        paper2=f"{RESOURCES}/fg2014_table2.csv",
        paper3=f"{RESOURCES}/fg2014_table3.csv",
    output:
        table1=report(
            "results/pm_gpc/table1.csv",
            caption="../report/pm_gpc_table1.rst",
            category="Filippone & Girolami 2014",
        ),
        table2=report(
            "results/pm_gpc/table2.csv",
            caption="../report/pm_gpc_table2.rst",
            category="Filippone & Girolami 2014",
        ),
        table3=report(
            "results/pm_gpc/table3.csv",
            caption="../report/pm_gpc_table3.rst",
            category="Filippone & Girolami 2014",
        ),
        claims="results/pm_gpc/table_claims.json",
    log:
        "logs/pm_gpc/tables/tables.log",
    benchmark:
        "benchmarks/pm_gpc_tables/tables.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        # the look design it was planned from (a changed design re-runs it: common.smk design_key)
        design=EP_LA_DIR,
        settings=TAB_SET,
    script:
        "../scripts/pm_gpc_tables.py"


rule pm_gpc_real_data:
    """Breast / Pima / Abalone, balanced random subset at reduced scales."""
    input:
        f"{PROCESSED}/{{dataset}}.nc",
    output:
        "results/pm_gpc/real/{dataset}_data.nc",
    log:
        "logs/pm_gpc/real/{dataset}_data.log",
    benchmark:
        "benchmarks/pm_gpc_real_data/{dataset}_data.tsv"
    priority: job_priority("pm_gpc_real_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        settings=REAL_SET,
        seed=SEED,
    script:
        "../scripts/pm_gpc_real_data.py"


rule pm_gpc_real_chains:
    """A block of chains of one scheme on a real data set (Figs. 3-4)."""
    input:
        "results/pm_gpc/real/{dataset}_data.nc",
    output:
        "results/pm_gpc/real/chains/{dataset}_{scheme}_block{block}.nc",
    log:
        "logs/pm_gpc/real/{dataset}_{scheme}_block{block}.log",
    benchmark:
        "benchmarks/pm_gpc_real_chains/{dataset}_{scheme}_block{block}.tsv"
    priority: job_priority("pm_gpc_real_chains")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(4000),
        runtime=runtime_min(1440),
    params:
        pmg=PMG_REAL,
        settings=REAL_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/pm_gpc_real_chains.py"


rule pm_gpc_real_summary:
    """Trace, autocorrelation and PSRF evolution of log tau per data set and scheme."""
    input:
        lambda wc: real_chain_files(wc.dataset),
    output:
        "results/pm_gpc/real/{dataset}_summary.nc",
    log:
        "logs/pm_gpc/real/{dataset}_summary.log",
    benchmark:
        "benchmarks/pm_gpc_real_summary/{dataset}_summary.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        settings=REAL_SET,
        schemes=REAL["schemes"],
    script:
        "../scripts/pm_gpc_real_summary.py"


rule pm_gpc_fig3:
    """F&G Fig. 3 (Breast, Pima) and Fig. 4 (Abalone)."""
    input:
        lambda wc: [
            f"results/pm_gpc/real/{ds}_summary.nc"
            for ds in ({"3": ["breast", "pima"], "4": ["abalone"]}[wc.fig])
        ],
    output:
        report(
            "figures/pm_gpc/fig{fig}.pdf",
            caption="../report/pm_gpc_fig34.rst",
            category="Filippone & Girolami 2014",
        ),
    log:
        "logs/pm_gpc/fig{fig}.log",
    benchmark:
        "benchmarks/pm_gpc_fig3/fig{fig}.tsv"
    wildcard_constraints:
        fig="3|4",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        scale=SCALE,
        settings=REAL_SET,
    script:
        "../scripts/pm_gpc_fig34.py"
