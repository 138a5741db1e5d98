# Gadd, Wade, Shah & Grammatopoulos: pseudo-marginal inference for the
# supervised GPLVM, Sec. 6.1 (sinusoidal simulation).  Pipeline: data per case
# -> type-II ML -> blocks of pseudo-marginal chains -> binned predictive
# densities -> Fig. 1, Fig. 2, Table 1 -> claims.  The EPDS case study
# (Sec. 6.2) uses private data and is not reproduced.
# See gpbayes_repro.experiments.gplvm.
GPLVM = config["gplvm"]
GPLVM_SET = scale_block("gplvm")
GPLVM_N_BLOCKS = n_blocks(GPLVM_SET["n_chains"], GPLVM_SET["chains_per_job"])
GPLVM_CASE_RE = "|".join(GPLVM["cases"])

# what `rule all` needs from this file (rules/common.smk: out += GPLVM_TARGETS)
GPLVM_TARGETS = [
    "figures/gplvm/fig1.pdf",
    "figures/gplvm/fig2.pdf",
    "results/gplvm/table1.csv",
    "results/gplvm/posterior_shape.csv",
    "results/gplvm/chain_sets.csv",
    "results/gplvm/ml_restarts.csv",
    "figures/gplvm/ml_restarts.pdf",
    "results/claims/gplvm.json",
]
# each rule receives only the config it uses, so that editing e.g. the claims'
# thresholds or the prediction grid does not re-run the chains
GPLVM_MODEL_KEYS = ("latent_dim", "latent_jitter", "priors", "ml")
GPLVM_CHAIN_KEYS = GPLVM_MODEL_KEYS + (
    "blocks",
    "warm_start",
    "vb_start",
    "adapt_epsilon",
    "initial_proposal_sd",
    "start_noise_sd",
)
GPLVM_ML_SET = {k: GPLVM_SET[k] for k in ("n_inducing", "ml_restarts", "ml_max_iter")}
# the restart study: ML fit settings + what the ML predictive's NMSE needs
GPLVM_RESTART_SET = {
    k: GPLVM_SET[k]
    for k in (
        "n_inducing",
        "ml_max_iter",
        "n_ml_starts",
        "ml_predictive_samples",
        "n_x_test",
        "n_y_bins",
    )
}
GPLVM_CHAIN_SET = {
    k: GPLVM_SET[k]
    for k in (
        "n_chains",
        "chains_per_job",
        "n_burn",
        "n_draws",
        "adapt_start",
        "n_imp",
        "vb_max_iter",
        "n_inducing",
    )
}
# the correlated pseudo-marginal set: the same settings with its own length and Q
# (gpbayes_repro.experiments.gplvm.chain_set_settings)
GPLVM_CPM_CHAIN_SET = {
    **GPLVM_CHAIN_SET,
    **{k: GPLVM_SET[k] for k in ("cpm_n_burn", "cpm_n_draws", "cpm_n_imp")},
}
# the exact joint sampler's set: its length, the chain counts and M (gplvm.joint has its moves)
GPLVM_JOINT_CHAIN_SET = {
    k: GPLVM_SET[k]
    for k in (
        "n_chains",
        "chains_per_job",
        "joint_n_burn",
        "joint_n_draws",
        "joint_thin",
        "n_inducing",
    )
}
GPLVM_JOINT_KEYS = GPLVM_MODEL_KEYS + ("joint", "start_noise_sd")
# the NUTS set of the same joint posterior (gplvm.joint_nuts), in the cases the scale lists
GPLVM_JOINT_NUTS_CASES = list(GPLVM_SET["joint_nuts_cases"])
_unknown = sorted(set(GPLVM_JOINT_NUTS_CASES) - set(GPLVM["cases"]))
if _unknown:
    raise ValueError(
        f"gplvm.scales.{SCALE}.joint_nuts_cases: unknown cases {_unknown}; the cases are {GPLVM['cases']}"
    )
