# Murray & Adams (2010): slice sampling covariance hyperparameters, Figure 3.
# Pipeline: data set -> blocks of chains per (data set, method) -> Figure 3 +
# table -> claims.  See gpbayes_repro.experiments.slice_ma.
SMA = config["slice_ma"]
SMA_SET = scale_block("slice_ma")


# the prepared raw data each problem is built from (none: simulated)
SMA_SOURCES = {"ionosphere": "ionosphere", "mining": "coal"}


SLICE_MA_CHAIN_FILES = [
    f"results/slice/chains/{ds}_{m}_block{b}.nc"
    for ds in SMA["datasets"]
    for m in SMA["methods"][ds]
    for b in range(n_blocks(SMA_SET["n_chains"], SMA_SET["chains_per_job"]))
]
# what `rule all` needs from this file (rules/common.smk: out += SLICE_MA_TARGETS)
SLICE_MA_TARGETS = [
    "figures/slice/fig3.pdf",
    "results/slice/fig3.csv",
    "results/claims/slice_ma.json",
]
# each rule receives only the config it uses, so that editing e.g. the claims'
# thresholds does not re-run the chains
SMA_MODEL_CFG = {
    k: SMA[k]
    for k in ("nugget", "max_noise_ratio", "root", "priors", "n_latent_updates")
}
# DIAGNOSTIC, opt-in (not in `rule all`): Ionosphere on the target of Murray's
# released code (NOT the posterior) beside Fig. 3's chains on the correct one
SLICE_MA_RELEASED_TARGET = "results/slice/released_target.csv"
# the same methods' chains on the correct target (Fig. 3's files, not re-run)
SMA_IONO_CHAIN_FILES = [
    f"results/slice/chains/ionosphere_{m}_block{b}.nc"
    for m in SMA["released_target"]["methods"]
    for b in range(n_blocks(SMA_SET["n_chains"], SMA_SET["chains_per_job"]))
]
SLICE_MA_RELEASED_CHAIN_FILES = [
    f"results/slice/released/chains/ionosphere_{m}_block{b}.nc"
    for m in SMA["released_target"]["methods"]
    for b in range(n_blocks(SMA_SET["n_chains"], SMA_SET["chains_per_job"]))
]


