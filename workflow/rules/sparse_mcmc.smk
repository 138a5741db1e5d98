# Hensman, Matthews, Filippone & Ghahramani (2015): MCMC for variationally
# sparse GPs (poster).  Pipeline: data split -> Gaussian approximation (SVGP,
# Z optimised) per (problem, kernel, M) -> blocks of sampler chains per
# (study, kernel, sampler, M) -> held-out predictions -> M-sweep figure, Cox
# intensity figure, PSRF figure, predictive table -> claims.
# See gpbayes_repro.experiments.sparse_mcmc.
SP = config["sparse_mcmc"]
SP_SET = scale_block("sparse_mcmc")
SP_SOURCES = {"image": "image_stand_in", "coal": "coal", "mnist": "mnist_subset"}
SP_STUDY_PROBLEM = {s: SP["studies"][s]["problem"] for s in SP["studies"]}

SPARSE_MCMC_PREDICT_FILES = [
    f"results/sparse/predict/{st}/{k}_{smp}_M{m}.csv"
    for st in ("sweep", "coal", "mnist")
    for k in SP["studies"][st]["kernels"]
    for smp in SP["studies"][st]["samplers"]
    for m in SP_SET["runs"][st]["M"]
]
SPARSE_MCMC_SWEEP_FILES = [
    f"results/sparse/predict/sweep/{k}_{smp}_M{m}.csv"
    for k in SP["studies"]["sweep"]["kernels"]
    for smp in SP["studies"]["sweep"]["samplers"]
    for m in SP_SET["runs"]["sweep"]["M"]
]
SPARSE_MCMC_COAL_M = SP_SET["runs"]["coal"]["M"][-1]
SPARSE_MCMC_COAL_KERNEL = SP["studies"]["coal"]["kernels"][0]
SPARSE_MCMC_COAL_SAMPLER = SP["studies"]["coal"]["samplers"][0]
SPARSE_MCMC_PSRF_CHAINS = [
    f"results/sparse/chains/psrf/{k}_{smp}_M{m}_block{b}.nc"
    for k in SP["studies"]["psrf"]["kernels"]
    for smp in SP["studies"]["psrf"]["samplers"]
    for m in SP_SET["runs"]["psrf"]["M"][-1:]
    for b in range(
        n_blocks(
            SP_SET["runs"]["psrf"]["n_chains"], SP_SET["runs"]["psrf"]["chains_per_job"]
        )
    )
]
# what `rule all` needs from this file (rules/common.smk: out += SPARSE_MCMC_TARGETS)
SPARSE_MCMC_TARGETS = [
    "figures/sparse/sweep.pdf",
    "results/sparse/sweep.csv",
    "figures/sparse/coal_intensity.pdf",
    "results/sparse/coal_intensity.csv",
    "figures/sparse/psrf.pdf",
    "results/sparse/psrf_summary.csv",
    "results/sparse/predictive.csv",
    "results/sparse/equivalence.csv",
    "results/claims/sparse_mcmc.json",
]


rule sparse_mcmc_data:
    """Train/test parts of one problem (image and MNIST: labelled stand-ins; coal: binned events, held-out bins)."""
    input:
        lambda wc: f"{PROCESSED}/{SP_SOURCES[wc.problem]}.nc",
    output:
        "results/sparse/data/{problem}.nc",
    log:
        "logs/sparse/data/{problem}.log",
    benchmark:
        "benchmarks/sparse_mcmc_data/{problem}.tsv"
    wildcard_constraints:
        problem="image|coal|mnist",
    priority: job_priority("sparse_mcmc_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        cfg=lambda wc: (
            {"coal": {k: SP["coal"][k] for k in ("heldout_every", "years_per_unit")}}
            if wc.problem == "coal"
            else {}
        ),
        settings=lambda wc: {wc.problem: SP_SET[wc.problem]},
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/sparse_mcmc_data.py"


