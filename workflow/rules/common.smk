import json
import math
from pathlib import Path

import yaml

SCALE = config["scale"]


# --- derived scales (decide) ------------------------------------------------------------------
# A scale block may extend another (config: scales.decide = {extends: default, <keys>}); the
# Snakefile resolves it and keeps it apart (SCALE_PLANS: {owner: {scale: block}}, SCALE_BASES:
# {owner: {scale: base}}).  A derived scale runs its base's jobs, more of them: a job whose work
# is the same at both gets the base's settings and `scale` param (WORK_SCALE), so its params equal
# those the base run recorded and Snakemake reuses that run's output (it re-runs a job whose params
# changed: --rerun-triggers, default all).  Only jobs that read an overridden key get the derived
# block; the claims and the figures name the run's scale.
def scale_block(owner, scale=None):
    """The settings block of `owner` ("pm_gpc.tables", "amis", ...) at `scale` (default: the run's)."""
    scale = scale or SCALE
    plans = SCALE_PLANS.get(owner, {})
    if scale in plans:
        return plans[scale]
    node = config
    for key in owner.split("."):
        node = node[key]
    return node["scales"][scale]


def _work_scale():
    """The non-derived scale the run's scale extends (itself when it extends none)."""
    bases = {b[SCALE] for b in SCALE_BASES.values() if SCALE in b}
    if len(bases) > 1:
        raise ValueError(
            f"config: the scale {SCALE!r} extends different scales in different experiments "
            f"({sorted(bases)}); the workflow needs one base scale per derived scale"
        )
    scale, seen = SCALE, []
    while bases:
        scale = bases.pop()
        if scale in seen:
            raise ValueError(
                f"config: derived scales extend each other: {seen + [scale]}"
            )
        seen.append(scale)
        bases = {b[scale] for b in SCALE_BASES.values() if scale in b}
    return scale


WORK_SCALE = _work_scale()


def work_block(owner):
    """The settings block of `owner` at WORK_SCALE (the base of a derived scale)."""
    return scale_block(owner, WORK_SCALE)


def design_key(*parts):
    """A short hash of a sequential design's settings, for the directory of its looks' checkpoint files.

    Snakemake's ``checkpoints.<rule>.get()`` returns a checkpoint's output whenever the file exists, even when
    the job is about to re-run (its params changed): an input function reading it then plans from the old
    design's look.  A decide run on top of a default run did exactly that (it ran the first look and stopped).
    With the design's settings in the path, a changed design has no look files yet, so each look is planned
    from its own checkpoint.  (A change of the look code alone is not covered: Snakemake re-runs the job, but
    an input function may already have read the old file; re-run the design's final rule with -R.)
    """
    import hashlib

    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def job_settings(owner, ignoring=()):
    """The settings a job gets: the base scale's block when the run's block differs from it only in
    `ignoring` (keys the job does not read), so that the job's params equal the base run's and its
    output is reused; else the run's block."""
    run, work = scale_block(owner), work_block(owner)
    strip = lambda d: {k: v for k, v in d.items() if k not in ignoring}
    return work if strip(run) == strip(work) else run


def job_count(block, run_n, work_n, per_job):
    """The total count (chains, replicates) a block job is given: the base scale's when job `block`
    holds the same indices under both totals (its work and params then equal the base run's), else
    the run's (gpbayes_repro.indices.same_block)."""
    from gpbayes_repro.indices import same_block

    return work_n if same_block(block, work_n, run_n, per_job) else run_n