GPLVM_JOINT_NUTS_CHAIN_SET = {
    k: GPLVM_SET[k]
    for k in (
        "n_chains",
        "chains_per_job",
        "joint_nuts_n_burn",
        "joint_nuts_n_draws",
        "n_inducing",
    )
}
GPLVM_JOINT_NUTS_KEYS = GPLVM_MODEL_KEYS + ("joint_nuts", "start_noise_sd")


GPLVM_PREDICT_SET = {
    k: GPLVM_SET[k]
    for k in (
        "n_inducing",
        "n_predictive_draws",
        "ml_predictive_samples",
        "n_x_test",
        "n_y_bins",
    )
}


rule gplvm_data:
    """Sinusoidal data of one case (Gadd et al. eq. 9): N inputs on [0, 4 pi], six noisy outputs."""
    output:
        "results/gplvm/data/{case}.nc",
    log:
        "logs/gplvm/data/{case}.log",
    benchmark:
        "benchmarks/gplvm_data/{case}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
    priority: job_priority("gplvm_data")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(500),
        runtime=runtime_min(5),
    params:
        simulation=GPLVM["simulation"],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_data.py"


rule gplvm_ml:
    """Type-II (variational) maximum likelihood fit of one case: the paper's ML baseline and chain start."""
    input:
        "results/gplvm/data/{case}.nc",
    output:
        "results/gplvm/ml/{case}.nc",
    log:
        "logs/gplvm/ml/{case}.log",
    benchmark:
        "benchmarks/gplvm_ml/{case}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
    priority: job_priority("gplvm_ml")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(30),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_MODEL_KEYS},
        settings=GPLVM_ML_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_ml.py"


rule gplvm_ml_restarts:
    """Type-II ML of one case from seeded random initialisations (restart 0 = the ML estimate above): bound, convergence, NMSE per feature."""
    input:
        data="results/gplvm/data/{case}.nc",
        ml="results/gplvm/ml/{case}.nc",
    output:
        "results/gplvm/ml_restarts/{case}.csv",
    log:
        "logs/gplvm/ml_restarts/{case}.log",
    benchmark:
        "benchmarks/gplvm_ml_restarts/{case}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
    priority: job_priority("gplvm_ml_restarts")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(60),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_MODEL_KEYS + ("prediction", "ml_restarts")},
        settings=GPLVM_RESTART_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_ml_restarts.py"


rule gplvm_chains:
    """A block of pseudo-marginal chains (Alg. 2 + Alg. 3) of one case, started at the ML estimate plus noise."""
    input:
        data="results/gplvm/data/{case}.nc",
        ml="results/gplvm/ml/{case}.nc",
    output:
        "results/gplvm/chains/{case}_block{block}.nc",
    log:
        "logs/gplvm/chains/{case}_block{block}.log",
    benchmark:
        "benchmarks/gplvm_chains/{case}_block{block}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
        block="[0-9]+",
    priority: job_priority("gplvm_chains")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_CHAIN_KEYS},
        settings=GPLVM_CHAIN_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_chains.py"


rule gplvm_chains_cpm:
    """A block of correlated pseudo-marginal chains (Alg. 2 + Alg. 3, importance normals moved by Crank-Nicolson with correlation gplvm.cpm.rho; Deligiannidis et al. 2018) of one case: the second chain set of the same posterior."""
    input:
        data="results/gplvm/data/{case}.nc",
        ml="results/gplvm/ml/{case}.nc",
    output:
        "results/gplvm/chains_cpm/{case}_block{block}.nc",
    log:
        "logs/gplvm/chains_cpm/{case}_block{block}.log",
    benchmark:
        "benchmarks/gplvm_chains_cpm/{case}_block{block}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
        block="[0-9]+",
    priority: job_priority("gplvm_chains_cpm")
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_CHAIN_KEYS},
        settings=GPLVM_CPM_CHAIN_SET,
        rho=GPLVM["cpm"]["rho"],
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_chains.py"