rule sparse_mcmc_svgp:
    """The Gaussian approximation (SVGP, MAP-II psi) with M inducing inputs Z optimised; initialises the sampler."""
    input:
        "results/sparse/data/{problem}.nc",
    output:
        "results/sparse/svgp/{problem}_{kernel}_M{M}.nc",
    log:
        "logs/sparse/svgp/{problem}_{kernel}_M{M}.log",
    benchmark:
        "benchmarks/sparse_mcmc_svgp/{problem}_{kernel}_M{M}.tsv"
    wildcard_constraints:
        problem="image|coal|mnist",
        kernel="rbf|ard",
        M="[0-9]+",
    priority: job_priority("sparse_mcmc_svgp")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(120),
    params:
        cfg=lambda wc: {k: SP[k] for k in ("n_quad", "jitter", wc.problem)},
        maxiter=SP_SET["svgp_maxiter"],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/sparse_mcmc_svgp.py"


rule sparse_mcmc_chains:
    """A block of chains of joint HMC over (v, psi) or the Gibbs baseline, Z fixed at the Gaussian fit's."""
    input:
        data=lambda wc: f"results/sparse/data/{SP_STUDY_PROBLEM[wc.study]}.nc",
        fit=lambda wc: f"results/sparse/svgp/{SP_STUDY_PROBLEM[wc.study]}_{wc.kernel}_M{wc.M}.nc",
    output:
        "results/sparse/chains/{study}/{kernel}_{sampler}_M{M}_block{block}.nc",
    log:
        "logs/sparse/chains/{study}/{kernel}_{sampler}_M{M}_block{block}.log",
    benchmark:
        "benchmarks/sparse_mcmc_chains/chains_{study}_{kernel}_{sampler}_M{M}_block{block}.tsv"
    wildcard_constraints:
        study="sweep|psrf|coal|mnist",
        kernel="rbf|ard",
        sampler="joint|gibbs",
        M="[0-9]+",
        block="[0-9]+",
    priority: job_priority("sparse_mcmc_chains")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg=lambda wc: {
            k: SP[k] for k in ("n_quad", "jitter", "hmc", SP_STUDY_PROBLEM[wc.study])
        },
        run=lambda wc: SP_SET["runs"][wc.study],
        problem=lambda wc: SP_STUDY_PROBLEM[wc.study],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/sparse_mcmc_chains.py"


rule sparse_mcmc_predict:
    """Held-out accuracy and log predictive density, sampler vs Gaussian approximation, one (study, kernel, M)."""
    input:
        data=lambda wc: f"results/sparse/data/{SP_STUDY_PROBLEM[wc.study]}.nc",
        fit=lambda wc: f"results/sparse/svgp/{SP_STUDY_PROBLEM[wc.study]}_{wc.kernel}_M{wc.M}.nc",
        chains=lambda wc: [
            f"results/sparse/chains/{wc.study}/{wc.kernel}_{wc.sampler}_M{wc.M}_block{b}.nc"
            for b in range(
                n_blocks(
                    SP_SET["runs"][wc.study]["n_chains"],
                    SP_SET["runs"][wc.study]["chains_per_job"],
                )
            )
        ],
    output:
        "results/sparse/predict/{study}/{kernel}_{sampler}_M{M}.csv",
    log:
        "logs/sparse/predict/{study}/{kernel}_{sampler}_M{M}.log",
    benchmark:
        "benchmarks/sparse_mcmc_predict/predict_{study}_{kernel}_{sampler}_M{M}.tsv"
    wildcard_constraints:
        study="sweep|psrf|coal|mnist",
        kernel="rbf|ard",
        sampler="joint|gibbs",
        M="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(30),
    params:
        cfg=lambda wc: {
            k: SP[k] for k in ("n_quad", "jitter", SP_STUDY_PROBLEM[wc.study])
        },
        predict=SP["predict"],
        problem=lambda wc: SP_STUDY_PROBLEM[wc.study],
    script:
        "../scripts/sparse_mcmc_predict.py"