# --- job order (docs/workflow.md, "Job order") ---------------------------------------------------
# Snakemake starts the ready jobs of highest `priority:` first (the greedy scheduler: priority, then input
# size).  Long jobs first (longest-processing-time order), so that no long job starts late and runs alone
# at the end of a run while the other cores idle (issue 42: the foundation's one 400-CPU-s chain job ran
# at the tail of `snakemake --cores 2`).  Tiers by the measured CPU-s of ONE job of the rule in a default
# run (benchmarks/results/ops_profile_default.csv: cpu_s / jobs); rules not listed (< 5 CPU-s per job:
# merges, looks, figures, claims) keep Snakemake's default 0.  Priorities change the order only, never a
# job's work or its numbers.
JOB_PRIORITY = {
    "regression_mh_chains": 50,  # 410 CPU-s, one job (its chains share the stop rule: one job)
    "gplvm_chains": 40,  # 94 per job
    "gplvm_chains_cpm": 40,  # 69
    "slice_ma_extend": 40,  # 49, after the gate plan (a checkpoint)
    "amis_classification_reference": 30,  # 35
    "slice_ma_chains": 30,  # 32
    "sparse_mcmc_chains": 20,  # 22
    "amis_reference": 20,  # 17
    "gplvm_ml_restarts": 20,  # 16
    "pm_gpc_real_chains": 20,  # 16
    "amis_run": 10,  # 9.6
    "pm_gpc_fig2_grid": 10,  # 9.0
    "pm_gpc_table_chains": 10,  # 7.4
    "amis_claims": 10,  # 5.1
    "pm_gpc_capacity_split": 10,  # 5.0
}
# a short job whose output a long job needs runs at the long job's priority: Snakemake does not pass a
# priority on to a job's inputs, so the long job would otherwise wait for its inputs behind shorter work
FEEDS = {
    "prepare_data": "regression_mh_chains",  # every data set (< 1 CPU-s per job); housing feeds the MH chains
    "regression_ml": "regression_mh_chains",
    "gplvm_data": "gplvm_chains",
    "gplvm_ml": "gplvm_chains",
    "slice_ma_data": "slice_ma_extend",
    "slice_ma_gate_plan": "slice_ma_extend",
    "amis_setup": "amis_classification_reference",
    "sparse_mcmc_data": "sparse_mcmc_chains",
    "sparse_mcmc_svgp": "sparse_mcmc_chains",
    "pm_gpc_real_data": "pm_gpc_real_chains",
    "pm_gpc_fig2_data": "pm_gpc_fig2_grid",
    "pm_gpc_table_data": "pm_gpc_table_chains",
    "pm_gpc_table_proposal": "pm_gpc_table_chains",
}


def job_priority(rule_name):
    """The `priority:` of a rule's jobs: its tier in JOB_PRIORITY, or that of the long job it feeds."""
    return JOB_PRIORITY.get(FEEDS.get(rule_name, rule_name), 0)


# files shipped with the workflow (the papers' published tables), found wherever it runs (--directory)
RESOURCES = f"{workflow.basedir}/resources"
SEED = int(config["seed"])
RAW = config["data"]["raw_dir"]
PROCESSED = config["data"]["processed_dir"]
USER_DATASETS = config.get("user_datasets") or {}

with open(config["data"]["manifest"]) as _fh:
    MANIFEST = yaml.safe_load(_fh)


# --- cluster requests -------------------------------------------------------------------
# Each rule states its Slurm runtime as needed at the paper's settings (minutes) and its memory
# (MB, measured peak RSS at default scale is below 200 MB for every job).  The requests shrink
# with the scale (a default-scale job runs seconds to minutes; the whole default run takes about
# 35 min on 2 cores) and grow on every retry (`retries:` in workflow/profiles/slurm): a job that
# hit its time or memory limit is resubmitted with twice the time and 1.5x the memory.
RUNTIME_FRACTION = {"smoke": 1 / 48, "default": 1 / 12, "paper": 1}


def runtime_min(paper_minutes):
    """Slurm runtime request (minutes): the paper-scale need x the scale's fraction (>= 5), x 2 per retry."""
    need = max(5, math.ceil(paper_minutes * RUNTIME_FRACTION[WORK_SCALE]))
    return lambda wildcards, attempt: need * 2 ** (attempt - 1)


def mem(mb):
    """Memory request (MB): ``mb`` on the first attempt, x 1.5 per retry."""
    return lambda wildcards, attempt: int(mb * 1.5 ** (attempt - 1))


def manifest_entries():
    """Data-set name -> manifest entry."""
    return MANIFEST.get("datasets", MANIFEST)


def raw_files(name):
    """Raw input files of a data set (vendored or the user's CSV)."""
    if name in USER_DATASETS:
        return [USER_DATASETS[name]["path"]]
    entries = manifest_entries()
    if name not in entries:
        raise ValueError(
            f"unknown data set {name!r}: not in {config['data']['manifest']} "
            f"({sorted(entries)}) nor in config user_datasets ({sorted(USER_DATASETS)})"
        )
    entry = entries[name]
    files = [f"{RAW}/{entry['file']}"]
    # a user who has the paper's original file drops it into data/raw/
    original = entry.get("original_file")
    if original and Path(f"{RAW}/{original}").exists():
        files.append(f"{RAW}/{original}")
    return files


def settings(experiment):
    return scale_block(experiment)