rule gplvm_chains_joint:
    """A block of chains of the exact joint sampler of (psi, Z) (gb.methods.GPLVMJointGibbs; not in the paper) of one case, started at the ML restarts (best bound first) plus noise: the third chain set of the same posterior."""
    input:
        data="results/gplvm/data/{case}.nc",
        ml="results/gplvm/ml/{case}.nc",
        restarts="results/gplvm/ml_restarts/{case}.csv",
    output:
        "results/gplvm/chains_joint/{case}_block{block}.nc",
    log:
        "logs/gplvm/chains_joint/{case}_block{block}.log",
    benchmark:
        "benchmarks/gplvm_chains_joint/{case}_block{block}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
        block="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_JOINT_KEYS},
        settings=GPLVM_JOINT_CHAIN_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_chains_joint.py"


rule gplvm_chains_joint_nuts:
    """A block of chains of NUTS on the joint (psi, Z) with latent rotations (gb.methods.GPLVMJointNUTS; not in the paper) of one case listed in joint_nuts_cases, started where the joint set's chains start: the fourth chain set of the same posterior."""
    input:
        data="results/gplvm/data/{case}.nc",
        ml="results/gplvm/ml/{case}.nc",
        restarts="results/gplvm/ml_restarts/{case}.csv",
    output:
        "results/gplvm/chains_joint_nuts/{case}_block{block}.nc",
    log:
        "logs/gplvm/chains_joint_nuts/{case}_block{block}.log",
    benchmark:
        "benchmarks/gplvm_chains_joint_nuts/{case}_block{block}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
        block="[0-9]+",
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(1440),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_JOINT_NUTS_KEYS},
        settings=GPLVM_JOINT_NUTS_CHAIN_SET,
        chain_set="joint_nuts",
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_chains_joint.py"


rule gplvm_evaluate:
    """Binned predictive densities of every feature (truth, marginalised, ML), their NMSE and posterior shape, from the first chain set (paper's sampler, then correlated PM, then the exact joint sampler) that passes the convergence gate."""
    input:
        data="results/gplvm/data/{case}.nc",
        ml="results/gplvm/ml/{case}.nc",
        chains=expand(
            "results/gplvm/chains/{{case}}_block{b}.nc", b=range(GPLVM_N_BLOCKS)
        ),
        chains_cpm=expand(
            "results/gplvm/chains_cpm/{{case}}_block{b}.nc", b=range(GPLVM_N_BLOCKS)
        ),
        chains_joint=expand(
            "results/gplvm/chains_joint/{{case}}_block{b}.nc", b=range(GPLVM_N_BLOCKS)
        ),
        chains_joint_nuts=gplvm_joint_nuts_chains,
    output:
        density="results/gplvm/predictive/{case}.nc",
        shape="results/gplvm/predictive/{case}_shape.csv",
        chain_sets="results/gplvm/predictive/{case}_chain_sets.csv",
    log:
        "logs/gplvm/predictive/{case}.log",
    benchmark:
        "benchmarks/gplvm_evaluate/{case}.tsv"
    wildcard_constraints:
        case=GPLVM_CASE_RE,
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(2000),
        runtime=runtime_min(30),
    params:
        cfg={k: GPLVM[k] for k in GPLVM_MODEL_KEYS + ("prediction",)},
        settings=GPLVM_PREDICT_SET,
        seed=SEED,
        scale=WORK_SCALE,
    script:
        "../scripts/gplvm_evaluate.py"


