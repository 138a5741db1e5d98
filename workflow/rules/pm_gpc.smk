PMG = config["pm_gpc"]
FIG2 = PMG["fig2"]
FIG2_SET = FIG2["scales"][SCALE]


rule pm_gpc_fig2_data:
    """Simulated GP-probit data of F&G Sec. 4.1 (d=2, isotropic, balanced)."""
    output:
        "results/pm_gpc/fig2/data_n{n}.nc",
    log:
        "logs/pm_gpc/fig2/data_n{n}.log",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
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
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        fig2=FIG2,
        settings=FIG2_SET,
        ep_mode=PMG["ep_mode"],
        nugget=PMG["nugget"],
        seed=SEED,
        scale=SCALE,
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
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        fig2=FIG2,
        scale=SCALE,
    script:
        "../scripts/pm_gpc_fig2.py"


rule pm_gpc_claims:
    """The paper's claims, evaluated on the results (PASS/FAIL with numbers)."""
    input:
        fig2="results/pm_gpc/fig2/band_widths.nc",
    output:
        "results/claims/pm_gpc.json",
    log:
        "logs/claims/pm_gpc.log",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        scale=SCALE,
        seed=SEED,
        cfg=PMG,
    script:
        "../scripts/pm_gpc_claims.py"