def regression_mh_targets():
    return [f"figures/regression_mh/{ds}_traces.pdf" for ds in RMH["datasets"]] + [
        f"results/regression_mh/{ds}/diagnostics.csv" for ds in RMH["datasets"]
    ]


def claim_files():
    """Every paper's claims file, from the one registry (gpbayes_repro.papers)."""
    from gpbayes_repro import papers

    return [papers.claims_target(p) for p in papers.REGISTRY]


def claim_figures():
    """Experiment key of a claims file -> the figures its claims rest on (links on the claims page)."""
    figs = lambda targets: [t for t in targets if t.endswith((".pdf", ".png", ".svg"))]
    return {
        "foundation": figs(regression_mh_targets()),
        "pm_gpc": figs(pm_gpc_targets() + PM_GPC_CAPACITY_TARGETS),
        "slice_ma": figs(SLICE_MA_TARGETS),
        "sparse_mcmc": figs(SPARSE_MCMC_TARGETS),
        "gplvm": figs(GPLVM_TARGETS),
        "amis": figs(AMIS_TARGETS),
    }


def pm_gpc_targets():
    return [
        "figures/pm_gpc/fig2.pdf",
        "results/pm_gpc/table1.csv",
        "figures/pm_gpc/fig3.pdf",
        "figures/pm_gpc/fig4.pdf",
    ]