rule gplvm_table1:
    """Table 1: NMSE (%) of the binned predictive density, marginalised vs ML, beside the paper's values."""
    input:
        predictive=expand("results/gplvm/predictive/{c}.nc", c=GPLVM["cases"]),
        shape=expand("results/gplvm/predictive/{c}_shape.csv", c=GPLVM["cases"]),
        chain_sets=expand(
            "results/gplvm/predictive/{c}_chain_sets.csv", c=GPLVM["cases"]
        ),
        restarts=expand("results/gplvm/ml_restarts/{c}.csv", c=GPLVM["cases"]),
        paper=f"{RESOURCES}/gadd_table1.csv",
    output:
        chain_sets="results/gplvm/chain_sets.csv",
        table=report(
            "results/gplvm/table1.csv",
            caption="../report/gplvm_table1.rst",
            category="Gadd et al. (supervised GPLVM)",
        ),
        shape=report(
            "results/gplvm/posterior_shape.csv",
            caption="../report/gplvm_shape.rst",
            category="Gadd et al. (supervised GPLVM)",
        ),
        restarts=report(
            "results/gplvm/ml_restarts.csv",
            caption="../report/gplvm_ml_restarts.rst",
            category="Gadd et al. (supervised GPLVM)",
        ),
    log:
        "logs/gplvm/table1.log",
    benchmark:
        "benchmarks/gplvm_table1/table1.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    script:
        "../scripts/gplvm_table1.py"


rule gplvm_ml_restarts_figure:
    """ML NMSE per feature over the random restarts (colour = final bound), best-bound restart and marginalised NMSE."""
    input:
        restarts="results/gplvm/ml_restarts.csv",
        table="results/gplvm/table1.csv",
    output:
        report(
            "figures/gplvm/ml_restarts.pdf",
            caption="../report/gplvm_ml_restarts_fig.rst",
            category="Gadd et al. (supervised GPLVM)",
        ),
    log:
        "logs/gplvm/ml_restarts_fig.log",
    benchmark:
        "benchmarks/gplvm_ml_restarts_figure/ml_restarts_fig.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/gplvm_ml_restarts_fig.py"


rule gplvm_fig1:
    """Fig. 1: joint posteriors of hyperparameter pairs per case, ML estimate marked."""
    input:
        ml=expand("results/gplvm/ml/{c}.nc", c=GPLVM["cases"]),
        chains=expand(
            "results/gplvm/chains/{c}_block{b}.nc",
            c=GPLVM["cases"],
            b=range(GPLVM_N_BLOCKS),
        ),
    output:
        report(
            "figures/gplvm/fig1.pdf",
            caption="../report/gplvm_fig1.rst",
            category="Gadd et al. (supervised GPLVM)",
        ),
    log:
        "logs/gplvm/fig1.log",
    benchmark:
        "benchmarks/gplvm_fig1/fig1.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/gplvm_fig1.py"


rule gplvm_fig2:
    """Fig. 2: heat maps of the predictive density of feature 1, Case 3 (truth, marginalised, ML)."""
    input:
        "results/gplvm/predictive/case3.nc",
    output:
        report(
            "figures/gplvm/fig2.pdf",
            caption="../report/gplvm_fig2.rst",
            category="Gadd et al. (supervised GPLVM)",
        ),
    log:
        "logs/gplvm/fig2.log",
    benchmark:
        "benchmarks/gplvm_fig2/fig2.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        scale=SCALE,
    script:
        "../scripts/gplvm_fig2.py"


rule gplvm_claims:
    """Claims 1-3: 1-2 on the best-bound ML restart with jackknife t intervals over chains and the convergence gate; 3 from the posterior-shape table; a gated record gives the measured R-hat / ESS trend and the length that would pass."""
    input:
        table="results/gplvm/table1.csv",
        shape="results/gplvm/posterior_shape.csv",
        chain_sets="results/gplvm/chain_sets.csv",
        predictive=expand("results/gplvm/predictive/{c}.nc", c=GPLVM["cases"]),
    output:
        "results/claims/gplvm.json",
    log:
        "logs/claims/gplvm.log",
    benchmark:
        "benchmarks/gplvm_claims/gplvm.tsv"
    conda:
        "../envs/gpbayes.yaml"
    threads: 1
    resources:
        mem_mb=mem(1000),
        runtime=runtime_min(5),
    params:
        claims=GPLVM["claims"],
        scale=SCALE,
        seed=SEED,
    script:
        "../scripts/gplvm_claims.py"