rule sparse_mcmc_tables:
    """Effect of M (image stand-in) figure + CSV, and the predictive table of every problem."""
    input:
        sweep=SPARSE_MCMC_SWEEP_FILES,
        predict=SPARSE_MCMC_PREDICT_FILES,
    output:
        figure=report(
            "figures/sparse/sweep.pdf",
            caption="../report/sparse_mcmc_sweep.rst",
            category="Hensman et al. 2015",
        ),
        sweep=report(
            "results/sparse/sweep.csv",
            caption="../report/sparse_mcmc_sweep.rst",
            category="Hensman et al. 2015",
        ),
        table=report(
            "results/sparse/predictive.csv",
            caption="../report/sparse_mcmc_predictive.rst",
            category="Hensman et al. 2015",
        ),
    log:
        "logs/sparse/tables.log",
    benchmark:
        "benchmarks/sparse_mcmc_tables/tables.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/sparse_mcmc_tables.py"


rule sparse_mcmc_coal:
    """Posterior intensity of the coal-mining Cox process with credible band, sampler vs Gaussian approximation."""
    input:
        data="results/sparse/data/coal.nc",
        fit=f"results/sparse/svgp/coal_{SPARSE_MCMC_COAL_KERNEL}_M{SPARSE_MCMC_COAL_M}.nc",
        chains=[
            f"results/sparse/chains/coal/{SPARSE_MCMC_COAL_KERNEL}_{SPARSE_MCMC_COAL_SAMPLER}_M{SPARSE_MCMC_COAL_M}_block{b}.nc"
            for b in range(
                n_blocks(
                    SP_SET["runs"]["coal"]["n_chains"],
                    SP_SET["runs"]["coal"]["chains_per_job"],
                )
            )
        ],
    output:
        figure=report(
            "figures/sparse/coal_intensity.pdf",
            caption="../report/sparse_mcmc_coal.rst",
            category="Hensman et al. 2015",
        ),
        table="results/sparse/coal_intensity.csv",
    log:
        "logs/sparse/coal.log",
    benchmark:
        "benchmarks/sparse_mcmc_coal/coal.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(10),
    params:
        cfg={k: SP[k] for k in ("n_quad", "jitter", "coal")},
        predict=SP["predict"],
        kernel=SPARSE_MCMC_COAL_KERNEL,
        seed=SEED,
        scale=SCALE,
    script:
        "../scripts/sparse_mcmc_coal.py"


rule sparse_mcmc_psrf:
    """PSRF evolution of the 20 least efficient traces, joint HMC vs Gibbs, RBF and RBF-ARD."""
    input:
        chains=SPARSE_MCMC_PSRF_CHAINS,
    output:
        figure=report(
            "figures/sparse/psrf.pdf",
            caption="../report/sparse_mcmc_psrf.rst",
            category="Hensman et al. 2015",
        ),
        summary=report(
            "results/sparse/psrf_summary.csv",
            caption="../report/sparse_mcmc_psrf.rst",
            category="Hensman et al. 2015",
        ),
        curves="results/sparse/psrf_curves.csv",
    log:
        "logs/sparse/psrf.log",
    benchmark:
        "benchmarks/sparse_mcmc_psrf/psrf.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(10),
    params:
        psrf=SP["psrf"],
        threshold=SP["claims"]["psrf_threshold"],
        scale=SCALE,
    script:
        "../scripts/sparse_mcmc_psrf.py"


rule sparse_mcmc_equivalence:
    """Claim 1: with Z = X and a Gaussian likelihood the sparse target equals the whitened full-GP joint."""
    input:
        "results/sparse/data/image.nc",
    output:
        "results/sparse/equivalence.csv",
    log:
        "logs/sparse/equivalence.log",
    benchmark:
        "benchmarks/sparse_mcmc_equivalence/equivalence.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        equivalence=SP["equivalence"],
        seed=SEED,
    script:
        "../scripts/sparse_mcmc_equivalence.py"


rule sparse_mcmc_claims:
    """The issue's four claims (PASS/FAIL with the numbers)."""
    input:
        equivalence="results/sparse/equivalence.csv",
        sweep="results/sparse/sweep.csv",
        predict=SPARSE_MCMC_PREDICT_FILES,
        psrf="results/sparse/psrf_summary.csv",
    output:
        "results/claims/sparse_mcmc.json",
    log:
        "logs/claims/sparse_mcmc.log",
    benchmark:
        "benchmarks/sparse_mcmc_claims/sparse_mcmc.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        claims=SP["claims"],
        scale=SCALE,
        seed=SEED,
    script:
        "../scripts/sparse_mcmc_claims.py"