def n_blocks(n_chains, chains_per_job):
    return -(-int(n_chains) // int(chains_per_job))


def table_chain_files(table):
    """Chain files of Table I (all schemes) or Table III (its schemes, repeated updates)."""
    tab = config["pm_gpc"]["tables"]
    s = scale_block("pm_gpc.tables")
    if int(table) == 1:
        grid, schemes, n_chains = s, s["schemes"], s["n_chains"]
    else:
        grid, schemes, n_chains = (
            s["table3"],
            tab["table3_schemes"],
            s["table3"]["n_chains"],
        )
    blocks = range(n_blocks(n_chains, s["chains_per_job"]))
    return [
        f"results/pm_gpc/tables/chains/table{table}_n{n}_d{d}_{k}_{sch}_block{b}.nc"
        for n in grid["n"]
        for d in grid["d"]
        for k in grid["kernels"]
        for sch in schemes
        for b in blocks
    ]


def table1_files(pm_chains, schemes="all"):
    """Table I chain files of `schemes` ("all", "pm" or "other"): each PM scheme with `pm_chains` chains, the
    others (AA, SURR) with n_chains (those do not depend on the sequential design: a dry run lists them).
    """
    out = []
    for n in TAB_SET["n"]:
        for d in TAB_SET["d"]:
            for k in TAB_SET["kernels"]:
                for sch in TAB_SET["schemes"]:
                    is_pm = sch.startswith("pm-")
                    if (schemes == "pm" and not is_pm) or (
                        schemes == "other" and is_pm
                    ):
                        continue
                    nc = pm_chains if is_pm else TAB_SET["n_chains"]
                    out += [
                        f"results/pm_gpc/tables/chains/table1_n{n}_d{d}_{k}_{sch}_block{b}.nc"
                        for b in range(n_blocks(nc, TAB_SET["chains_per_job"]))
                    ]
    return out


def ep_la_final_look(wildcards=None):
    """The look at which the design stopped (each look a checkpoint: the next is planned only if needed)."""
    for look in range(len(EP_LA_LOOKS)):
        path = checkpoints.pm_gpc_table1_look.get(look=look).output[0]
        with open(path) as f:
            if json.load(f)["action"] != "continue":
                return look
    return len(EP_LA_LOOKS) - 1


def cap_split_files(dataset, n_splits):
    return expand(
        f"{CAP_DIR}/{dataset}/n{{n}}_split{{k}}.nc",
        n=CAP_SIZES[dataset],
        k=range(n_splits),
    )


def cap_final_look(wildcards=None):
    """The look at which the design stopped (each look a checkpoint: the next is planned only if needed)."""
    for look in range(len(CAP_SPLIT_LOOKS)):
        path = checkpoints.pm_gpc_capacity_look.get(look=look).output[0]
        with open(path) as f:
            if json.load(f)["action"] != "continue":
                return look
    return len(CAP_SPLIT_LOOKS) - 1


def cap_final_split_files(dataset):
    return cap_split_files(dataset, CAP_SPLIT_LOOKS[cap_final_look()])


def real_chain_files(dataset):
    real = config["pm_gpc"]["real"]
    s = scale_block("pm_gpc.real")
    return [
        f"results/pm_gpc/real/chains/{dataset}_{sch}_block{b}.nc"
        for sch in real["schemes"]
        for b in range(n_blocks(s["n_chains"], s["chains_per_job"]))
    ]


def all_targets():
    out = []
    out += regression_mh_targets()
    out += pm_gpc_targets()
    out += PM_GPC_CAPACITY_TARGETS
    out += SLICE_MA_TARGETS
    out += SPARSE_MCMC_TARGETS
    out += GPLVM_TARGETS
    out += AMIS_TARGETS
    out += ["results/claims/claims.html"]
    return out


# --- ma-seq: M&A claims (workflow/rules/slice_ma.smk): the gate plan's and claim 2's checkpoints ---
def sma_fig3_files(dataset, method):
    return [
        f"results/slice/chains/{dataset}_{method}_block{b}.nc"
        for b in range(n_blocks(SMA_SET["n_chains"], SMA_SET["chains_per_job"]))
    ]


def slice_ma_extended(wildcards):
    """The extended groups the gate plan asks for (read once the checkpoint has run)."""
    import json

    with open(checkpoints.slice_ma_gate_plan.get().output[0]) as fh:
        plan = json.load(fh)
    return [f"results/slice/extended/{d}_{m}.nc" for d, m in plan["groups"]]


def slice_ma_draws_final(wildcards):
    """The look that stopped claim 2's design (none when the scale plans no look)."""
    import json

    for look in range(SMA_DRAWS["max_looks"]):
        out = checkpoints.slice_ma_draws_look.get(look=look).output[0]
        with open(out) as fh:
            if json.load(fh)["stop"]:
                return [out]
    return []


# job settings of the decide scale's reused jobs (Snakemake lint: functions live in common.smk; they
# read the globals of pm_gpc.smk and slice_ma.smk at call time)
def table_chain_settings(wildcards):
    """Settings of a table-chain job: the base scale's (its output reused) unless the job reads what the
    run's scale changed.  A Table I PM block reads ep_la_looks only through its cap (the block's chains,
    pm_gpc_mcmc.table_block): the same block under both caps is the same job."""
    ignoring = TAB_LOOK_KEYS
    if int(wildcards.table) == 1 and wildcards.scheme.startswith("pm-"):
        work_cap = work_block("pm_gpc.tables")["ep_la_looks"][-1]
        cap = job_count(
            int(wildcards.block), EP_LA_LOOKS[-1], work_cap, TAB_SET["chains_per_job"]
        )
        if cap != work_cap:
            ignoring = ("ep_la_futility",)
    return without_keys(job_settings("pm_gpc.tables", ignoring), ("ep_la_futility",))


# the keys of the Table I design that only its looks read (no chain or proposal job does)
TAB_LOOK_KEYS = ("ep_la_looks", "ep_la_futility")


def without_keys(d, keys):
    """``d`` less ``keys`` (a job's settings without what only the design's looks read)."""
    return {k: v for k, v in d.items() if k not in keys}


def sma_settings(dataset, block=None):
    """{n_chains, chains_per_job, <dataset>} for a data (block None) or chain-block job: the base
    scale's when the job's work is the same at both scales (the data does not read n_chains; a block
    of the same chains is the same job), so that the base run's output is reused; else the run's.
    """
    run, work = SMA_SET, work_block("slice_ma")
    pick = lambda s, n: {
        "n_chains": n,
        "chains_per_job": s["chains_per_job"],
        dataset: s[dataset],
    }
    if run["chains_per_job"] != work["chains_per_job"] or run[dataset] != work[dataset]:
        return pick(run, run["n_chains"])
    if block is None:
        return pick(work, work["n_chains"])
    return pick(
        run,
        job_count(int(block), run["n_chains"], work["n_chains"], run["chains_per_job"]),
    )


# the Gadd et al. NUTS chain set's files of one case (rules/gplvm.smk; GPLVM_JOINT_NUTS_CASES is set there)
def gplvm_joint_nuts_chains(wildcards):
    """The NUTS set's chain files of a case: none unless the scale lists the case in joint_nuts_cases."""
    if wildcards.case not in GPLVM_JOINT_NUTS_CASES:
        return []
    return expand(
        "results/gplvm/chains_joint_nuts/{case}_block{b}.nc",
        case=wildcards.case,
        b=range(GPLVM_N_BLOCKS),
    )