rule slice_ma_data:
    """One problem of M&A Sec. 5 at the configured scale (Redwoods: a labelled stand-in)."""
    input:
        lambda wc: (
            [f"{PROCESSED}/{SMA_SOURCES[wc.dataset]}.nc"]
            if wc.dataset in SMA_SOURCES
            else []
        ),
    output:
        "results/slice/data/{dataset}.nc",
    log:
        "logs/slice/data/{dataset}.log",
    benchmark:
        "benchmarks/slice_ma_data/{dataset}.tsv"
    wildcard_constraints:
        dataset="ionosphere|synthetic|mining|redwoods_standin",
    priority: job_priority("slice_ma_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        cfg=lambda wc: {k: SMA[k] for k in (wc.dataset,) if k in SMA},
        settings=lambda wc: sma_settings(wc.dataset),
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/slice_ma_data.py"


rule slice_ma_chains:
    """A block of chains of one representation on one data set (slice sweeps + 10 ELL-SS)."""
    input:
        "results/slice/data/{dataset}.nc",
    output:
        "results/slice/chains/{dataset}_{method}_block{block}.nc",
    log:
        "logs/slice/chains/{dataset}_{method}_block{block}.log",
    benchmark:
        "benchmarks/slice_ma_chains/{dataset}_{method}_block{block}.tsv"
    wildcard_constraints:
        dataset="ionosphere|synthetic|mining|redwoods_standin",
        method="fixed|prior-white|surr-site|surr-taylor|post-site|post-taylor",
        block="[0-9]+",
    priority: job_priority("slice_ma_chains")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg=SMA_MODEL_CFG,
        settings=lambda wc: sma_settings(wc.dataset, wc.block),
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/slice_ma_chains.py"


rule slice_ma_fig3:
    """M&A Fig. 3: effective samples per likelihood evaluation / covariance construction / second."""
    input:
        chains=SLICE_MA_CHAIN_FILES,
    output:
        figure=report(
            "figures/slice/fig3.pdf",
            caption="../report/slice_ma_fig3.rst",
            category="Murray & Adams 2010",
        ),
        table=report(
            "results/slice/fig3.csv",
            caption="../report/slice_ma_table.rst",
            category="Murray & Adams 2010",
        ),
        chains="results/slice/efficiency_per_chain.csv",
        convergence="results/slice/convergence.csv",
    log:
        "logs/slice/fig3.log",
    benchmark:
        "benchmarks/slice_ma_fig3/fig3.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        scale=SCALE,
    script:
        "../scripts/slice_ma_fig3.py"


checkpoint slice_ma_gate_plan:
    """Which chains the claims' gate needs longer: the groups an interval verdict rests on that are
    not converged (issue 26 section 3); none when every verdict already rests on converged chains.
    """
    input:
        table="results/slice/fig3.csv",
        chains="results/slice/efficiency_per_chain.csv",
        convergence="results/slice/convergence.csv",
        data=expand("results/slice/data/{ds}.nc", ds=SMA["datasets"]),
    output:
        "results/slice/gate_plan.json",
    log:
        "logs/slice/gate_plan.log",
    benchmark:
        "benchmarks/slice_ma_gate_plan/gate_plan.tsv"
    priority: job_priority("slice_ma_gate_plan")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        claims=SMA["claims"],
        seed=SEED,
    script:
        "../scripts/slice_ma_gate_plan.py"


rule slice_ma_extend:
    """Every chain of one (data set, method) again, run on until converged (R-hat < 1.05, bulk ESS > 100)
    or the budget; the first n_draws of each chain are Fig. 3's chain, bit for bit."""
    input:
        "results/slice/data/{dataset}.nc",
    output:
        "results/slice/extended/{dataset}_{method}.nc",
    log:
        "logs/slice/extended/{dataset}_{method}.log",
    benchmark:
        "benchmarks/slice_ma_extend/{dataset}_{method}.tsv"
    wildcard_constraints:
        dataset="ionosphere|synthetic|mining|redwoods_standin",
        method="fixed|prior-white|surr-site|surr-taylor|post-site|post-taylor",
    priority: job_priority("slice_ma_extend")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg=SMA_MODEL_CFG,
        settings=lambda wc: {
            k: SMA_SET[k] for k in ("n_chains", "chains_per_job", wc.dataset)
        },
        ext=SMA["extension"],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/slice_ma_extend.py"


# Claim 2 over draws of the paper's synthetic generator (issue 26 section 4): draw 0 is Fig. 3's
# data set; each look adds draws_per_look draws (surr-site and post-site chains on each) until the
# Bonferroni-over-looks interval decides or max_looks are spent (0: only Fig. 3's draw).
SMA_DRAWS = SMA_SET.get("synthetic_draws") or {"max_looks": 0}
# the looks' directory keyed by the design (common.smk: design_key)
SMA_DRAWS_LOOK_DIR = f"results/slice/draws/looks-{design_key(SMA_DRAWS, SMA['claims']['surr_post_factor'])}"
SMA_DRAW_SETTINGS = {
    "n_chains": SMA_DRAWS.get("n_chains", 1),
    "chains_per_job": SMA_DRAWS.get("n_chains", 1),
    "synthetic": {
        "n": SMA_SET["synthetic"]["n"],
        "n_burn": SMA_DRAWS.get("n_burn", 0),
        "n_draws": SMA_DRAWS.get("n_draws", 1),
    },
}


rule slice_ma_draw_chains:
    """Chains of surr-site or post-site on one further draw of M&A's synthetic generator (claim 2)."""
    output:
        "results/slice/draws/synthetic_draw{draw}_{method}.nc",
    log:
        "logs/slice/draws/synthetic_draw{draw}_{method}.log",
    benchmark:
        "benchmarks/slice_ma_draw_chains/synthetic_draw{draw}_{method}.tsv"
    wildcard_constraints:
        draw="[1-9][0-9]*",
        method="surr-site|post-site",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg=SMA_MODEL_CFG,
        data_cfg={"synthetic": SMA["synthetic"]},
        settings=SMA_DRAW_SETTINGS,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/slice_ma_draw_chains.py"


checkpoint slice_ma_draws_look:
    """Look {look} of claim 2's sequential design: the t interval over the draws so far (level
    1 - 0.05 / max_looks), decided or not; the next look is asked for only if not."""
    input:
        surr_site=sma_fig3_files("synthetic", "surr-site"),
        post_site=sma_fig3_files("synthetic", "post-site"),
        draw_surr=lambda wc: [
            f"results/slice/draws/synthetic_draw{k}_surr-site.nc"
            for k in range(
                1, 1 + (int(wc.look) + 1) * SMA_DRAWS.get("draws_per_look", 0)
            )
        ],
        draw_post=lambda wc: [
            f"results/slice/draws/synthetic_draw{k}_post-site.nc"
            for k in range(
                1, 1 + (int(wc.look) + 1) * SMA_DRAWS.get("draws_per_look", 0)
            )
        ],
    output:
        f"{SMA_DRAWS_LOOK_DIR}/look{{look}}.json",
    log:
        "logs/slice/draws/look{look}.log",
    benchmark:
        "benchmarks/slice_ma_draws_look/look{look}.tsv"
    wildcard_constraints:
        look="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        max_looks=SMA_DRAWS["max_looks"],
        bounds=[
            1.0 / SMA["claims"]["surr_post_factor"],
            SMA["claims"]["surr_post_factor"],
        ],
    script:
        "../scripts/slice_ma_draws_look.py"


rule slice_ma_claims:
    """The four claims on Figure 3 (PASS/FAIL with the numbers); a verdict the gate blocked is
    re-decided on the extended chains and kept only if they confirm it."""
    input:
        table="results/slice/fig3.csv",
        chains="results/slice/efficiency_per_chain.csv",
        convergence="results/slice/convergence.csv",
        data=expand("results/slice/data/{ds}.nc", ds=SMA["datasets"]),
        plan="results/slice/gate_plan.json",
        extended=slice_ma_extended,
        draws=slice_ma_draws_final,
    output:
        "results/claims/slice_ma.json",
    log:
        "logs/claims/slice_ma.log",
    benchmark:
        "benchmarks/slice_ma_claims/slice_ma.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        # the look design it was planned from (a changed design re-runs it: common.smk design_key)
        design=SMA_DRAWS_LOOK_DIR,
        claims=SMA["claims"],
        draws=SMA_DRAWS,
        scale=SCALE,
        seed=SEED,
    script:
        "../scripts/slice_ma_claims.py"


rule slice_ma_released_chains:
    """DIAGNOSTIC: a block of Ionosphere chains on the released code's target, p(theta, f | y) prod S_ii^-1/2."""
    input:
        "results/slice/data/ionosphere.nc",
    output:
        "results/slice/released/chains/ionosphere_{method}_block{block}.nc",
    log:
        "logs/slice/released/chains/ionosphere_{method}_block{block}.log",
    benchmark:
        "benchmarks/slice_ma_released_chains/ionosphere_{method}_block{block}.tsv"
    wildcard_constraints:
        method="fixed|prior-white|surr-site|post-site",
        block="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg={**SMA_MODEL_CFG, "target": "released-code"},
        settings=lambda wc: sma_settings("ionosphere", wc.block),
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/slice_ma_chains.py"


rule slice_ma_released_target:
    """DIAGNOSTIC table: sigma_f's posterior and Fig. 3's efficiency on both targets (Ionosphere)."""
    input:
        correct=SMA_IONO_CHAIN_FILES,
        released=SLICE_MA_RELEASED_CHAIN_FILES,
    output:
        table=report(
            SLICE_MA_RELEASED_TARGET,
            caption="../report/slice_ma_released_target.rst",
            category="Murray & Adams 2010",
        ),
    log:
        "logs/slice/released_target.log",
    benchmark:
        "benchmarks/slice_ma_released_target/released_target.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        seed=SEED,
        scale=SCALE,
    script:
        "../scripts/slice_ma_released_target.py"
